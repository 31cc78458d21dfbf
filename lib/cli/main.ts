/**
 * The podctl program: commander setup, and the one place where errors
 * become exit codes and messages (CONTRACT §4).
 */
import { Command, CommanderError, Option } from 'commander'
import type { Context, RunState } from './context.js'
import { processIo, type Io } from './output.js'
import { reportError, reportUsageError } from './report-error.js'
import { podctlVersion } from './version-info.js'
import { registerApp } from './commands/app.js'
import { registerCatManifest } from './commands/cat-manifest.js'
import { registerGc } from './commands/gc.js'
import { registerList } from './commands/list.js'
import { registerLogs } from './commands/logs.js'
import { registerPrepare } from './commands/prepare.js'
import { registerRm } from './commands/rm.js'
import { registerRun } from './commands/run.js'
import { registerRunPrepared } from './commands/run-prepared.js'
import { registerStatus, splitWaitValues } from './commands/status.js'
import { registerStop } from './commands/stop.js'
import { registerVersion } from './commands/version.js'

/** Builds the program. exitOverride is set before subcommands so they copy it. */
export const buildProgram = (ctx: Context): Command => {
  const program = new Command('podctl')
  program
    .description('podctl: a daemonless pod lifecycle manager (rkt-style pods for Node.js)')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => ctx.io.out(s),
      writeErr: (s) => ctx.io.err(s),
      outputError: (s, write) => write(`podctl: ${s.replace(/^error: /, '')}`),
    })
    .showSuggestionAfterError(true)
    .addOption(new Option('--dir <path>', 'data dir (default: $PODCTL_DIR, /var/lib/podctl as root, else $XDG_DATA_HOME/podctl)'))
    .option('--debug', 'show stack traces and timings on stderr')
    .version(podctlVersion(), '--version', 'print the podctl version')
    .helpCommand(true)
    .addHelpText(
      'after',
      `
Examples:
  $ podctl prepare -- sleep 60          # prints the new pod's UUID
  $ podctl list
  $ podctl status 8c3b1f0e --format json
  $ podctl gc --grace-period 0s

Documentation: Documentation/subcommands/<command>.md`,
    )
  registerPrepare(program, ctx)
  registerRun(program, ctx)
  registerRunPrepared(program, ctx)
  registerList(program, ctx)
  registerStatus(program, ctx)
  registerStop(program, ctx)
  registerLogs(program, ctx)
  registerRm(program, ctx)
  registerGc(program, ctx)
  registerApp(program, ctx)
  registerCatManifest(program, ctx)
  registerVersion(program, ctx)
  return program
}

// The --format a command line asks for, for errors raised before the
// command's own parsing got to it.
const formatInArgv = (argv: string[]): string | undefined => {
  for (const [i, a] of argv.entries()) {
    if (a === '--') break
    if (a === '--format') return argv[i + 1]
    if (a.startsWith('--format=')) return a.slice('--format='.length)
  }
  return undefined
}

/** Runs podctl with `argv` (without node and script); returns the exit code. */
export const main = async (argv: string[], io: Io = processIo()): Promise<number> => {
  const started = performance.now()
  const state: RunState = { exitCode: 0, debug: argv.includes('--debug'), format: formatInArgv(argv) }
  const ctx: Context = { io, state }
  try {
    await buildProgram(ctx).parseAsync(splitWaitValues(argv), { from: 'user' })
    return state.exitCode
  } catch (er) {
    if (er instanceof CommanderError) {
      if (er.exitCode === 0) return 0 // --help, --version
      return reportUsageError(er.message, state, io)
    }
    return reportError(er, state, io)
  } finally {
    if (state.debug) io.err(`podctl: took ${(performance.now() - started).toFixed(1)} ms\n`)
  }
}
