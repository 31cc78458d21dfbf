/**
 * The one place where a failed command's error becomes its message and
 * exit code (CONTRACT §4). Free of commander, so that the fast paths of
 * lib/cli/without-commander.ts report errors exactly as the full program does.
 */
import { PodctlError } from '../errors.js'
import type { RunState } from './context.js'
import { isJson, type Io } from './output.js'

const errorJson = (code: string, message: string): string => `${JSON.stringify({ error: { code, message } })}\n`

/** Prints a usage error (commander's) and returns exit code 2. */
export const reportUsageError = (message: string, state: RunState, io: Io): number => {
  if (isJson(state.format)) io.err(errorJson('EUSAGE', message.replace(/^error: /, '')))
  return 2
}

/** Prints an error thrown by a command and returns its exit code. */
export const reportError = (er: unknown, state: RunState, io: Io): number => {
  if (er instanceof PodctlError) {
    io.err(`podctl: ${er.message}\n${er.hint ? `${er.hint}\n` : ''}`)
    if (isJson(state.format)) io.err(errorJson(er.code, er.message))
    if (state.debug && er.stack) io.err(`${er.stack}\n`)
    return er.exitCode
  }
  // A bug: show everything we know.
  io.err(`podctl: ${er instanceof Error ? er.message : String(er)}\n`)
  if (isJson(state.format)) io.err(errorJson('EFAILED', er instanceof Error ? er.message : String(er)))
  if (er instanceof Error && er.stack) io.err(`${state.debug ? er.stack : 'run again with --debug for the stack trace'}\n`)
  return 1
}
