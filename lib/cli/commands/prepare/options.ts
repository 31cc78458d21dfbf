/** The options of podctl prepare, as commander hands them to its action. */
import type { PodInputOptions } from '../../options.js'

export interface PrepareOptions extends PodInputOptions {
  /** The UUID only: all prepare prints anyway. */
  quiet?: boolean
}
