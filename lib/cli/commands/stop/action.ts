/** What `podctl stop` does. */
import { PodctlError } from '../../../errors.js'
import { podFromArg } from '../../../pod/find.js'
import { readUUIDFromFile } from '../../../pod/uuid.js'
import { stopPod } from '../../../run/stop.js'
import { releasePodNetworks } from '../../../runtime/pod-network.js'
import type { Context } from '../../context.js'
import { waitingLine } from '../../output.js'
import { forEachArgument } from '../../report-error.js'
import type { StopOptions } from './options.js'

/** Stops the pods all at once, and reports each (UUID, or why not) in argument order. */
export const stop = async (ctx: Context, dataDir: string, uuids: string[], opts: StopOptions): Promise<void> => {
  const args = [...uuids]
  if (opts.uuidFile !== undefined) args.push(readUUIDFromFile(opts.uuidFile))
  if (args.length === 0) throw new PodctlError('EUSAGE', 'no pod given', 'usage: podctl stop UUID... [--uuid-file FILE]')
  // One status line for all the pods stopped at once: the latest step.
  const waiting = waitingLine(ctx.io)
  try {
    return await forEachArgument(
      { ...ctx, io: waiting.io },
      args,
      async (arg) => {
        const pod = podFromArg(dataDir, arg)
        await stopPod(pod, { force: opts.force === true, timeoutMs: opts.timeout, onStep: waiting.set })
        // A supervisor that was killed left its networks: stop is the next command to find the pod.
        await releasePodNetworks(dataDir, pod.uuid)
        return `${pod.uuid}\n`
      },
      { concurrent: true },
    )
  } finally {
    waiting.finish()
  }
}
