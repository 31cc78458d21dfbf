/**
 * What every command needs besides its own options: the output streams,
 * and where to put its exit code and what the error reporting must know.
 */
import type { Io } from './output.js'

export interface RunState {
  /** The exit code the command asks for (errors thrown override it). */
  exitCode: number
  /** The --format in effect, so that errors can be printed as JSON too. */
  format?: string
  /** --debug: stack traces and timings on stderr. */
  debug: boolean
}

export interface Context {
  io: Io
  state: RunState
}
