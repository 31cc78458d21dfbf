/** `podctl run [--detach] -- CMD...` for the plain command lines of lib/cli/fast-paths.ts, without commander. */
import type { PlainRunRequest } from './fast-paths.js'
import { runAction } from './run-action.js'
import { withoutCommander } from './without-commander.js'

/** Runs the pod `request` names; returns the exit code. */
export const runPlainRun = (request: PlainRunRequest): Promise<number> =>
  withoutCommander(request.dir, undefined, (ctx, dataDir) => runAction(ctx, dataDir, request.command, request.opts))
