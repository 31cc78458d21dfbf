/** What `podctl run-prepared` does: a prepared pod, run in the foreground or detached (lib/cli/run-pod.ts). */
import type { PodManifest } from '../../../pod/manifest.js'
import type { Pod } from '../../../pod/pod.js'
import { podFromArg } from '../../../pod/find.js'
import { runDetached } from '../../../run/detach.js'
import { startPrepared } from '../../../run/start.js'
import type { FleetRef } from '../../../storage/pod-claims.js'
import type { Context } from '../../context.js'
import { claimWait, detachedClaims, ownFailureIs125, refuseTerminalWithoutOne, supervise } from '../../run-pod.js'
import type { RunPreparedOptions } from './options.js'

const manifestOrUndefined = (pod: Pod): PodManifest | undefined => {
  try {
    return pod.podManifest().manifest
  } catch {
    return undefined
  }
}

/** podctl run-prepared: run a prepared pod. */
export const runPrepared = async (ctx: Context, dataDir: string, uuid: string, opts: RunPreparedOptions, fleet?: FleetRef): Promise<void> => {
  const pod = podFromArg(dataDir, uuid)
  if (opts.detach) {
    ctx.io.out(`${await runDetached({ dataDir, uuid: pod.uuid, ...detachedClaims(opts), ...(fleet ? { fleet } : {}) })}\n`)
    return
  }
  // Only a pod that can run is asked: another state, or a damaged manifest, has its own refusal in startPrepared.
  refuseTerminalWithoutOne(() => (pod.state === 'prepared' ? manifestOrUndefined(pod) : undefined))
  const started = await ownFailureIs125(async () => startPrepared(pod, claimWait(ctx, opts.timeout, fleet, opts.provisionersDir)))
  ctx.state.exitCode = await supervise(ctx.io, started.pod, started.manifest)
}
