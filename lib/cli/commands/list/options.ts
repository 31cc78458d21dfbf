/** The options of podctl list, as commander hands them to its action. */
import type { LegendOptions } from '../../output.js'

export interface ListOptions extends LegendOptions {
  format: string
  full?: boolean
  state?: string[]
  /** KEY=VALUE[,KEY=VALUE...]: state, name, app (repeatable). */
  filter?: string[]
  sort?: 'created' | 'name' | 'state'
  /** UUIDs only, one per line. */
  quiet?: boolean
}
