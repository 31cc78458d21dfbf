/** Making a prepared pod running: the shared part of run-prepared, foreground or detached. */
import { PodChangedStateError, shortId } from '../errors.js'
import type { PodManifest } from '../pod/manifest.js'
import type { Pod } from '../pod/pod.js'
import { bindPodClaims, withPodFleet, type EnsureBoundOptions } from '../storage/pod-claims.js'
import { setUpPodVolumes } from '../volume/pod-volumes.js'
import { podIds } from '../runtime/userns.js'
import { imageAppOwners } from '../runtime/image-apps.js'
import { checkOpenFiles } from './budget.js'

/**
 * Moves a prepared pod to run/ under its lock, its volumes set up first.
 * The loser of a race (the pod is being run by another process, or is
 * gone) gets a PodChangedStateError saying so.
 */
export const startPrepared = async (pod: Pod, claims: EnsureBoundOptions = {}): Promise<{ pod: Pod; manifest: PodManifest }> => {
  // The lock comes first: before it the pod may be run or removed by
  // someone else, after it the pod (and its manifest) is ours.
  let manifest: PodManifest | undefined
  try {
    // A loser of the race may see the winner's pod as running already, or
    // lose at the lock or the rename: one message either way.
    if (pod.state === 'running') throw new PodChangedStateError(pod.uuid)
    if (pod.dir === 'prepared' && !pod.tryExclusiveLock()) throw new PodChangedStateError(pod.uuid)
    // Volumes are set up before the pod runs, so that a refused claim
    // (exit 4) leaves the pod prepared (lib/volume/pod-volumes.ts).
    if (pod.holdsLock) manifest = await setUpVolumes(pod, claims)
    pod.toRun()
  } catch (er) {
    if (er instanceof PodChangedStateError) {
      throw new PodChangedStateError(pod.uuid, `pod ${pod.uuid} is already running (or gone)`, `see podctl status ${shortId(pod.uuid)}`)
    }
    throw er
  }
  return { pod, manifest: manifest ?? pod.podManifest().manifest }
}

/** Sets up the volumes of a pod this process holds locked; unlocks it if that fails. */
const setUpVolumes = async (pod: Pod, claims: EnsureBoundOptions): Promise<PodManifest> => {
  try {
    const { manifest } = pod.podManifest()
    checkOpenFiles(manifest)
    await withPodFleet(pod.dataDir, manifest, claims, (fleet) => bindPodClaims(pod, manifest, claims, fleet))
    setUpPodVolumes(pod, manifest, undefined, undefined, { shift: podIds(manifest).shift, apps: await imageAppOwners(pod.dataDir, manifest) })
    return manifest
  } catch (er) {
    pod.unlock()
    throw er
  }
}
