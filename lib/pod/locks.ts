/**
 * Pod locks: the lock of lib/lock/ at `<data>/locks/<uuid>`, outside the
 * pod directory so that renames never touch it (CONTRACT §2), and what the
 * data dir's locks dir holds as a whole.
 */
import fs from 'node:fs'
import path from 'node:path'
import { unlessNotFound } from '../errors.js'
import { lockHeldAt, lockOwnerAt, tryLockAt, type HeldLock } from '../lock/lock.js'
import type { Owner } from '../lock/owner.js'
import { isWriteRefused, locksDir, notWritable, podPath } from './layout.js'

export const lockPath = (dataDir: string, uuid: string): string => path.join(locksDir(dataDir), uuid)

/** The lock of a mutable pod's manifest: only manifest writers exclude each other. */
export const manifestLockPath = (dataDir: string, uuid: string): string => `${lockPath(dataDir, uuid)}.manifest`

/** Whether a live process holds the pod's lock. One readlink, one /proc read. */
export const isLocked = (dataDir: string, uuid: string): boolean => lockHeldAt(lockPath(dataDir, uuid))

/** Whether the pod is running (CONTRACT §2): its directory in run/ and its lock held by a live process. */
export const isRunning = (dataDir: string, uuid: string): boolean =>
  fs.lstatSync(podPath(dataDir, 'run', uuid), { throwIfNoEntry: false })?.isDirectory() === true && isLocked(dataDir, uuid)

/** The owner record of the pod's lock, if it is held (or was, by a podctl process that died). */
export const lockOwner = (dataDir: string, uuid: string): Owner | undefined => lockOwnerAt(lockPath(dataDir, uuid))

/** Takes the pod's lock if it is free (or its holder is dead); undefined if held. */
export const tryLock = (dataDir: string, uuid: string): HeldLock | undefined => {
  try {
    return tryLockAt(lockPath(dataDir, uuid))
  } catch (er) {
    if (isWriteRefused(er)) throw notWritable(dataDir, er)
    throw er
  }
}

/** Names in the locks dir that are locks (not takeover guards). */
const isLockName = (name: string): boolean => !name.startsWith('.')

/**
 * The names of the locks present in the locks dir (held or dead), from one
 * readdir. A supervisor that ends cleanly removes its lock; one that was
 * killed leaves it: gc reads a pod's record to reap its apps only then.
 */
export const lockNames = (dataDir: string): Set<string> => {
  return new Set((unlessNotFound(() => fs.readdirSync(locksDir(dataDir))) ?? []).filter(isLockName))
}

/**
 * The uuids whose locks are held by live processes, from one read of the
 * locks dir plus one owner check per lock present. Unlocked pods (the
 * common case) cost nothing.
 */
export const lockedSet = (dataDir: string): Set<string> => {
  const held = new Set<string>()
  for (const name of lockNames(dataDir)) if (lockHeldAt(path.join(locksDir(dataDir), name))) held.add(name)
  return held
}

/**
 * Removes the dead locks of pods that no longer exist (a holder killed
 * after its pod was deleted, or a manifest lock). Takeover guards are
 * proper-lockfile's to expire. Returns how many it removed.
 */
export const sweepLocksDir = (dataDir: string, podExists: (uuid: string) => boolean): number => {
  let removed = 0
  for (const name of lockNames(dataDir)) {
    if (podExists(name)) continue
    const held = tryLockAt(path.join(locksDir(dataDir), name))
    if (held) {
      held.release()
      removed++
    }
  }
  return removed
}
