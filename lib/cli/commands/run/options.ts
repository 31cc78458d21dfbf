/** The options of podctl run, as commander hands them to its action. */
import type { PodInputOptions } from '../../options.js'

export interface RunOptions extends PodInputOptions {
  detach?: boolean
  /** With --detach: the UUID only. */
  quiet?: boolean
  /** ms to wait for a controller to bind the pod's claims. */
  timeout?: number
  provisionersDir?: string
}
