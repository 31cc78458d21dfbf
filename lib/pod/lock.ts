/**
 * The pod lock (CONTRACT §2): proper-lockfile's lock at
 * `<data>/locks/<uuid>`, paired with an owner record that lets a reader on
 * the same host tell a dead holder at once. See
 * Documentation/devel/pod-lifecycle.md for the design and its limits.
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
 * - The lock is outside the pod directory, so renames never touch it.
 * - Lock directories (made by podctl before the symlink form, or by hand)
 *   are still understood: their owner record is `<lock>/owner`, and a
 *   directory without one is judged by its mtime alone.
 */
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { errnoCode } from '../errors.js'
import { isWriteRefused, locksDir, notWritable } from './layout.js'
import { formatOwner, ownOwner, ownerAlive, parseOwner, type Owner } from './owner.js'

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

/** An old-style (directory) lock's owner record. */
const OWNER = 'owner'
/** How often a holder refreshes its lock's mtime (for readers on other hosts). */
const UPDATE_MS = 5_000
/** proper-lockfile's minimum stale time; bounds a dead takeover holder. */
const TAKEOVER_STALE_MS = 2_000

/** Sleeps without yielding: lock acquisition is synchronous throughout. */
export const sleepSync = (ms: number): void => {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

let counter = 0
/** A name no other process uses: pid, a per-process counter. */
const uniqueSuffix = (): string => `${process.pid}-${(counter++).toString(36)}`

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
  rmdir: (p: string, cb: Callback): void => call(cb, () => removeLockEntry(p)),
  realpath: (p: string, cb: Callback<string>): void => call(cb, () => fs.realpathSync(p)),
  // proper-lockfile's exit handler releases held locks with this.
  rmdirSync: (p: string): void => removeLockEntry(p),
}

/**
 * Removes a lock: unlinks a symlink lock; an old-style lock directory is
 * renamed away first, so the lock path is never an empty directory.
 */
const removeLockEntry = (p: string): void => {
  try {
    fs.unlinkSync(p)
    return
  } catch (er) {
    const code = errnoCode(er)
    if (code !== 'EISDIR' && code !== 'EPERM') throw er
  }
  const away = path.join(path.dirname(p), `.${path.basename(p)}.gone-${uniqueSuffix()}`)
  fs.renameSync(p, away)
  removeLockDir(away)
}

const removeLockDir = (dir: string): void => {
  try {
    fs.unlinkSync(path.join(dir, OWNER))
  } catch {
    // already gone, or never written
  }
  try {
    fs.rmdirSync(dir)
  } catch (er) {
    // Not a directory (a temporary of an older podctl that is a file), or
    // not empty: left for a person to look at.
    if (errnoCode(er) === 'ENOTDIR') fs.unlinkSync(dir)
  }
}

/** A lock this process holds. */
export interface HeldLock {
  readonly path: string
  /** Set when proper-lockfile found the lock gone or replaced under us. */
  readonly compromised: Error | undefined
  /** Releases the lock; a second call does nothing. */
  release(): void
}

export const lockPath = (dataDir: string, uuid: string): string => path.join(locksDir(dataDir), uuid)

const readOwner = (lock: string): Owner | undefined | 'none' => {
  try {
    return parseOwner(fs.readlinkSync(lock)) ?? 'none'
  } catch (er) {
    const code = errnoCode(er)
    if (code === 'ENOENT') return undefined
    if (code !== 'EINVAL') return 'none'
  }
  // Not a symlink: a lock directory, with or without an owner record.
  try {
    return parseOwner(fs.readlinkSync(path.join(lock, OWNER))) ?? 'none'
  } catch (er) {
    const code = errnoCode(er)
    if (code === 'ENOENT' || code === 'ENOTDIR') return fs.existsSync(lock) ? 'none' : undefined
    return 'none'
  }
}

const mtimeOf = (p: string) => (): number | undefined => {
  try {
    return fs.lstatSync(p).mtimeMs
  } catch {
    return undefined
  }
}

/**
 * Whether a live process holds the lock at `lock`. A lock without a
 * readable owner record (not made by podctl) is judged by proper-lockfile's
 * rule: held while its mtime is fresher than 10 s.
 */
export const lockHeldAt = (lock: string): boolean => {
  const owner = readOwner(lock)
  if (owner === undefined) return false
  if (owner === 'none') {
    const m = mtimeOf(lock)()
    return m !== undefined && Date.now() - m < 10_000
  }
  return ownerAlive(owner, mtimeOf(lock))
}

/** The owner record of the pod's lock, if it is held by a podctl process. */
export const lockOwner = (dataDir: string, uuid: string): Owner | undefined => {
  const o = readOwner(lockPath(dataDir, uuid))
  return o === 'none' ? undefined : o
}

/** Whether a live process holds the pod's lock. One readlink, one /proc read. */
export const isLocked = (dataDir: string, uuid: string): boolean => lockHeldAt(lockPath(dataDir, uuid))

/** Names in the locks dir that are pod locks (not temporaries or takeovers). */
const isLockName = (name: string): boolean => !name.startsWith('.')

/**
 * The names of the locks present in the locks dir (held or dead), from one
 * readdir. A supervisor that ends cleanly removes its lock; one that was
 * killed leaves it: gc reads a pod's record to reap its apps only then.
 */
export const lockNames = (dataDir: string): Set<string> => {
  try {
    return new Set(fs.readdirSync(locksDir(dataDir)).filter(isLockName))
  } catch (er) {
    if (errnoCode(er) === 'ENOENT') return new Set()
    throw er
  }
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
    // <data>/locks/<name>: name the data dir, as every other refusal does.
    if (isWriteRefused(outcome.err)) throw notWritable(path.dirname(path.dirname(lock)), outcome.err)
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
  if (dead === 'none') return now === 'none' && !lockHeldAt(lock)
  return (
    now !== 'none' &&
    now.pid === dead.pid && now.start === dead.start && now.boot === dead.boot && now.host === dead.host &&
    !ownerAlive(now, mtimeOf(lock))
  )
}

/**
 * Removes the lock at `lock` if, re-checked under the takeover lock, it is
 * still held by exactly `dead` (or, for a lock without an owner record,
 * still stale) and that holder is still dead. Two processes that both
 * judged the holder dead are serialized here, and the second finds the
 * lock gone or owned by the first.
 */
const takeOver = (lock: string, dead: Owner | 'none'): void => {
  const guard = path.join(path.dirname(lock), `.${path.basename(lock)}.takeover`)
  const deadline = Date.now() + TAKEOVER_STALE_MS + 1_000
  let releaseGuard: (() => void) | undefined
  for (;;) {
    releaseGuard = tryCreate(guard, TAKEOVER_STALE_MS, () => {})
    if (releaseGuard) break
    if (Date.now() > deadline) return // someone else is taking it over
    sleepSync(10)
  }
  try {
    if (sameDeadLock(lock, dead)) removeLockEntry(lock)
  } catch (er) {
    if (errnoCode(er) !== 'ENOENT') throw er
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
            if (!compromised && errnoCode(er) !== 'ERELEASED' && errnoCode(er) !== 'ENOENT') throw er
          }
        },
      }
    }
    const owner = readOwner(lock)
    if (owner === undefined) continue // released meanwhile: try again
    if (owner === 'none' ? lockHeldAt(lock) : ownerAlive(owner, mtimeOf(lock))) return undefined
    takeOver(lock, owner)
  }
  return undefined
}

/** Takes the pod's lock if it is free (or its holder is dead); undefined if held. */
export const tryLock = (dataDir: string, uuid: string): HeldLock | undefined =>
  tryLockAt(lockPath(dataDir, uuid))

/**
 * Removes what crashed processes left in the locks dir: temporaries and
 * moved-away locks older than `minAgeMs`, and dead locks of pods that no
 * longer exist. Returns how many entries it removed.
 */
export const sweepLocksDir = (dataDir: string, podExists: (uuid: string) => boolean, minAgeMs = 60_000): number => {
  const dir = locksDir(dataDir)
  let removed = 0
  let names: string[]
  try {
    names = fs.readdirSync(dir)
  } catch {
    return 0
  }
  const now = Date.now()
  for (const name of names) {
    const p = path.join(dir, name)
    if (name.startsWith('.')) {
      if (name.endsWith('.takeover')) continue // proper-lockfile's staleness handles these
      const m = mtimeOf(p)()
      if (m !== undefined && now - m > minAgeMs) {
        removeLockDir(p)
        removed++
      }
      continue
    }
    if (podExists(name)) continue
    const held = tryLockAt(p)
    if (held) {
      held.release()
      removed++
    }
  }
  return removed
}
