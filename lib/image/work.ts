/**
 * Work in progress: a directory `images/tmp/<kind>-<unique>` that one
 * process owns while it holds the lock of the same name in image-locks/.
 * An import stages its blobs there, a render unpacks there, a removal
 * moves what it removes there; whatever a killed process leaves is found
 * by its dead lock and removed by the next `image prune` or `gc`
 * (sweepWork). Nothing in it is ever seen as part of the store.
 */
import fs from 'node:fs'
import path from 'node:path'
import { unlessNotFound } from '../errors.js'
import { uniqueSuffix } from '../fs/atomic.js'
import { DIR_MODE } from '../fs/modes.js'
import { removeTree } from '../fs/remove-tree.js'
import { lockHeldAt, tryLockAt, type HeldLock } from '../lock/lock.js'
import { ensureImageDirs, imageLocksDir, imagesTmpDir, isWorkName, workLockPath, type WorkKind } from './layout.js'

export class WorkDir {
  readonly name: string
  readonly path: string
  readonly #lock: HeldLock
  #done = false

  private constructor(name: string, where: string, lock: HeldLock) {
    this.name = name
    this.path = where
    this.#lock = lock
  }

  /** Takes a new work dir of `kind`: its lock first, then the directory, so that no sweep ever sees it unowned. */
  static open(dataDir: string, kind: WorkKind): WorkDir {
    ensureImageDirs(dataDir)
    const name = `${kind}-${uniqueSuffix()}`
    const lock = tryLockAt(workLockPath(dataDir, name))
    if (lock === undefined) throw new Error(`bug: the lock of new work ${name} is held`)
    const where = path.join(imagesTmpDir(dataDir), name)
    try {
      fs.mkdirSync(where, { mode: 0o700 })
    } catch (er) {
      lock.release()
      throw er
    }
    return new WorkDir(name, where, lock)
  }

  /** Makes `rel` (a plain relative path) in the work dir. */
  mkdir(rel: string, mode = DIR_MODE): string {
    const p = path.join(this.path, rel)
    fs.mkdirSync(p, { mode })
    return p
  }

  /** Removes the work dir and releases its lock. Safe to call twice. */
  discard(): void {
    if (this.#done) return
    this.#done = true
    try {
      removeTree(this.path)
    } finally {
      this.#lock.release()
    }
  }
}

/**
 * Removes the work dirs whose owners are dead (their lock is not held by
 * a live process), each under its lock taken over, and the dead locks of
 * work that has no directory. Returns the names removed.
 */
export const sweepWork = (dataDir: string): string[] => {
  const removed: string[] = []
  const tmp = imagesTmpDir(dataDir)
  const entries = unlessNotFound(() => fs.readdirSync(tmp))
  if (entries === undefined) return removed
  for (const name of entries) {
    if (!isWorkName(name)) continue
    const lockPath = workLockPath(dataDir, name)
    if (lockHeldAt(lockPath)) continue
    const lock = tryLockAt(lockPath)
    if (lock === undefined) continue // taken meanwhile: alive after all
    try {
      removeTree(path.join(tmp, name))
      removed.push(name)
    } finally {
      lock.release()
    }
  }
  // Locks whose work is gone: a process killed between its lock and its directory, or after removing it.
  const locks = unlessNotFound(() => fs.readdirSync(imageLocksDir(dataDir))) ?? []
  const present = new Set(entries)
  for (const name of locks) {
    if (!isWorkName(name) || present.has(name)) continue
    const p = workLockPath(dataDir, name)
    if (lockHeldAt(p)) continue
    const lock = tryLockAt(p)
    lock?.release()
  }
  return removed
}
