/**
 * What bin/podctl runs. Every podctl command pays Node's start-up, so the
 * cheapest answers come first: the plain forms of `podctl version` are
 * printed before commander and the pod core are imported, and the plain
 * forms of `podctl list` (what scripts run in loops) skip commander and
 * the registration of every command (about 30 ms on Node 20); everything
 * else goes through the full program.
 */
import type { ListOptions } from './list-output.js'
import type { RunOptions } from './run-action.js'
import { plainVersionRequest } from './version-info.js'

// A reader that stops early (`podctl list | head`) closes the pipe; Node
// ignores SIGPIPE and reports EPIPE on stdout instead. What was asked for
// has been read, so end quietly, as a tool killed by SIGPIPE would.
const quietOnClosedPipe = (stream: NodeJS.WriteStream): void => {
  stream.on('error', (er: NodeJS.ErrnoException) => {
    if (er.code !== 'EPIPE') throw er
    process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0)
  })
}

/** Runs podctl with `argv` (without node and script); returns the exit code. */
export const run = async (argv: string[]): Promise<number> => {
  quietOnClosedPipe(process.stdout)
  const version = plainVersionRequest(argv)
  if (version !== undefined) {
    process.stdout.write(version)
    return 0
  }
  const [{ plainListRequest }, { plainRunRequest }] = await Promise.all([import('./list-output.js'), import('./run-action.js')])
  const list = plainListRequest(argv)
  if (list) return runPlainList(list.dir, list.opts)
  const run = plainRunRequest(argv)
  if (run) return runPlainRun(run.dir, run.opts, run.command)
  const { main } = await import('./main.js')
  return main(argv)
}

const runPlainList = async (dir: string | undefined, opts: ListOptions): Promise<number> => {
  const [{ listOutput }, { resolveDataDir }, { processIo }, { reportError }] = await Promise.all([
    import('./list-output.js'),
    import('../pod/layout.js'),
    import('./output.js'),
    import('./report-error.js'),
  ])
  const io = processIo()
  try {
    io.out(await listOutput(resolveDataDir(dir), opts))
    return 0
  } catch (er) {
    return reportError(er, { exitCode: 0, debug: false, format: opts.format }, io)
  }
}

const runPlainRun = async (dir: string | undefined, opts: RunOptions, command: string[]): Promise<number> => {
  const [{ runAction }, { resolveDataDir }, { processIo }, { reportError }] = await Promise.all([
    import('./run-action.js'),
    import('../pod/layout.js'),
    import('./output.js'),
    import('./report-error.js'),
  ])
  const ctx = { io: processIo(), state: { exitCode: 0, debug: false } }
  try {
    await runAction(ctx, resolveDataDir(dir), command, opts)
    return ctx.state.exitCode
  } catch (er) {
    return reportError(er, ctx.state, ctx.io)
  }
}
