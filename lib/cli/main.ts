/**
 * What bin/podctl runs: parse the command line, run the command, and turn
 * its outcome into an exit code and messages (CONTRACT §4), in this one
 * place.
 */
import { CommanderError } from 'commander'
import type { Context } from './context.js'
import { keepInspectorClosed } from '../proc/inspector.js'
import { processIo, type Io } from './output.js'
import { buildProgram } from './program.js'
import { reportError, reportUsageError } from './report-error.js'

/** Runs podctl with `argv` (without node and script); returns the exit code. */
export const main = async (argv: string[], io: Io = processIo()): Promise<number> => {
  // process.hrtime, not performance.now(): the global performance loads perf_hooks.
  const started = process.hrtime.bigint()
  keepInspectorClosed()
  const ctx: Context = { io, state: { exitCode: 0, debug: false } }
  try {
    await buildProgram(ctx).parseAsync(argv, { from: 'user' })
    return ctx.state.exitCode
  } catch (er) {
    if (er instanceof CommanderError) return er.exitCode === 0 ? 0 : reportUsageError(er, ctx.state, io)
    return reportError(er, ctx.state, io)
  } finally {
    if (ctx.state.debug) io.err(`podctl: took ${(Number(process.hrtime.bigint() - started) / 1e6).toFixed(1)} ms\n`)
  }
}
