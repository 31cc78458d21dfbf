/**
 * The runner behind the fast paths (lib/cli/fast-list.ts,
 * lib/cli/fast-run.ts): a command line that lib/cli/fast-paths.ts
 * recognized runs with the same context and the same error reporting as
 * under commander (lib/cli/main.ts), without loading commander.
 */
import type { Context } from './context.js'
import { resolveDataDir } from '../pod/layout.js'
import { processIo } from './output.js'
import { reportError } from './report-error.js'

/** Runs `fn` for a recognized command line; returns the exit code. */
export const withoutCommander = async (
  dir: string | undefined,
  format: string | undefined,
  fn: (ctx: Context, dataDir: string) => Promise<void>,
): Promise<number> => {
  const ctx: Context = { io: processIo(), state: { exitCode: 0, debug: false, ...(format !== undefined ? { format } : {}) } }
  try {
    await fn(ctx, resolveDataDir(dir))
    return ctx.state.exitCode
  } catch (er) {
    return reportError(er, ctx.state, ctx.io)
  }
}
