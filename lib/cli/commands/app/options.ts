/** The options of the app subcommands, as commander hands them to their actions. */
import type { FormatOptions, LegendOptions } from '../../output.js'

export interface AppSandboxOptions {
  name?: string
  detach?: boolean
  uuidFileSave?: string
}

export interface AppAddOptions {
  name: string
  ephemeral?: boolean
  env?: string[]
}

export interface AppStopOptions {
  /** ms between SIGTERM and SIGKILL. */
  timeout: number
}

export type AppListOptions = FormatOptions & LegendOptions

export type AppStatusOptions = FormatOptions
