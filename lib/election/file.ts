/**
 * A data dir's lease, `<data>/controller/lease.json`, replaced under the lock
 * `volume-locks/controller.lease` held for one read-modify-write, never while
 * leading. A holder on this host that is provably gone holds nothing at once,
 * so that neither commands nor standbys wait out a SIGKILLed leader's lease.
 */
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { writeFileAtomic } from '../fs/atomic.js'
import { mkdirsInside } from '../fs/inside.js'
import { readOwnFile } from '../fs/read.js'
import { formatOwner, ownOwner, ownerAlive, parseOwner } from '../lock/owner.js'
import { withLockAt } from '../lock/with-lock.js'
import type { LeaderElection } from './election.js'

export interface Lease {
  /** The leader's identity (`--identity`), or null once released. */
  holder: string | null
  acquired_at: string | null
  renewed_at: string | null
  lease_duration_s: number
  /** How many times leadership changed hands. */
  transitions: number
  /** The holder's process as a lock owner record (private: liveness on this host). */
  owner: string | null
}

const LEASE_DIR = 'controller'
const leaseFile = (dataDir: string): string => path.join(dataDir, LEASE_DIR, 'lease.json')
// Beside the claim, class and volume locks (lib/storage/local/layout.ts).
const leaseLock = (dataDir: string): string => path.join(dataDir, 'volume-locks', 'controller.lease')

const leaseProblem = (v: unknown): string | undefined => {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'not an object'
  const l = v as Record<string, unknown>
  if (l.holder !== null && typeof l.holder !== 'string') return 'bad holder'
  if (typeof l.lease_duration_s !== 'number' || !(l.lease_duration_s > 0)) return 'bad lease_duration_s'
  if (!Number.isInteger(l.transitions)) return 'bad transitions'
  if (l.renewed_at !== null && typeof l.renewed_at !== 'string') return 'bad renewed_at'
  return undefined
}

/** The data dir's lease, or undefined when no controller has run on it; EFAILED when its file is damaged. */
export const readLease = (dataDir: string): Lease | undefined => {
  const file = leaseFile(dataDir)
  const f = readOwnFile(file)
  if ('missing' in f) return undefined
  let why = 'damaged' in f ? f.damaged : undefined
  let v: unknown
  try {
    v = 'bytes' in f ? JSON.parse(f.bytes.toString('utf8')) : undefined
  } catch {
    why = 'not valid JSON'
  }
  why ??= leaseProblem(v)
  if (why) throw new PodctlError('EFAILED', `the controller lease is damaged: ${why}`, `look at ${file}; remove it by hand if it cannot be repaired`)
  return v as Lease
}

const writeLease = (dataDir: string, l: Lease): void =>
  writeFileAtomic(mkdirsInside(dataDir, LEASE_DIR), 'lease.json', `${JSON.stringify(l)}\n`, { sync: true })

/** Whether the lease is held now: renewed within its duration by a holder not known to be gone. */
export const leaseLive = (l: Lease | undefined, now = Date.now()): boolean => {
  if (!l || l.holder === null || l.renewed_at === null) return false
  if (Date.parse(l.renewed_at) + l.lease_duration_s * 1000 <= now) return false
  const owner = l.owner === null ? undefined : parseOwner(l.owner)
  // Another host's holder is judged by the renewal alone.
  return owner === undefined || ownerAlive(owner, () => Date.parse(l.renewed_at!), now)
}

/** The lease, or undefined when there is none or it is damaged: a damaged lease leads nobody, and the controller rewrites it. */
const leaseOrNone = (dataDir: string): Lease | undefined => {
  try {
    return readLease(dataDir)
  } catch {
    return undefined
  }
}

/** Whether a controller leads on this data dir now. */
export const controllerLive = (dataDir: string): boolean => leaseLive(leaseOrNone(dataDir))

const isMine = (l: Lease | undefined, identity: string): boolean => l?.holder === identity && l.owner === formatOwner(ownOwner())

/** The data dir's lease file as a LeaderElection; `lockTimeoutMs` bounds each wait for the lease's lock. */
export const fileElection = (dataDir: string, identity: string, leaseDurationMs: number, lockTimeoutMs: number): LeaderElection => {
  const locked = async <T>(fn: () => T): Promise<T> => withLockAt(leaseLock(dataDir), 'the controller lease', { wait: true, timeoutMs: lockTimeoutMs }, fn)
  return {
    what: 'the lease',
    tryAcquireOrRenew: () =>
      locked(() => {
        const current = leaseOrNone(dataDir)
        const now = new Date().toISOString()
        const mine = isMine(current, identity)
        if (!mine && leaseLive(current)) return false
        writeLease(dataDir, {
          holder: identity,
          acquired_at: mine ? current!.acquired_at : now,
          renewed_at: now,
          lease_duration_s: leaseDurationMs / 1000,
          transitions: (current?.transitions ?? -1) + (mine ? 0 : 1),
          owner: formatOwner(ownOwner()),
        })
        return true
      }),
    // A standby takes a released lease at its next try instead of waiting for it to expire.
    release: () =>
      locked(() => {
        const current = readLease(dataDir)
        if (current && isMine(current, identity)) writeLease(dataDir, { ...current, holder: null, owner: null })
      }),
    stepDown: () => {},
  }
}
