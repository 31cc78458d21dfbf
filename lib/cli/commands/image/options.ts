/** The options of the image subcommands (import and pull: ./import/options.ts), as commander hands them to their actions. */
import type { FormatOptions, LegendOptions } from '../../output.js'

export interface ImageListOptions extends LegendOptions {
  format: string
  quiet?: boolean
}

export interface ImageRmOptions {
  force?: boolean
}

export type ImageInspectOptions = FormatOptions

export type ImagePruneOptions = FormatOptions
