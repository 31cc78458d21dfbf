/**
 * Which nodes' pods use a fleet claim, as Kubernetes' VolumeAttachment:
 * `<prefix>attachments/<claim>`, each node writing its own entry from its
 * data dir (Documentation/devel/fleet.md, Attachments).
 */
import type { Cluster, Guard, Write } from '../../cluster/client.js'
import { KEYS } from '../../cluster/keys.js'
import { PodctlError } from '../../errors.js'
import { isLocked, isRunning } from '../../pod/locks.js'
import { NAME_RE } from '../../pod/manifest.js'
import { CLAIM, CLAIM_UID_RE, type VolumeClaim } from '../claims.js'
import { listObjects, unlessError } from '../objects.js'
import type { ClaimUser } from '../store.js'
import { podsUsingClaim } from '../local/store.js'

interface Entry {
  pods: string[]
  running: string[]
}

export interface Attachment {
  claim: string
  /** The claim's uid: a record of an older claim of the name is none of this one's. */
  uid: string
  nodes: Record<string, Entry>
}

const keyOf = (claim: string): string => `${KEYS.attachments}${claim}`
const isUuids = (v: unknown): boolean => Array.isArray(v) && v.every((u) => typeof u === 'string' && CLAIM_UID_RE.test(u))

/** A record read from etcd, checked like any input; null when it is damaged. */
const parse = (text: string, claim: string): Attachment | null => {
  const a = unlessError(() => JSON.parse(text) as Attachment | null)
  const nodes = Object.entries(a?.nodes ?? {}) as [string, Partial<Entry>][]
  return a?.claim === claim && CLAIM_UID_RE.test(a.uid) && nodes.every(([n, e]) => NAME_RE.test(n) && isUuids(e.pods) && isUuids(e.running)) ? a : null
}

/** Claim `name`'s record (undefined if none, null if damaged) and the guard a write of it must add. */
const read = async (cluster: Cluster, name: string): Promise<{ a: Attachment | null | undefined; guard: Guard }> => {
  const kv = await cluster.get(keyOf(name))
  return { a: kv && parse(kv.value, name), guard: kv ? { key: keyOf(name), mod: kv.modRevision } : { key: keyOf(name), created: '0' } }
}

/** Claim `c`'s attachment, and the guard a write of it must add; EFAILED when it is damaged. */
export const readAttachment = async (cluster: Cluster, c: VolumeClaim): Promise<{ a: Attachment; guard: Guard }> => {
  const { a, guard } = await read(cluster, c.name)
  if (a === null) throw new PodctlError('EFAILED', `the attachment of volume claim ${c.name} is damaged in etcd`, `look at it: etcdctl get ${cluster.options.prefix}${keyOf(c.name)}`)
  return { a: a?.uid === c.uid ? a : { claim: c.name, uid: c.uid, nodes: {} }, guard }
}

/** The pods of other nodes than `node` that use the claim. */
export const usersOf = (a: Attachment, node: string): ClaimUser[] => Object.entries(a.nodes).flatMap(([n, e]) => (n === node ? [] : e.pods.map((pod) => ({ pod, node: n }))))

/**
 * `node`'s entry from its data dir: `pods` (default: those that name claim
 * `name`) and, as running, `starting` and those that run. A pod not yet in
 * run/ runs only if `attached` (the record) says so: one refused while it
 * prepares is never published as running.
 */
export const localEntry = (dataDir: string, name: string, attached: readonly string[], starting?: string, pods = podsUsingClaim(dataDir, name)): Entry => {
  const all = [...new Set([...pods, ...(starting === undefined ? [] : [starting])])].sort()
  const runs = (u: string): boolean => u === starting || (attached.includes(u) ? isLocked(dataDir, u) : isRunning(dataDir, u))
  return { pods: all, running: all.filter(runs) }
}

/** The write that gives `node` entry `e` in `a` (none when it lists no pod; the record goes with its last entry). */
export const withEntry = (a: Attachment, node: string, e: Entry | undefined): Write => {
  const nodes = { ...a.nodes }
  if (e && e.pods.length > 0) nodes[node] = e
  else delete nodes[node]
  return Object.keys(nodes).length > 0 ? { put: keyOf(a.claim), value: JSON.stringify({ ...a, nodes }) } : { delete: keyOf(a.claim) }
}

/** Changes `node`'s entry of claim `name`'s record (if it has one) to `entry(current)`, guarded; false when someone changed it first. */
const rewrite = async (cluster: Cluster, name: string, node: string, entry: (a: Attachment) => Entry | undefined, uid?: string): Promise<boolean> => {
  const r = await read(cluster, name)
  const a = r.a === undefined && uid !== undefined ? { claim: name, uid, nodes: {} } : r.a
  if (!a) return true // none, or damaged: named where it is used
  return (await cluster.commit([r.guard], [withEntry(a, node, entry(a))])) !== undefined
}

/**
 * Brings this node's entries up to date with its data dir: for each claim
 * it keeps a copy of (a pod of it ran with the claim), or has an entry
 * for. `using`: the node's pods by the claims their manifests name.
 */
export const reconcileAttachments = async (cluster: Cluster, node: string, dataDir: string, using: () => ReadonlyMap<string, string[]>): Promise<void> => {
  const copies = new Map(listObjects(dataDir, CLAIM).flatMap((c) => (c.fleet ? [[c.name, c.uid] as const] : [])))
  const recorded = new Map([...(await cluster.list(KEYS.attachments))].map(([k, v]) => [k.slice(KEYS.attachments.length), parse(v, k.slice(KEYS.attachments.length))]))
  const names = new Set([...copies.keys(), ...[...recorded].flatMap(([n, a]) => (a?.nodes[node] ? [n] : []))])
  // The pods' manifests are read only on a node that has something to say.
  const pods = names.size > 0 ? using() : new Map<string, string[]>()
  for (const name of names) {
    const want = (a: Attachment | undefined): Entry => localEntry(dataDir, name, a?.nodes[node]?.running ?? [], undefined, pods.get(name) ?? [])
    const a = recorded.get(name)
    if (a === null) continue
    const now = want(a)
    if (JSON.stringify(a?.nodes[node] ?? { pods: [], running: [] }) === JSON.stringify(now) || (a === undefined && now.pods.length === 0)) continue
    // Worked out again from the record the write is guarded by; a changed record is looked at again at the next publish.
    await rewrite(cluster, name, node, want, a?.uid ?? copies.get(name))
  }
}

/** `node rm`: the node's entries go, with its pods. */
export const forgetNode = async (cluster: Cluster, node: string): Promise<void> => {
  for (const [k, v] of await cluster.list(KEYS.attachments)) {
    const name = k.slice(KEYS.attachments.length)
    if (!parse(v, name)?.nodes[node]) continue
    for (let tries = 0; !(await rewrite(cluster, name, node, () => undefined)); tries++) {
      if (tries >= 5) throw new PodctlError('EBADSTATE', `the attachment of volume claim ${name} kept changing`, 'try again')
    }
  }
}
