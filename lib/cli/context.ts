/**
 * What every command needs besides its own options: the data dir, the
 * output streams, and where to put its exit code.
 */
import type { Command } from 'commander'
import { resolveDataDir } from '../pod/layout.js'
import type { Format, Io } from './output.js'

export interface RunState {
  /** The exit code the command asks for (errors thrown override it). */
  exitCode: number
  /** The --format in effect, so that errors can be printed as JSON too. */
  format?: Format | string
  debug: boolean
}

export interface Context {
  io: Io
  state: RunState
}

export interface GlobalOptions {
  dir?: string
  debug?: boolean
}

/** The data dir the command works on (CONTRACT §1 resolution order). */
export const dataDirOf = (cmd: Command): string => resolveDataDir((cmd.optsWithGlobals() as GlobalOptions).dir)

/** Parses and checks the --format option of a command. */
export const FORMATS = ['table', 'json', 'json-pretty'] as const
