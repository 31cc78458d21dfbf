/** `podctl list` for the plain command lines of lib/cli/fast-paths.ts, without commander. */
import type { PlainListRequest } from './fast-paths.js'
import { listOutput } from './list-output.js'
import { withoutCommander } from './without-commander.js'

/** Lists the pods as `request` asks; returns the exit code. */
export const runPlainList = (request: PlainListRequest): Promise<number> =>
  withoutCommander(request.dir, request.opts.format, async (ctx, dataDir) => {
    ctx.io.out(await listOutput(dataDir, request.opts))
  })
