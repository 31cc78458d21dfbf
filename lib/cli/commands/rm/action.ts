/** What `podctl rm` does. */
import { PodctlError, isPodctlError } from '../../../errors.js'
import { dataDirExists } from '../../../pod/layout.js'
import { removePod } from '../../../pod/gc.js'
import { podFromUUIDString, type Pod } from '../../../pod/pod.js'
import { podFromArg } from '../../../pod/find.js'
import type { PodState } from '../../../pod/state.js'
import { Include, listPods } from '../../../pod/walk.js'
import { readUUIDFromFile } from '../../../pod/uuid.js'
import { stopPod } from '../../../run/stop.js'
import { podTeardown } from '../../../runtime/pod-runtime.js'
import { releaseDeadNetworks } from '../../../runtime/pod-network.js'
import type { Context } from '../../context.js'
import { progressReporter } from '../../output.js'
import { forEachArgument } from '../../report-error.js'
import type { RmOptions } from './options.js'

/** States in which a live process works on the pod: --all leaves them alone (rm of one names why). */
const BUSY: ReadonlySet<PodState> = new Set(['running', 'preparing', 'deleting', 'exited deleting', 'embryo'])

/** The pods `rm --all` removes: every one no live process is working on (with --force, running ones too, as podman's rm -af). */
const idlePods = (dataDir: string, running: boolean): string[] => {
  if (!dataDirExists(dataDir)) return []
  return listPods(dataDir, Include.all).flatMap((p) => {
    const idle = !BUSY.has(p.state) || (running && p.state === 'running')
    p.close()
    return idle ? [p.uuid] : []
  })
}

/** The pod again, or undefined once it is gone. */
const reopen = (dataDir: string, uuid: string): Pod | undefined => {
  try {
    return podFromUUIDString(dataDir, uuid)
  } catch (er) {
    if (isPodctlError(er) && er.code === 'ENOPOD') return undefined
    throw er
  }
}

/** Removes each pod (its volumes and its apps' image roots torn down first), printing its UUID; goes past a bad one. */
export const rm = async (ctx: Context, dataDir: string, uuids: string[], opts: RmOptions): Promise<void> => {
  const args = [...uuids]
  if (opts.uuidFile !== undefined) args.push(readUUIDFromFile(opts.uuidFile))
  if (opts.all) args.push(...idlePods(dataDir, opts.force === true))
  const pods = [...new Set(args)]
  if (pods.length === 0) {
    if (opts.all) return // nothing to remove is not a failure
    throw new PodctlError('EUSAGE', 'no pod given', 'usage: podctl rm UUID... [--uuid-file FILE] [--all]')
  }
  const progress = progressReporter(ctx.io, 'rm', true)
  const teardown = podTeardown(dataDir)
  // What dead pods left on their networks goes first: their records name them, not their directories.
  await releaseDeadNetworks(dataDir)
  await forEachArgument(
    { ...ctx, io: progress.io },
    pods,
    async (arg) => {
      let pod = podFromArg(dataDir, arg)
      if (opts.force && pod.state === 'running') {
        await stopPod(pod, { force: true, timeoutMs: 0 })
        const again = reopen(dataDir, pod.uuid)
        // A pod of `run --rm` is removed by its supervisor once it has exited.
        if (again === undefined) return `${pod.uuid}\n`
        pod = again
        await releaseDeadNetworks(dataDir)
      }
      removePod(pod, teardown)
      return `${pod.uuid}\n`
    },
    { onDone: (done) => progress.report(done, pods.length) },
  )
  progress.finish()
}
