/**
 * The podctl program: commander setup, and the one place where errors
 * become exit codes and messages (CONTRACT §4).
 */
import { Command, CommanderError, Option } from 'commander'
import type { Context, RunState } from './context.js'
import { processIo, type Io } from './output.js'
import { reportError, reportUsageError } from './report-error.js'
import { podctlVersion } from './version-info.js'

type Register = (program: Command, ctx: Context) => void

// Every command, in the order `podctl --help` lists them, loaded on demand:
// a command line that names one command loads only that one (ESM modules
// cost about a millisecond each to load, and every podctl run pays it).
const COMMANDS: readonly (readonly [string, () => Promise<Register>])[] = [
  ['prepare', async () => (await import('./commands/prepare.js')).registerPrepare],
  ['run', async () => (await import('./commands/run.js')).registerRun],
  ['run-prepared', async () => (await import('./commands/run-prepared.js')).registerRunPrepared],
  ['list', async () => (await import('./commands/list.js')).registerList],
  ['status', async () => (await import('./commands/status.js')).registerStatus],
  ['stop', async () => (await import('./commands/stop.js')).registerStop],
  ['logs', async () => (await import('./commands/logs.js')).registerLogs],
  ['rm', async () => (await import('./commands/rm.js')).registerRm],
  ['gc', async () => (await import('./commands/gc.js')).registerGc],
  ['app', async () => (await import('./commands/app.js')).registerApp],
  ['cat-manifest', async () => (await import('./commands/cat-manifest.js')).registerCatManifest],
  ['volume', async () => (await import('./commands/volume.js')).registerVolume],
  ['version', async () => (await import('./commands/version.js')).registerVersion],
]

/** The subcommand a command line names (its first word that is not an option), if any. */
export const commandWord = (argv: readonly string[]): string | undefined => {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '--') return undefined
    if (a === '--dir') i++ // the one global option with a separate value
    else if (!a.startsWith('-')) return a
  }
  return undefined
}

/**
 * Builds the program with every command, or with only `only` when it is a
 * known command. exitOverride is set before subcommands so they copy it.
 */
export const buildProgram = async (ctx: Context, only?: string): Promise<Command> => {
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
  const wanted = COMMANDS.filter(([name]) => name === only)
  const registers = await Promise.all((wanted.length > 0 ? wanted : COMMANDS).map(([, load]) => load()))
  for (const register of registers) register(program, ctx)
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
    const only = commandWord(argv)
    const program = await buildProgram(ctx, only)
    const args = only === 'status' ? (await import('./commands/status.js')).splitWaitValues(argv) : argv
    await program.parseAsync(args, { from: 'user' })
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
