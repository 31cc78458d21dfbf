/**
 * The pod lock (CONTRACT §2): proper-lockfile's mkdir lock at
 * `<data>/locks/<uuid>`, paired with an owner record that lets a reader on
 * the same host tell a dead holder at once. See
 * Documentation/devel/pod-lifecycle.md for the design and its limits.
 *
 * - Acquiring creates the lock directory with the owner record already in
 *   it (built under a temporary name, then renamed into place), so a lock
 *   is never seen without its owner.
 * - Releasing renames the directory away before emptying it, so the lock
 *   path is never an empty directory that a rename could land on.
 * - proper-lockfile's own mtime staleness is switched off (a stale time of
 *   a year): it would let a busy, live holder lose its lock. Its update
 *   timer still refreshes the mtime, which judges holders on other hosts.
 * - A dead holder's lock is taken over under a second, short-lived lock,
 *   re-checked there, and moved away only if it is still that holder's.
 * - The lock is outside the pod directory, so renames never touch it.
 */
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { randomBytes } from 'node:crypto'
import { errnoCode } from '../errors.js'
import { locksDir, DIR_MODE } from './layout.js'
import { formatOwner, ownOwner, ownerAlive, parseOwner, type Owner } from './owner.js'

type LockfileModule = typeof import('proper-lockfile')
let lockfile: LockfileModule | undefined
// Loaded on first use: commands that only read (list, status) never pay for it.
const loadLockfile = (): LockfileModule =>
  (lockfile ??= createRequire(import.meta.url)('proper-lockfile') as LockfileModule)

const OWNER = 'owner'
const YEAR_MS = 365 * 24 * 3600 * 1000
/** How often a holder refreshes its lock's mtime (for readers on other hosts). */
const UPDATE_MS = 5_000
/** proper-lockfile's minimum stale time; bounds a dead takeover holder. */
const TAKEOVER_STALE_MS = 2_000

const nonce = (): string => randomBytes(6).toString('hex')

/** Sleeps without yielding: lock acquisition is synchronous throughout. */
export const sleepSync = (ms: number): void => {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

// The file system proper-lockfile works through. mkdir creates the lock
// directory with its owner record inside, atomically; rmdir moves it away
// and then removes it. EEXIST keeps its meaning for proper-lockfile.
const lockFs = {
  ...fs,
  mkdirSync(lockPath: fs.PathLike): void {
    const p = String(lockPath)
    const tmp = path.join(path.dirname(p), `.${path.basename(p)}.new-${nonce()}`)
    fs.mkdirSync(tmp, { mode: DIR_MODE })
    try {
      fs.symlinkSync(formatOwner(ownOwner()), path.join(tmp, OWNER))
      fs.renameSync(tmp, p)
    } catch (er) {
      removeLockDir(tmp)
      const code = errnoCode(er)
      // rename(2) onto an existing non-empty directory: the lock is held.
      if (code === 'ENOTEMPTY' || code === 'EEXIST') {
        throw Object.assign(new Error(`EEXIST: lock exists, mkdir '${p}'`), { code: 'EEXIST' })
      }
      throw er
    }
  },
  rmdirSync(lockPath: fs.PathLike): void {
    const p = String(lockPath)
    const away = path.join(path.dirname(p), `.${path.basename(p)}.gone-${nonce()}`)
    fs.renameSync(p, away)
    removeLockDir(away)
  },
}

const removeLockDir = (dir: string): void => {
  try {
    fs.unlinkSync(path.join(dir, OWNER))
  } catch {
    // already gone, or never written
  }
  try {
    fs.rmdirSync(dir)
  } catch {
    // left for gc's sweep of the locks dir
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
    return parseOwner(fs.readlinkSync(path.join(lock, OWNER))) ?? 'none'
  } catch (er) {
    const code = errnoCode(er)
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      // No owner record: no lock at all, or a lock not made by podctl.
      return fs.existsSync(lock) ? 'none' : undefined
    }
    return 'none'
  }
}

const mtimeOf = (p: string) => (): number | undefined => {
  try {
    return fs.statSync(p).mtimeMs
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
 * The uuids whose locks are held by live processes, from one read of the
 * locks dir plus one owner check per lock present. Unlocked pods (the
 * common case) cost nothing.
 */
export const lockedSet = (dataDir: string): Set<string> => {
  const held = new Set<string>()
  let names: string[]
  try {
    names = fs.readdirSync(locksDir(dataDir))
  } catch (er) {
    if (errnoCode(er) === 'ENOENT') return held
    throw er
  }
  for (const name of names) {
    if (isLockName(name) && lockHeldAt(path.join(locksDir(dataDir), name))) held.add(name)
  }
  return held
}

const tryCreate = (lock: string, onCompromised: (er: Error) => void): (() => void) | undefined => {
  try {
    return loadLockfile().lockSync(lock, {
      lockfilePath: lock,
      realpath: false,
      stale: YEAR_MS,
      update: UPDATE_MS,
      fs: lockFs,
      onCompromised,
    } as Parameters<LockfileModule['lockSync']>[1])
  } catch (er) {
    if (errnoCode(er) === 'ELOCKED') return undefined
    throw er
  }
}

/**
 * Moves away the lock at `lock` if, re-checked under the takeover lock, it
 * is still held by exactly `dead` and that holder is still dead. Two
 * processes that both judged the holder dead are serialized here, and the
 * second finds the lock gone or owned by the first.
 */
const takeOver = (lock: string, dead: Owner): void => {
  const guard = path.join(path.dirname(lock), `.${path.basename(lock)}.takeover`)
  const deadline = Date.now() + TAKEOVER_STALE_MS + 1_000
  let releaseGuard: (() => void) | undefined
  for (;;) {
    try {
      releaseGuard = loadLockfile().lockSync(guard, {
        lockfilePath: guard,
        realpath: false,
        stale: TAKEOVER_STALE_MS,
        fs: lockFs,
        onCompromised: () => {},
      } as Parameters<LockfileModule['lockSync']>[1])
      break
    } catch (er) {
      if (errnoCode(er) !== 'ELOCKED') throw er
      if (Date.now() > deadline) return // someone else is taking it over
      sleepSync(10)
    }
  }
  try {
    const now = readOwner(lock)
    if (
      now !== undefined && now !== 'none' &&
      now.pid === dead.pid && now.start === dead.start && now.boot === dead.boot && now.host === dead.host &&
      !ownerAlive(now, mtimeOf(lock))
    ) {
      lockFs.rmdirSync(lock)
    }
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
    const release = tryCreate(lock, onCompromised)
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
    if (owner === 'none') {
      if (lockHeldAt(lock)) return undefined
      // A dead foreign lock: only its mtime speaks for it, and it is stale.
      takeOver(lock, { pid: -1, start: '', boot: '', host: '' })
      continue
    }
    if (ownerAlive(owner, mtimeOf(lock))) return undefined
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
