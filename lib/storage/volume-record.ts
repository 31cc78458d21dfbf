/**
 * A persistent volume's record: `<data>/volumes/<name>/volume.json`, or
 * `<prefix>volumes/<name>` in a fleet's etcd, where it is checked as input
 * (CONTRACT §8): whoever can write the prefix must not choose a program, a
 * path or a size. The data dir's own records are read as written.
 */
import { NAME_RE, type AccessMode } from '../pod/manifest.js'
import { isoTime } from '../pod/record.js'
import { ACCESS_MODES } from './access-modes.js'
import { volumePathProblem } from './answer-path.js'
import { CLAIM_UID_RE } from './claims.js'
import { provisionerProblem, RECLAIM_POLICIES, type ReclaimPolicy } from './classes.js'
import { isObject, type ObjectEvent, type ObjectKind } from './objects.js'

export interface PvRecord {
  version: 1
  name: string
  created_at: string
  reclaim: ReclaimPolicy
  access_mode: AccessMode
  size_limit_bytes: number | null
  /** "recycling" from a scrub's start until the data is checked empty; "released" from its claim's removal until its policy is applied. */
  phase: 'available' | 'recycling' | 'released'
  recycled_at: string | null
  /** The claim object this volume is bound to: its reclaim policy then applies when the claim goes, not when a pod does. */
  claim_ref?: ClaimRef | null
  /** How a provisioned volume was made, for its deletion (the class may be gone by then). */
  provisioned?: Provisioned | null
  /** Its last events (VolumeFailedDelete), as a claim keeps its own. */
  events?: ObjectEvent[]
}

export type ClaimRef = { name: string; uid: string }

export interface Provisioned {
  class: string
  provisioner: string
  parameters: Record<string, string>
  /** Where the data is, when a provisioner made it elsewhere than the volume's own data/ directory. */
  path: string | null
  capacity_bytes: number | null
  /** The identity of who provisioned it (controller or command). */
  by: string
  /** In a fleet: the node whose data dir holds a `local` volume (its class's `node` parameter). */
  node?: string | null
  /** This record is a node's copy of a volume of the fleet (lib/storage/pod-claims.ts), not the volume's truth. */
  fleet?: boolean
}

export interface CreateVolumeOptions {
  reclaim?: ReclaimPolicy
  accessMode?: AccessMode
  sizeLimitBytes?: number | null
  claimRef?: ClaimRef
  provisioned?: Provisioned
}

/** A new, available volume's record. */
export const newVolumeRecord = (name: string, opts: CreateVolumeOptions): PvRecord => ({
  version: 1,
  name,
  created_at: isoTime(),
  reclaim: opts.reclaim ?? 'retain',
  access_mode: opts.accessMode ?? 'ReadWriteOnce',
  size_limit_bytes: opts.sizeLimitBytes ?? null,
  phase: 'available',
  recycled_at: null,
  ...(opts.claimRef ? { claim_ref: opts.claimRef } : {}),
  ...(opts.provisioned ? { provisioned: opts.provisioned } : {}),
})

/** Provisioned volumes are named pvc-<claim uid>, and no other may be: the binder tells them from static volumes by name. */
export const provisionedName = (claimUid: string): string => `pvc-${claimUid}`
export const isProvisionedName = (name: string): boolean => name.startsWith('pvc-') && CLAIM_UID_RE.test(name.slice('pvc-'.length))

const isCount = (v: unknown): boolean => Number.isSafeInteger(v) && (v as number) >= 0
const isStringMap = (v: unknown): v is Record<string, string> => isObject(v) && Object.values(v).every((x) => typeof x === 'string')

/** What is wrong with `v` as a volume record of a fleet, or undefined. */
const fleetVolumeProblem = (v: unknown): string | undefined => {
  if (!isObject(v)) return 'not a JSON object'
  const r = v as Partial<PvRecord>
  if (r.version !== 1) return 'unknown version'
  if (typeof r.name !== 'string' || !NAME_RE.test(r.name)) return 'bad name'
  if (typeof r.created_at !== 'string') return 'bad created_at'
  if (!RECLAIM_POLICIES.includes(r.reclaim!)) return 'bad reclaim policy'
  if (!ACCESS_MODES.includes(r.access_mode!)) return 'bad access mode'
  if (r.size_limit_bytes !== null && !isCount(r.size_limit_bytes)) return 'bad size_limit_bytes'
  if (r.phase !== 'available' && r.phase !== 'released') return 'bad phase'
  if (r.recycled_at !== null && r.recycled_at !== undefined && typeof r.recycled_at !== 'string') return 'bad recycled_at'
  if (r.events !== undefined && !Array.isArray(r.events)) return 'bad events'
  const ref = r.claim_ref
  if (!isObject(ref) || typeof ref.name !== 'string' || !NAME_RE.test(ref.name) || typeof ref.uid !== 'string' || !CLAIM_UID_RE.test(ref.uid)) return 'bad claim_ref'
  // A fleet's volumes are all provisioned, each named after its claim.
  if (r.name !== provisionedName(ref.uid)) return `its name is not pvc-<uid of its claim> (${provisionedName(ref.uid)})`
  const p = r.provisioned
  if (!isObject(p)) return 'bad provisioned'
  if (typeof p.class !== 'string' || !NAME_RE.test(p.class)) return 'bad provisioned.class'
  if (typeof p.provisioner !== 'string' || provisionerProblem(p.provisioner, true) !== undefined) return `bad provisioned.provisioner ${JSON.stringify(p.provisioner)}: a fleet names its provisioners (exec:NAME)`
  if (!isStringMap(p.parameters)) return 'bad provisioned.parameters'
  if (p.capacity_bytes !== null && !isCount(p.capacity_bytes)) return 'bad provisioned.capacity_bytes'
  if (typeof p.by !== 'string') return 'bad provisioned.by'
  if (p.node !== undefined && p.node !== null && (typeof p.node !== 'string' || !NAME_RE.test(p.node))) return 'bad provisioned.node'
  if (p.provisioner === 'local') {
    if (p.path !== null) return 'a local volume with a path of its own'
    if (typeof p.node !== 'string') return 'a local volume of no node'
    return undefined
  }
  const bad = volumePathProblem(p.path, { root: p.parameters.root })
  return bad ? `bad provisioned.path ${JSON.stringify(p.path)}: ${bad}` : undefined
}

/** A fleet's volume record. */
export const FLEET_VOLUME: ObjectKind<PvRecord> = {
  what: 'fleet volume',
  dir: 'volumes',
  problem: fleetVolumeProblem,
  missingHint: () => 'see podctl volume claim list --cluster',
}
