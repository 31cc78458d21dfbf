/** What `podctl rm` does. */
import { PodctlError } from '../../errors.js'
import { removePod } from '../../pod/gc.js'
import { podFromUUIDString, readUUIDFromFile } from '../../pod/pod.js'
import { tearDownPodVolumes } from '../../volume/pod-volumes.js'
import type { Context } from '../context.js'
import { progressReporter } from '../output.js'
import { forEachArgument } from '../report-error.js'

/** Removes each pod (its volumes torn down first), printing its UUID; goes past a bad one. */
export const rm = async (ctx: Context, dataDir: string, uuids: string[], opts: { uuidFile?: string }): Promise<void> => {
  const args = [...uuids]
  if (opts.uuidFile !== undefined) args.push(readUUIDFromFile(opts.uuidFile))
  if (args.length === 0) throw new PodctlError('EUSAGE', 'no pod given', 'usage: podctl rm UUID... [--uuid-file FILE]')
  const progress = progressReporter(ctx.io, 'rm', true)
  await forEachArgument(
    ctx,
    args,
    (arg) => {
      const pod = podFromUUIDString(dataDir, arg)
      removePod(pod, tearDownPodVolumes)
      return `${pod.uuid}\n`
    },
    { onDone: (done) => progress.report(done, args.length) },
  )
  progress.finish()
}
