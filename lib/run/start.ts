/** Making a prepared pod running: the shared part of run-prepared, foreground or detached. */
import { PodChangedStateError } from '../errors.js'
import type { PodManifest } from '../pod/manifest.js'
import type { Pod } from '../pod/pod.js'
import { setUpPodVolumes } from '../volume/pod-volumes.js'

/**
 * Moves a prepared pod to run/ under its lock. The loser of a race (the pod
 * is being run by another process, or is gone) gets a PodChangedStateError
 * saying so.
 */
export const startPrepared = (pod: Pod): { pod: Pod; manifest: PodManifest } => {
  const { manifest } = pod.podManifest()
  try {
    // Volumes are set up under the pod's lock before it runs, so that a
    // refused claim (exit 4) leaves the pod prepared.
    if (manifest.volumes?.length && pod.dir === 'prepared') {
      if (!pod.tryExclusiveLock()) throw new PodChangedStateError(pod.uuid)
      try {
        setUpPodVolumes(pod, manifest)
      } catch (er) {
        pod.unlock()
        throw er
      }
    }
    pod.toRun()
  } catch (er) {
    if (er instanceof PodChangedStateError) {
      throw new PodChangedStateError(pod.uuid, `pod ${pod.uuid} is already running (or gone)`, `see podctl status ${pod.uuid.slice(0, 8)}`)
    }
    throw er
  }
  return { pod, manifest }
}
