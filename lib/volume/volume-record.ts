/**
 * A provisioned volume's record as read back from a fleet's etcd, checked
 * like any input (CONTRACT §8): whoever can write the prefix must not be
 * able to make a node run a program, use a path or trust a size that no
 * provisioner answered. The data dir's own records are its owner's and
 * are read as written.
 */
import { NAME_RE } from '../pod/manifest.js'
import { volumePathProblem } from './answer-path.js'
import { CLAIM_UID_RE } from './claims.js'
import { provisionerProblem } from './classes.js'
import { ACCESS_MODES, RECLAIM_POLICIES, type PvRecord } from './persistent.js'

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)
const isCount = (v: unknown): boolean => Number.isSafeInteger(v) && (v as number) >= 0
const isStringMap = (v: unknown): v is Record<string, string> => isObject(v) && Object.values(v).every((x) => typeof x === 'string')

/** What is wrong with `v` as a volume record of a fleet, or undefined. */
export const fleetVolumeProblem = (v: unknown): string | undefined => {
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
  if (r.name !== `pvc-${ref.uid}`) return `its name is not pvc-<uid of its claim> (pvc-${ref.uid})`
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
