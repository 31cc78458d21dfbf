/** The options of the `podctl network` subcommands, as commander hands them to their actions. */
import type { FormatOptions, LegendOptions } from '../../output.js'

/** Where the CNI plugins and the operator's conflists are (every network subcommand takes them). */
export interface CniDirOptions {
  cniPluginDir?: string
  cniConfigDir?: string
}

export interface NetworkCreateOptions extends CniDirOptions, FormatOptions {
  subnet?: string
  gateway?: string
  internal?: boolean
  driver: string
  opt?: string[]
}

export interface NetworkListOptions extends CniDirOptions, LegendOptions, FormatOptions {
  quiet?: boolean
}

export interface NetworkInspectOptions extends CniDirOptions, FormatOptions {}

export type NetworkRmOptions = CniDirOptions

export interface NetworkPruneOptions extends CniDirOptions, FormatOptions {}
