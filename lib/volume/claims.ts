/**
 * Volume claims (CONTRACT §8): a request for a volume, bound to exactly
 * one. `<data>/claims/<name>.json`, changed only under
 * `<data>/volume-locks/claim.<name>`. A claim is `pending` until bound,
 * then `bound`; `lost` when its volume disappeared. While a volume is
 * being provisioned for it, `provisioning` names that volume, so a
 * provision cut short by a crash is resumed under the same name.
 */
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { DEFAULT_WAIT_MS } from '../lock/lock.js'
import { NAME_RE, type AccessMode } from '../pod/manifest.js'
import { randomUUID } from '../pod/pod.js'
import { isoTime } from '../pod/record.js'
import { CLASS, defaultClass, withClassLock } from './classes.js'
import { volumeLocksDir } from './layout.js'
import { withVolumeLock } from './locking.js'
import { mustReadObject, objectNames, readObject, writeObject, withEvent, type EventReason, type EventType, type ObjectEvent, type ObjectKind } from './objects.js'
import { ACCESS_MODES } from './persistent.js'

export type ClaimPhase = 'pending' | 'bound' | 'lost'

export interface VolumeClaim {
  version: 1
  name: string
  /** Changes when a claim of the same name is made again: what a volume's claim_ref names. */
  uid: string
  class: string | null
  size_bytes: number | null
  access_mode: AccessMode
  phase: ClaimPhase
  volume: string | null
  created_at: string
  bound_at: string | null
  provisioned_by: string | null
  /** The volume being provisioned, from the first call to the provisioner until the claim is bound. */
  provisioning: { volume: string; started_at: string } | null
  /** Failed provisioning attempts since the claim last changed, and when the next may run. */
  failures: number
  retry_at: string | null
  events: ObjectEvent[]
  /** This file is a node's copy of a claim of the fleet (its truth is in etcd), made when a pod of the node uses it. */
  fleet?: boolean
}

/** A claim's uid: a UUID, lower case, as randomUUID makes them. */
export const CLAIM_UID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const isTime = (v: unknown): boolean => typeof v === 'string' && !Number.isNaN(Date.parse(v))

/**
 * What is wrong with a claim as stored, if anything. Claims of a fleet are
 * read from etcd, which podctl does not trust: every field that names a
 * volume, a class or a size is checked before it is used.
 */
const claimProblem = (v: unknown): string | undefined => {
  const c = v as Partial<VolumeClaim> | null
  if (c === null || typeof c !== 'object' || Array.isArray(c)) return 'not a JSON object'
  if (c.version !== 1) return 'unknown version'
  if (typeof c.name !== 'string' || !NAME_RE.test(c.name)) return 'bad name'
  if (typeof c.uid !== 'string' || !CLAIM_UID_RE.test(c.uid)) return 'bad uid'
  if (c.class !== null && (typeof c.class !== 'string' || !NAME_RE.test(c.class))) return 'bad class'
  if (c.size_bytes !== null && !(Number.isSafeInteger(c.size_bytes) && c.size_bytes! > 0)) return 'bad size_bytes'
  if (!['pending', 'bound', 'lost'].includes(c.phase as string)) return 'bad phase'
  if (c.volume !== null && (typeof c.volume !== 'string' || !NAME_RE.test(c.volume))) return 'bad volume'
  if (c.phase === 'bound' && c.volume === null) return 'bound to no volume'
  if (!ACCESS_MODES.includes(c.access_mode as AccessMode)) return 'bad access mode'
  const p = c.provisioning
  // The volume a claim provisions is always named after it (binder.ts).
  if (p !== null && (typeof p !== 'object' || p.volume !== `pvc-${c.uid}` || typeof p.started_at !== 'string')) return 'bad provisioning'
  if (!Number.isSafeInteger(c.failures) || c.failures! < 0) return 'bad failures'
  if (c.retry_at !== null && !isTime(c.retry_at)) return 'bad retry_at'
  if (!Array.isArray(c.events)) return 'bad events'
  return undefined
}

export const CLAIM: ObjectKind<VolumeClaim> = {
  what: 'volume claim',
  dir: 'claims',
  problem: claimProblem,
  missingHint: () => 'see podctl volume claim list; make one with podctl volume claim create NAME --class CLASS --size SIZE',
}

const claimLock = (dataDir: string, name: string): string => {
  checkClaimName(name) // before the name is part of a path
  return path.join(volumeLocksDir(dataDir), `claim.${name}`)
}

/** Runs `fn` holding the claim's lock, waiting up to `timeoutMs` for it (0: LockBusyError at once if held). */
export const withClaimLock = <T>(dataDir: string, name: string, fn: () => T, timeoutMs = DEFAULT_WAIT_MS): T =>
  withVolumeLock(claimLock(dataDir, name), `volume claim ${name}`, { wait: timeoutMs > 0, timeoutMs }, fn)

export const checkClaimName = (name: string): void => {
  if (!NAME_RE.test(name)) {
    throw new PodctlError('EUSAGE', `invalid claim name ${JSON.stringify(name)}: 1 to 63 characters of a-z, 0-9 and "-", starting with a letter or digit`)
  }
}

export const readClaim = (dataDir: string, name: string): VolumeClaim => mustReadObject(dataDir, CLAIM, name)
export const findClaim = (dataDir: string, name: string): VolumeClaim | undefined => readObject(dataDir, CLAIM, name)

/** Writes the claim (the caller holds its lock), with an event when one is given. */
export const saveClaim = (dataDir: string, c: VolumeClaim, event?: { type: EventType; reason: EventReason; message: string }): VolumeClaim => {
  const next = event ? { ...c, events: withEvent(c.events, event.type, event.reason, event.message) } : c
  writeObject(dataDir, CLAIM, c.name, next)
  return next
}

export const listClaims = (dataDir: string): VolumeClaim[] =>
  objectNames(dataDir, CLAIM).flatMap((n) => {
    try {
      const c = readObject(dataDir, CLAIM, n)
      return c ? [c] : []
    } catch {
      return [] // damaged: inspect names it
    }
  })

export interface CreateClaimOptions {
  class?: string
  sizeBytes?: number
  accessMode?: AccessMode
  /** An existing claim of the same name and request is fine (a manifest's claim, made at every prepare). */
  existingOk?: boolean
}

/** Checks a new claim's name and options (EUSAGE); its access mode. */
export const checkClaimOptions = (name: string, opts: CreateClaimOptions): AccessMode => {
  checkClaimName(name)
  const mode = opts.accessMode ?? 'ReadWriteOnce'
  if (!ACCESS_MODES.includes(mode)) throw new PodctlError('EUSAGE', `invalid access mode ${JSON.stringify(mode)}: ReadWriteOnce or ReadWriteMany`)
  if (opts.sizeBytes !== undefined && !(Number.isSafeInteger(opts.sizeBytes) && opts.sizeBytes > 0)) throw new PodctlError('EUSAGE', `invalid size ${opts.sizeBytes}: a positive number of bytes`)
  return mode
}

/** A new pending claim. */
export const newClaim = (name: string, clsName: string | null, mode: AccessMode, opts: CreateClaimOptions): VolumeClaim => ({
  version: 1,
  name,
  uid: randomUUID(),
  class: clsName,
  size_bytes: opts.sizeBytes ?? null,
  access_mode: mode,
  phase: 'pending',
  volume: null,
  created_at: isoTime(),
  bound_at: null,
  provisioned_by: null,
  provisioning: null,
  failures: 0,
  retry_at: null,
  events: [],
})

/** A claim of the name exists already: fine when `existingOk` and it asks for the same, EBADSTATE otherwise. */
export const existingClaim = (old: VolumeClaim, clsName: string | null, opts: CreateClaimOptions): VolumeClaim => {
  if (opts.existingOk && sameRequest(old, clsName, opts.sizeBytes ?? null, opts.accessMode ?? 'ReadWriteOnce')) return old
  throw new PodctlError('EBADSTATE', `volume claim ${old.name} already exists${opts.existingOk ? ' and asks for something else' : ''}`, `see podctl volume claim inspect ${old.name}`)
}

/** What a claim of these options would ask for, to compare with an existing one. */
const sameRequest = (c: VolumeClaim, cls: string | null, size: number | null, mode: AccessMode): boolean =>
  (cls === null || c.class === cls) && (size === null || c.size_bytes === size) && c.access_mode === mode

/**
 * Creates a pending claim. EUSAGE for bad input and ENOVOLUME for an
 * unknown class (nothing written); EBADSTATE if it exists (unless
 * `existingOk` and it asks for the same).
 */
export const createClaim = (dataDir: string, name: string, opts: CreateClaimOptions = {}): VolumeClaim => {
  const mode = checkClaimOptions(name, opts)
  const clsName = opts.class ?? defaultClass(dataDir)?.name ?? null
  const make = (): VolumeClaim =>
    withClaimLock(dataDir, name, () => {
      const old = readObject(dataDir, CLAIM, name)
      if (old) return existingClaim(old, clsName, opts)
      return saveClaim(dataDir, newClaim(name, clsName, mode, opts))
    })
  // Under the class's lock, so that `class rm` sees every claim of its class.
  if (clsName === null) return make()
  return withClassLock(dataDir, clsName, () => {
    if (!readObject(dataDir, CLASS, clsName)) {
      throw new PodctlError('EUSAGE', `unknown volume class ${JSON.stringify(clsName)}`, 'see podctl volume class list; make one with podctl volume class create NAME --provisioner local')
    }
    return make()
  })
}

/** The names of the claims of a class. */
export const claimsOfClass = (dataDir: string, cls: string): string[] => listClaims(dataDir).filter((c) => c.class === cls).map((c) => c.name)

/**
 * The persistent volume a manifest's `"claim": NAME` means: the volume a
 * claim object of that name is bound to, or else the volume named NAME
 * itself (CONTRACT §7, unchanged). EBADSTATE for a claim not bound yet.
 */
export const volumeOfClaim = (dataDir: string, name: string): string => {
  const c = findClaim(dataDir, name)
  if (c === undefined) return name
  if (c.phase !== 'bound' || c.volume === null) {
    throw new PodctlError('EBADSTATE', `volume claim ${name} is ${c.phase}, not bound to a volume`, `see podctl volume claim inspect ${name}`)
  }
  return c.volume
}
