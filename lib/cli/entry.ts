/**
 * What bin/podctl runs. Every podctl command pays Node's start-up, so the
 * cheapest answers come first: the plain forms of `podctl version` are
 * printed before commander and the pod core are imported, and the plain
 * forms of `list` and `run -- CMD` (lib/cli/fast-paths.ts) skip commander
 * and the command table; everything else goes through the full program.
 */
import type { Context } from './context.js'
import { plainListRequest, plainRunRequest } from './fast-paths.js'
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
  const list = plainListRequest(argv)
  if (list) {
    return withoutCommander(list.dir, list.opts.format, async (ctx, dataDir) => {
      const { listOutput } = await import('./list-output.js')
      ctx.io.out(await listOutput(dataDir, list.opts))
    })
  }
  const runRequest = plainRunRequest(argv)
  if (runRequest) {
    return withoutCommander(runRequest.dir, undefined, async (ctx, dataDir) => {
      const { runAction } = await import('./run-action.js')
      await runAction(ctx, dataDir, runRequest.command, runRequest.opts)
    })
  }
  const { main } = await import('./main.js')
  return main(argv)
}

/** Runs a recognized command line, reporting errors exactly as main.ts does. */
const withoutCommander = async (
  dir: string | undefined,
  format: string | undefined,
  fn: (ctx: Context, dataDir: string) => Promise<void>,
): Promise<number> => {
  const [{ resolveDataDir }, { processIo }, { reportError }] = await Promise.all([
    import('../pod/layout.js'),
    import('./output.js'),
    import('./report-error.js'),
  ])
  const ctx: Context = { io: processIo(), state: { exitCode: 0, debug: false, ...(format !== undefined ? { format } : {}) } }
  try {
    await fn(ctx, resolveDataDir(dir))
    return ctx.state.exitCode
  } catch (er) {
    return reportError(er, ctx.state, ctx.io)
  }
}
