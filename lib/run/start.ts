/** Making a prepared pod running: the shared part of run-prepared, foreground or detached. */
import { PodChangedStateError } from '../errors.js'
import type { PodManifest } from '../pod/manifest.js'
import type { Pod } from '../pod/pod.js'

/**
 * Moves a prepared pod to run/ under its lock. The loser of a race (the pod
 * is being run by another process, or is gone) gets a PodChangedStateError
 * saying so.
 */
export const startPrepared = (pod: Pod): { pod: Pod; manifest: PodManifest } => {
  // The move comes first: before it the pod may be run or removed by
  // someone else, after it the pod (and its manifest) is ours.
  try {
    // A loser of the race may see the winner's pod as running already, or
    // lose at the rename: one message either way.
    if (pod.state === 'running') throw new PodChangedStateError(pod.uuid)
    pod.toRun()
  } catch (er) {
    if (er instanceof PodChangedStateError) {
      throw new PodChangedStateError(pod.uuid, `pod ${pod.uuid} is already running (or gone)`, `see podctl status ${pod.uuid.slice(0, 8)}`)
    }
    throw er
  }
  return { pod, manifest: pod.podManifest().manifest }
}
