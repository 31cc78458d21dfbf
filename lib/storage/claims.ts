/** Volume claims (CONTRACT §8), requests for a volume, and how a stored one is checked; a store keeps them. */
import { PodctlError } from '../errors.js'
import { NAME_RE, type AccessMode } from '../pod/manifest.js'
import { randomUUID } from '../pod/pod.js'
import { isoTime } from '../pod/record.js'
import { ACCESS_MODES } from './access-modes.js'
import { checkName, isObject, type ObjectEvent, type ObjectKind } from './objects.js'

/** `pending` until bound, then `bound`; `lost` when its volume disappeared. */
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
  /** The volume being provisioned, from the first call to the provisioner until the claim is bound: a call cut short by a crash is made again for the same name. */
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

/** What is wrong with a claim as stored, if anything: a fleet's come from etcd, which podctl does not trust. */
const claimProblem = (v: unknown): string | undefined => {
  if (!isObject(v)) return 'not a JSON object'
  const c = v as Partial<VolumeClaim>
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
  if (c.retry_at !== null && (typeof c.retry_at !== 'string' || Number.isNaN(Date.parse(c.retry_at)))) return 'bad retry_at'
  if (!Array.isArray(c.events)) return 'bad events'
  return undefined
}

export const CLAIM: ObjectKind<VolumeClaim> = {
  what: 'volume claim',
  dir: 'claims',
  problem: claimProblem,
  missingHint: () => 'see podctl volume claim list; make one with podctl volume claim create NAME --class CLASS --size SIZE',
}

export interface CreateClaimOptions {
  class?: string
  sizeBytes?: number
  accessMode?: AccessMode
  /** An existing claim of the same name and request is fine (a manifest's claim, made at every prepare). */
  existingOk?: boolean
}

/** Checks a new claim's name and options (EUSAGE); its access mode. */
export const checkClaimOptions = (name: string, opts: CreateClaimOptions): AccessMode => {
  checkName('claim', name)
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
  const same = (clsName === null || old.class === clsName) && (opts.sizeBytes === undefined || old.size_bytes === opts.sizeBytes) && old.access_mode === (opts.accessMode ?? 'ReadWriteOnce')
  if (opts.existingOk && same) return old
  throw new PodctlError('EBADSTATE', `volume claim ${old.name} already exists${opts.existingOk ? ' and asks for something else' : ''}`, `see podctl volume claim inspect ${old.name}`)
}

/** Claim `c` bound to volume `v`, its provisioning and failures done with. */
export const boundTo = (c: VolumeClaim, v: { name: string; provisioned?: { by: string } | null }): VolumeClaim => ({
  ...c,
  phase: 'bound',
  volume: v.name,
  bound_at: isoTime(),
  provisioned_by: v.provisioned?.by ?? null,
  provisioning: null,
  failures: 0,
  retry_at: null,
})
