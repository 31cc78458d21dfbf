/**
 * A node's name in the fleet, held like a lease (CONTRACT §11): `nodes/<node>`,
 * put only if absent under its controller's etcd lease. A second controller
 * of a live name is refused: two publishers of one node would each delete the
 * other's pods from the view.
 */
import os from 'node:os'
import type { Cluster, ClusterLease } from '../cluster/client.js'
import { KEYS, parseObject } from '../cluster/keys.js'
import { PodctlError, oneLine } from '../errors.js'
import { formatOwner, ownerAlive, ownOwner, parseOwner } from '../lock/owner.js'

/** What `nodes/<node>` holds. */
export interface NodeKey {
  name: string
  version: string
  registered_at: string
  /** The controller holding the name: its identity, host, and owner record (pid, start time, boot, host). */
  holder: string
  host: string
  owner: string
  /** This registration's own mark: its holder tells its own key from another's. */
  instance: string
}

/** Whether the holder recorded in a key is a process of this host that has ended (another host's is judged by its lease alone). */
const deadHere = (k: Partial<NodeKey> | undefined): boolean => {
  const o = typeof k?.owner === 'string' ? parseOwner(k.owner) : undefined
  return o !== undefined && o.host === ownOwner().host && !ownerAlive(o, () => undefined)
}

/** A live controller holds this node's name already. */
export class NodeTaken extends PodctlError {
  constructor(node: string, k: Partial<NodeKey> | undefined) {
    const who = k?.holder !== undefined ? `controller ${oneLine(String(k.holder))}${k.host !== undefined ? ` on host ${oneLine(String(k.host))}` : ''}` : 'another controller'
    super('EFAILED', `node ${node} is alive in the fleet: ${who} holds the name${k?.registered_at !== undefined ? ` (registered ${oneLine(String(k.registered_at))})` : ''}`, `stop that controller first, or give this one another name: --node NAME`)
  }
}

/** Puts `nodes/<node>` under `lease` (again after a lost lease, with the same `instance`); NodeTaken when a live controller holds it. */
export const registerNode = async (cluster: Cluster, lease: ClusterLease, me: Pick<NodeKey, 'name' | 'version' | 'holder' | 'instance'>): Promise<void> => {
  const key = `${KEYS.nodes}${me.name}`
  const value: NodeKey = {
    name: me.name,
    version: me.version,
    registered_at: new Date().toISOString(),
    holder: me.holder,
    host: os.hostname(),
    owner: formatOwner(ownOwner()),
    instance: me.instance,
  }
  const write = { put: key, value: JSON.stringify(value), lease }
  for (let attempt = 0; attempt < 5; attempt++) {
    if (await cluster.commit([{ key, created: '0' }], [write])) return
    const held = await cluster.get(key)
    if (held === undefined) continue // its lease ran out just now
    const k = parseObject<Partial<NodeKey>>(held.value)
    // Its own key from before a lost lease, or a dead process's of this host (killed and restarted before its lease ran out): taken over, if unchanged meanwhile.
    if (k?.instance !== me.instance && !deadHere(k)) throw new NodeTaken(me.name, k)
    if (await cluster.commit([{ key, mod: held.modRevision }], [write])) return
  }
  throw new NodeTaken(me.name, parseObject<Partial<NodeKey>>((await cluster.get(key))?.value))
}
