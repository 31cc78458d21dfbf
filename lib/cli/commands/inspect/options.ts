/** The options of podctl inspect, as commander hands them to its action. */
import type { FormatOptions } from '../../output.js'

export type InspectOptions = FormatOptions
