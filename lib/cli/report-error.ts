/**
 * The one place where a failed command's error becomes its message and
 * exit code (CONTRACT §4).
 */
import type { CommanderError } from 'commander'
import { isPodctlError, type PodctlError } from '../errors.js'
import type { Context, RunState } from './context.js'
import { sourceMappedStack } from './debug-stack.js'
import { describeFailure, isResourceError } from '../fs/errors.js'
import { isJson, type Io } from './output.js'

const errorJson = (code: string, message: string): string => `${JSON.stringify({ error: { code, message } })}\n`

/** Prints a usage error (commander has printed its message) and returns exit code 2. */
export const reportUsageError = (er: CommanderError, state: RunState, io: Io): number => {
  if (isJson(state.format)) io.err(errorJson('EUSAGE', er.message.replace(/^error: /, '')))
  if (state.debug && er.stack) io.err(`${sourceMappedStack(er.stack)}\n`)
  return 2
}

/** Prints an expected failure: the message, the hint, JSON with --format json, the stack with --debug. */
const printPodctlError = (er: PodctlError, state: RunState, io: Io): void => {
  io.err(`podctl: ${er.message}\n${er.hint ? `${er.hint}\n` : ''}`)
  if (isJson(state.format)) io.err(errorJson(er.code, er.message))
  if (state.debug && er.stack) io.err(`${sourceMappedStack(er.stack)}\n`)
}

/** Prints an error thrown by a command and returns its exit code. */
export const reportError = (er: unknown, state: RunState, io: Io): number => {
  if (isPodctlError(er)) {
    printPodctlError(er, state, io)
    return er.exitCode
  }
  // A machine out of something is not a bug: what and where, and what to do.
  if (isResourceError(er)) {
    const e = er as NodeJS.ErrnoException & { dest?: string }
    const described = describeFailure(er, [e.syscall, e.path, e.dest].filter(Boolean).join(' ') || 'podctl')
    if (isPodctlError(described)) {
      printPodctlError(described, state, io)
      return described.exitCode
    }
  }
  // A bug: show everything we know.
  const message = er instanceof Error ? er.message : String(er)
  io.err(`podctl: ${message}\n`)
  if (isJson(state.format)) io.err(errorJson('EFAILED', message))
  if (er instanceof Error && er.stack) io.err(`${state.debug ? sourceMappedStack(er.stack) : 'run again with --debug for the stack trace'}\n`)
  return 1
}

/**
 * Runs `fn` for each argument and prints, in argument order, what each
 * returns (on stdout) or the PodctlError it throws (on stderr): a bad
 * argument is reported and the others still done, as rkt's rm does, and
 * the exit code is the first failure's. Other errors are bugs and end the
 * command. `concurrent`: all at once (a slow pod does not delay the
 * others), still reported in argument order.
 */
export const forEachArgument = async <T>(
  ctx: Context,
  args: readonly T[],
  fn: (arg: T, index: number) => string | void | Promise<string | void>,
  opts: { concurrent?: boolean; onDone?: (done: number) => void } = {},
): Promise<void> => {
  let firstFailure: number | undefined
  let done = 0
  const report = (outcome: string | void | PodctlError): void => {
    if (isPodctlError(outcome)) {
      printPodctlError(outcome, ctx.state, ctx.io)
      firstFailure ??= outcome.exitCode
    } else if (outcome) ctx.io.out(outcome)
  }
  const attempt = async (arg: T, i: number): Promise<string | void | PodctlError> => {
    try {
      return await fn(arg, i)
    } catch (er) {
      if (isPodctlError(er)) return er
      throw er
    } finally {
      opts.onDone?.(++done)
    }
  }
  if (opts.concurrent) {
    for (const outcome of await Promise.all(args.map(attempt))) report(outcome)
  } else {
    for (const [i, arg] of args.entries()) report(await attempt(arg, i))
  }
  if (firstFailure !== undefined) ctx.state.exitCode = firstFailure
}
