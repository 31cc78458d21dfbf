/**
 * A lock at a path (CONTRACT §2): proper-lockfile's lock, paired with an
 * owner record that lets a reader on the same host tell a dead holder at
 * once. Pod locks, manifest locks and volume operation locks are all this
 * lock; Documentation/devel/pod-lifecycle.md has the design and its limits.
 *
 * - proper-lockfile creates, refreshes and removes the lock through the
 *   file system we give it. Its "mkdir" here makes a symlink whose target
 *   is the owner record: one atomic, exclusive call (EEXIST when held, on
 *   local and network file systems alike) creates the lock with its owner,
 *   so a lock is never seen without one, and no directory or temporary
 *   name is needed. Its "rmdir" unlinks the symlink.
 * - proper-lockfile's own mtime staleness is switched off (stale:
 *   Infinity): it would let a busy, live holder lose its lock. Its update
 *   timer still refreshes the mtime, which judges holders on other hosts.
 * - A dead holder's lock is taken over under a second, short-lived lock,
 *   re-checked there, and removed only if it is still that holder's.
 */
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { PodctlError, errnoCode, isNotFound } from '../errors.js'
import { retrySync } from '../poll.js'
import { formatOwner, ownOwner, ownerAlive, parseOwner, sameOwner, type Owner } from './owner.js'

type Callback<T = void> = (err: NodeJS.ErrnoException | null, value?: T) => void
interface LockOptions {
  lockfilePath: string
  realpath: false
  stale: number
  update?: number
  fs: typeof lockFs
  onCompromised: (er: Error) => void
}
interface LockfileCore {
  lock(file: string, options: LockOptions, cb: (err: Error | null, release?: (cb: Callback) => void) => void): void
}
let lockfile: LockfileCore | undefined
// Loaded on first use: commands that only read (list, status) never pay
// for it. lib/lockfile.js is the callback core behind lockSync; called with
// our file system, whose calls complete before they return, it finishes
// synchronously too. Unlike lockSync it does not rebuild its fs adapter on
// every call, so its mtime-precision probe (a utimes and a stat) is made
// once per process instead of once per lock.
//
// In the bundled CLI (dist/bundle/, CommonJS) `require` exists and esbuild
// bundles the module it names, with graceful-fs replaced by node:fs (we
// pass our own fs, so proper-lockfile never uses graceful-fs); as an ES
// module (dist/lib/) there is no `require` and Node loads it from
// node_modules.
const loadLockfile = (): LockfileCore =>
  (lockfile ??= (
    typeof require === 'function'
      ? require('proper-lockfile/lib/lockfile.js')
      : createRequire(import.meta.url)('proper-lockfile/lib/lockfile.js')
  ) as LockfileCore)

/** How often a holder refreshes its lock's mtime (for readers on other hosts). */
const UPDATE_MS = 5_000
/** proper-lockfile's minimum stale time; bounds a dead takeover holder. */
const TAKEOVER_STALE_MS = 2_000

const call = <T>(cb: Callback<T>, fn: () => T): void => {
  let value: T
  try {
    value = fn()
  } catch (er) {
    cb(er as NodeJS.ErrnoException)
    return
  }
  cb(null, value)
}

// The file system proper-lockfile works through (callback style, but
// synchronous underneath). EEXIST keeps its meaning for proper-lockfile.
const lockFs = {
  mkdir: (p: string, cb: Callback): void => call(cb, () => fs.symlinkSync(formatOwner(ownOwner()), p)),
  stat: (p: string, cb: Callback<fs.Stats>): void => call(cb, () => fs.lstatSync(p)),
  utimes: (p: string, atime: Date, mtime: Date, cb: Callback): void => call(cb, () => fs.lutimesSync(p, atime, mtime)),
  rmdir: (p: string, cb: Callback): void => call(cb, () => fs.unlinkSync(p)),
  realpath: (p: string, cb: Callback<string>): void => call(cb, () => fs.realpathSync(p)),
  // proper-lockfile's exit handler releases held locks with this.
  rmdirSync: (p: string): void => fs.unlinkSync(p),
}

/** A lock this process holds. */
export interface HeldLock {
  readonly path: string
  /** Set when proper-lockfile found the lock gone or replaced under us. */
  readonly compromised: Error | undefined
  /** Releases the lock; a second call does nothing. */
  release(): void
}

/**
 * The owner record at `lock`: undefined when there is no lock, 'none' for
 * something that is not a podctl lock (a file, a directory, a link to
 * anything else), which is judged by its mtime alone.
 */
const readOwner = (lock: string): Owner | undefined | 'none' => {
  try {
    return parseOwner(fs.readlinkSync(lock)) ?? 'none'
  } catch (er) {
    return isNotFound(er) ? undefined : 'none'
  }
}

const mtimeOf = (p: string) => (): number | undefined => fs.lstatSync(p, { throwIfNoEntry: false })?.mtimeMs

/** proper-lockfile's own rule, for an entry without an owner record: held while its mtime is fresher than 10 s. */
const freshWithoutOwner = (lock: string): boolean => {
  const m = mtimeOf(lock)()
  return m !== undefined && Date.now() - m < 10_000
}

/** Whether a live process holds the lock at `lock`. One readlink, one /proc read. */
export const lockHeldAt = (lock: string): boolean => {
  const owner = readOwner(lock)
  if (owner === undefined) return false
  return owner === 'none' ? freshWithoutOwner(lock) : ownerAlive(owner, mtimeOf(lock))
}

/** The owner record of the lock at `lock`, if a podctl process holds (or held) it. */
export const lockOwnerAt = (lock: string): Owner | undefined => {
  const o = readOwner(lock)
  return o === 'none' ? undefined : o
}

/**
 * Creates the lock at `lock` through proper-lockfile. Returns its release
 * function, or undefined when the lock exists.
 */
const tryCreate = (lock: string, stale: number, onCompromised: (er: Error) => void): (() => void) | undefined => {
  let outcome: { err: Error | null; release?: (cb: Callback) => void } | undefined
  loadLockfile().lock(lock, { lockfilePath: lock, realpath: false, stale, update: UPDATE_MS, fs: lockFs, onCompromised }, (err, release) => {
    outcome = { err, release }
  })
  if (!outcome) throw new Error('bug: proper-lockfile did not complete synchronously')
  if (outcome.err) {
    if (errnoCode(outcome.err) === 'ELOCKED') return undefined
    throw outcome.err
  }
  const release = outcome.release!
  return () => {
    let err: Error | null = null
    release((e) => {
      err = e
    })
    if (err) throw err
  }
}

/** Whether the lock at `lock` is still exactly the one judged dead. */
const sameDeadLock = (lock: string, dead: Owner | 'none'): boolean => {
  const now = readOwner(lock)
  if (now === undefined) return false
  if (dead === 'none') return now === 'none' && !freshWithoutOwner(lock)
  return now !== 'none' && sameOwner(now, dead) && !ownerAlive(now, mtimeOf(lock))
}

/** Unlinks a dead lock; an entry that cannot be unlinked (a directory) was never a podctl lock. */
const removeDeadLock = (lock: string): void => {
  try {
    fs.unlinkSync(lock)
  } catch (er) {
    if (isNotFound(er)) return
    const code = errnoCode(er)
    if (code === 'EISDIR' || code === 'EPERM') {
      throw new PodctlError('EFAILED', `${lock} is a directory, not a podctl lock`, 'remove it by hand after checking what put it there')
    }
    throw er
  }
}

/**
 * Removes the lock at `lock` if, re-checked under the takeover lock, it is
 * still held by exactly `dead` (or, for an entry without an owner record,
 * still stale). Two processes that both judged the holder dead are
 * serialized here, and the second finds the lock gone or owned by the first.
 */
const takeOver = (lock: string, dead: Owner | 'none'): void => {
  const guard = path.join(path.dirname(lock), `.${path.basename(lock)}.takeover`)
  const releaseGuard = retrySync(() => tryCreate(guard, TAKEOVER_STALE_MS, () => {}), { timeoutMs: TAKEOVER_STALE_MS + 1_000, firstDelayMs: 10, maxDelayMs: 10 })
  if (!releaseGuard) return // someone else is taking it over
  try {
    if (sameDeadLock(lock, dead)) removeDeadLock(lock)
  } finally {
    releaseGuard()
  }
}

/**
 * Takes the lock at `lock` if no live process holds it, taking over a dead
 * holder's lock. Returns undefined when a live process holds it. Never
 * waits for a live holder.
 */
export const tryLockAt = (lock: string): HeldLock | undefined => {
  let compromised: Error | undefined
  const onCompromised = (er: Error): void => {
    compromised = er
  }
  for (let attempt = 0; attempt < 3; attempt++) {
    const release = tryCreate(lock, Infinity, onCompromised)
    if (release) {
      let released = false
      return {
        path: lock,
        get compromised() {
          return compromised
        },
        release() {
          if (released) return
          released = true
          try {
            release()
          } catch (er) {
            // Compromised or already gone: nothing of ours is left to remove.
            if (!compromised && errnoCode(er) !== 'ERELEASED' && !isNotFound(er)) throw er
          }
        },
      }
    }
    const owner = readOwner(lock)
    if (owner === undefined) continue // released meanwhile: try again
    if (owner === 'none' ? freshWithoutOwner(lock) : ownerAlive(owner, mtimeOf(lock))) return undefined
    takeOver(lock, owner)
  }
  return undefined
}

export interface AcquireOptions {
  /** Wait for a live holder (true) or refuse at once (false). */
  wait: boolean
  /** How long to wait (default 30 s); then ETIMEOUT. */
  timeoutMs?: number
  /** Called once when waiting starts, with the holder's pid if known (to tell the user why we wait). */
  onWait?: (holderPid: number | undefined) => void
}

export const DEFAULT_WAIT_MS = 30_000

/** A lock held by a live process, asked for without waiting: a controller puts the work back and goes on. */
export class LockBusyError extends PodctlError {
  constructor(what: string, who: string) {
    super('EBADSTATE', `${what} is busy: another operation on it is pending${who}`, 'try again when it is done')
  }
}

/**
 * Takes the lock at `lock`, `what` naming it in messages. Held by a live
 * process: refuses (EBADSTATE, "`what` is busy") or waits, retrying with a
 * growing delay, until `timeoutMs` (ETIMEOUT). A dead holder's lock is
 * taken over at once.
 */
export const acquireLockAt = (lock: string, what: string, opts: AcquireOptions): HeldLock => {
  const held = opts.wait
    ? retrySync(() => tryLockAt(lock), { timeoutMs: opts.timeoutMs ?? DEFAULT_WAIT_MS, onWait: () => opts.onWait?.(lockOwnerAt(lock)?.pid) })
    : tryLockAt(lock)
  if (held) return held
  const pid = lockOwnerAt(lock)?.pid
  const who = pid !== undefined ? ` (podctl process ${pid})` : ''
  if (!opts.wait) throw new LockBusyError(what, who)
  throw new PodctlError('ETIMEOUT', `timed out waiting for ${what}: another operation on it is pending${who}`)
}
