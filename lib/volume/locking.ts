/**
 * The locks of volume operations: lib/lock's lock (a holder killed with
 * SIGKILL frees it at once) at paths under `<data>/volume-locks/`, a
 * directory made on first use.
 */
import fs from 'node:fs'
import path from 'node:path'
import { DIR_MODE } from '../fs/modes.js'
import { acquireLockAt, type AcquireOptions, type HeldLock } from '../lock/lock.js'

/** Takes the volume lock at `lock` (see acquireLockAt), creating its directory if needed. */
export const acquireVolumeLock = (lock: string, what: string, opts: AcquireOptions): HeldLock => {
  fs.mkdirSync(path.dirname(lock), { recursive: true, mode: DIR_MODE })
  return acquireLockAt(lock, what, opts)
}

/**
 * Runs `fn` holding the volume lock at `lock`; always releases it. When
 * `fn` returns a promise (a provisioner called asynchronously), the lock
 * is held until it settles.
 */
export const withVolumeLock = <T>(lock: string, what: string, opts: AcquireOptions, fn: () => T): T => {
  const held = acquireVolumeLock(lock, what, opts)
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
