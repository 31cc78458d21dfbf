/**
 * A lock at a path in a directory made on first use (`volume-locks/`: a
 * data dir made by `podctl list` has none yet), held while `fn` runs.
 */
import fs from 'node:fs'
import path from 'node:path'
import { DIR_MODE } from '../fs/modes.js'
import { acquireLockAt, type AcquireOptions, type HeldLock } from './lock.js'

/** Takes the lock at `lock` (acquireLockAt), creating its directory if needed. */
export const acquireLockIn = (lock: string, what: string, opts: AcquireOptions): HeldLock => {
  fs.mkdirSync(path.dirname(lock), { recursive: true, mode: DIR_MODE })
  return acquireLockAt(lock, what, opts)
}

/**
 * Runs `fn` holding the lock at `lock`; always releases it. When `fn`
 * returns a promise (a provisioner called asynchronously), the lock is
 * held until it settles.
 */
export const withLockAt = <T>(lock: string, what: string, opts: AcquireOptions, fn: () => T): T => {
  const held = acquireLockIn(lock, what, opts)
  let result: T
  try {
    result = fn()
  } catch (er) {
    held.release()
    throw er
  }
  if (result instanceof Promise) return result.finally(() => held.release()) as T
  held.release()
  return result
}
