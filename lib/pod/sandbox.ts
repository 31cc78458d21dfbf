/**
 * The manifest of a mutable pod (rkt's pkg/pod/sandbox.go). Apps are added
 * to and removed from a running mutable pod by replacing its manifest,
 * atomically, under a lock of its own (`<data>/locks/<uuid>.manifest`)
 * that only manifest writers take: the pod's supervisor holds the pod lock
 * all the while, and follows the manifest as it changes
 * (lib/run/supervisor.ts).
 */
import { ErrImmutable, PodChangedStateError, bug, isNotFound } from '../errors.js'
import { syncDir, writeFileAtomic } from '../fs/atomic.js'
import { acquireLockAt, type HeldLock } from '../lock/lock.js'
import { manifestLockPath } from './locks.js'
import { validateManifest, type PodManifest } from './manifest.js'
import type { Pod } from './pod.js'
import { MANIFEST_FILE } from './record.js'

/**
 * Loads the pod's manifest and checks that it may change: throws
 * ErrImmutable for a pod that was not created mutable.
 */
export const sandboxManifest = (pod: Pod): PodManifest => {
  const { manifest } = pod.podManifest()
  if (manifest.mutable !== true) throw new ErrImmutable(pod.uuid)
  return manifest
}

/** A mutable pod's manifest lock, held by this process: the manifest may be replaced while it is. */
export class ManifestLock {
  readonly #pod: Pod
  #held: HeldLock | undefined

  private constructor(pod: Pod, held: HeldLock) {
    this.#pod = pod
    this.#held = held
  }

  /** Takes the manifest lock of `pod`, waiting up to `timeoutMs` for another holder (ETIMEOUT after). */
  static take(pod: Pod, timeoutMs = 30_000): ManifestLock {
    return new ManifestLock(pod, acquireLockAt(manifestLockPath(pod.dataDir, pod.uuid), `the manifest lock of pod ${pod.uuid}`, { wait: true, timeoutMs }))
  }

  /**
   * Replaces the manifest atomically (temporary file, fsync, rename, fsync
   * of the directory). ECHANGED if the pod moved to another state dir meanwhile.
   */
  update(m: PodManifest): void {
    const pod = this.#pod
    if (this.#held === undefined) throw bug(`manifest update of pod ${pod.uuid} after its lock was released`)
    validateManifest(m, { allowEphemeral: true })
    try {
      writeFileAtomic(pod.path, MANIFEST_FILE, JSON.stringify(m), { sync: true })
    } catch (er) {
      if (isNotFound(er)) {
        throw new PodChangedStateError(pod.uuid, `pod ${pod.uuid} changed state while its manifest was being updated`)
      }
      throw er
    }
    syncDir(pod.path)
  }

  /** Releases the lock (again: nothing). */
  release(): void {
    const held = this.#held
    this.#held = undefined
    held?.release()
  }
}
