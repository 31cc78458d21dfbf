/** What `podctl stop` does. */
import { podFromUUIDString } from '../../pod/pod.js'
import { stopPod } from '../../run/stop.js'
import type { Context } from '../context.js'
import { forEachArgument } from '../report-error.js'

/** Stops the pods all at once, and reports each (UUID, or why not) in argument order. */
export const stop = async (ctx: Context, dataDir: string, uuids: string[], opts: { force?: boolean; timeout: number }): Promise<void> =>
  forEachArgument(
    ctx,
    uuids,
    async (arg) => {
      const pod = podFromUUIDString(dataDir, arg)
      await stopPod(pod, { force: opts.force === true, timeoutMs: opts.timeout })
      return `${pod.uuid}\n`
    },
    { concurrent: true },
  )
