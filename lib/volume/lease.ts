/**
 * The controller's lease (seed 004's leader election, with a file in the
 * place of the Kubernetes Lease object): `<data>/controller/lease.json`,
 * read and replaced only under the lock `volume-locks/controller.lease`,
 * which is held for one read-modify-write, never while leading.
 *
 * A lease is live while its holder renews it within `lease_duration_s`.
 * On this host a holder that is provably gone (its process ended, the
 * machine rebooted) holds nothing, at once: commands then do their own
 * provisioning instead of waiting for a dead controller, and standbys do
 * not wait out the lease of a SIGKILLed leader.
 */
import { withVolumeLock } from './locking.js'
import { formatOwner, ownOwner, ownerAlive, parseOwner } from '../lock/owner.js'
import { isoTime } from '../pod/record.js'
import { controllerLeaseLock } from './layout.js'
import { readObject, writeObject, type ObjectKind } from './objects.js'

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

const leaseProblem = (v: unknown): string | undefined => {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return 'not an object'
  const l = v as Record<string, unknown>
  if (l.holder !== null && typeof l.holder !== 'string') return 'bad holder'
  if (typeof l.lease_duration_s !== 'number' || !(l.lease_duration_s > 0)) return 'bad lease_duration_s'
  if (!Number.isInteger(l.transitions)) return 'bad transitions'
  if (l.renewed_at !== null && typeof l.renewed_at !== 'string') return 'bad renewed_at'
  return undefined
}

export const LEASE: ObjectKind<Lease> = {
  what: 'controller lease',
  dir: 'controller',
  problem: leaseProblem,
  missingHint: () => 'no controller has run on this data dir: podctl controller starts one',
}
const LEASE_NAME = 'lease'

export const readLease = (dataDir: string): Lease | undefined => readObject(dataDir, LEASE, LEASE_NAME)

/** Whether the lease is held now: renewed within its duration by a holder not known to be gone. */
export const leaseLive = (l: Lease | undefined, now = Date.now()): boolean => {
  if (!l || l.holder === null || l.renewed_at === null) return false
  if (Date.parse(l.renewed_at) + l.lease_duration_s * 1000 <= now) return false
  const owner = l.owner === null ? undefined : parseOwner(l.owner)
  // Another host's holder is judged by the renewal alone.
  return owner === undefined || ownerAlive(owner, () => Date.parse(l.renewed_at!), now)
}

/** Whether a controller leads on this data dir now. */
export const controllerLive = (dataDir: string): boolean => {
  try {
    return leaseLive(readLease(dataDir))
  } catch {
    return false // a damaged lease leads nobody; the controller rewrites it
  }
}

// volume-locks/ is made on first use: a data dir made by `podctl list` has none yet.
const withLeaseLock = <T>(dataDir: string, fn: () => T, timeoutMs: number): T =>
  withVolumeLock(controllerLeaseLock(dataDir), 'the controller lease', { wait: true, timeoutMs }, fn)

const isMine = (l: Lease | undefined, identity: string): boolean => l?.holder === identity && l.owner === formatOwner(ownOwner())

/**
 * Takes the lease for `identity` if nobody holds it live, or renews it if
 * this process holds it. Returns whether this process leads now.
 */
export const tryAcquireOrRenew = (dataDir: string, identity: string, leaseDurationMs: number, lockTimeoutMs: number): boolean =>
  withLeaseLock(
    dataDir,
    () => {
      let current: Lease | undefined
      try {
        current = readLease(dataDir)
      } catch {
        current = undefined // damaged: taken over and rewritten
      }
      const now = isoTime()
      const mine = isMine(current, identity)
      if (!mine && leaseLive(current)) return false
      writeObject(dataDir, LEASE, LEASE_NAME, {
        holder: identity,
        acquired_at: mine ? current!.acquired_at : now,
        renewed_at: now,
        lease_duration_s: leaseDurationMs / 1000,
        transitions: (current?.transitions ?? -1) + (mine ? 0 : 1),
        owner: formatOwner(ownOwner()),
      } satisfies Lease)
      return true
    },
    lockTimeoutMs,
  )

/** Gives the lease up (SIGTERM): a standby takes it at its next try instead of waiting for it to expire. */
export const releaseLease = (dataDir: string, identity: string, lockTimeoutMs: number): void =>
  withLeaseLock(
    dataDir,
    () => {
      const current = readLease(dataDir)
      if (current && isMine(current, identity)) writeObject(dataDir, LEASE, LEASE_NAME, { ...current, holder: null, owner: null } satisfies Lease)
    },
    lockTimeoutMs,
  )
