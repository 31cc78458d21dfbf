/**
 * Cross-process locks of volume operations: the pod lock's machinery
 * (lib/pod/lock.ts: a proper-lockfile lock whose owner record lets a dead
 * holder be seen at once, SIGKILL included), at paths under
 * `<data>/volume-locks/`. A caller either refuses at once when the lock
 * is held or waits for it, up to a time limit.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, errnoCode } from '../errors.js'
import { DIR_MODE } from '../pod/layout.js'
import { lockHeldAt, sleepSync, tryLockAt, type HeldLock } from '../pod/lock.js'
import { parseOwner } from '../pod/owner.js'

export interface AcquireOptions {
  /** Wait for a live holder (true) or refuse at once (false). */
  wait: boolean
  /** How long to wait (default 30 s); then ETIMEOUT. */
  timeoutMs?: number
  /** Called once when waiting starts, with the holder's pid if known (to tell the user why we wait). */
  onWait?: (holderPid: number | undefined) => void
}

export const DEFAULT_WAIT_MS = 30_000

/** The pid of the live holder of a lock, for messages. */
export const lockHolderPid = (lock: string): number | undefined => {
  try {
    return parseOwner(fs.readlinkSync(lock))?.pid
  } catch {
    return undefined
  }
}

/** Whether a live process holds the lock at `lock`. */
export const isHeld = (lock: string): boolean => lockHeldAt(lock)

/**
 * Takes the lock at `lock`. Held by a live process: refuses (EBADSTATE,
 * "`what` is busy") or waits, polling with a growing delay, until
 * `timeoutMs` (ETIMEOUT). A dead holder's lock is taken over at once.
 */
export const acquireLock = (lock: string, what: string, opts: AcquireOptions): HeldLock => {
  try {
    fs.mkdirSync(path.dirname(lock), { recursive: true, mode: DIR_MODE })
  } catch (er) {
    if (errnoCode(er) !== 'EEXIST') throw er
  }
  const deadline = Date.now() + (opts.timeoutMs ?? DEFAULT_WAIT_MS)
  let waiting = false
  for (let delay = 2; ; delay = Math.min(delay * 2, 50)) {
    const held = tryLockAt(lock)
    if (held) return held
    const pid = lockHolderPid(lock)
    const who = pid !== undefined ? ` (podctl process ${pid})` : ''
    if (!opts.wait) {
      throw new PodctlError('EBADSTATE', `${what} is busy: another operation on it is pending${who}`, 'try again when it is done')
    }
    if (Date.now() >= deadline) {
      throw new PodctlError('ETIMEOUT', `timed out waiting for ${what}: another operation on it is pending${who}`)
    }
    if (!waiting) {
      waiting = true
      opts.onWait?.(pid)
    }
    sleepSync(delay)
  }
}

/** Runs `fn` holding the lock at `lock`; always releases it. */
export const withLock = <T>(lock: string, what: string, opts: AcquireOptions, fn: () => T): T => {
  const held = acquireLock(lock, what, opts)
  try {
    return fn()
  } finally {
    held.release()
  }
}
