/**
 * A node's name in the fleet is held like a lease (CONTRACT §11): the key
 * `nodes/<node>` is put only if absent, bound to its controller's etcd
 * lease, and names its holder. A second controller that registers a name
 * whose key is alive is refused: two publishers of one node would each
 * delete the other's pods from the view. The key of a holder that is
 * gone (its lease ran out) is gone with it; one left by a process of this
 * host that is dead now (a controller killed and restarted at once, before
 * its lease ran out) is taken over, as a lock of a dead holder is.
 */
import { randomUUID } from 'node:crypto'
import os from 'node:os'
import type { Cluster, ClusterLease } from '../cluster/client.js'
import { KEYS } from '../cluster/keys.js'
import { PodctlError, oneLine } from '../errors.js'
import { formatOwner, ownOwner, parseOwner } from '../lock/owner.js'
import { processAlive } from '../proc/identity.js'

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

const parse = (text: string): Partial<NodeKey> | undefined => {
  try {
    const v = JSON.parse(text) as unknown
    return v !== null && typeof v === 'object' ? (v as Partial<NodeKey>) : undefined
  } catch {
    return undefined
  }
}

/** Whether the holder recorded in a key is a process of this host that has ended. */
const deadHere = (k: Partial<NodeKey>): boolean => {
  const o = typeof k.owner === 'string' ? parseOwner(k.owner) : undefined
  const me = ownOwner()
  if (o === undefined || o.host !== me.host) return false
  return o.boot !== me.boot || !processAlive(o.pid, o.start)
}

/** A live controller holds this node's name already. */
export class NodeTaken extends PodctlError {
  constructor(node: string, k: Partial<NodeKey> | undefined) {
    const who = k?.holder !== undefined ? `controller ${oneLine(String(k.holder))}${k.host !== undefined ? ` on host ${oneLine(String(k.host))}` : ''}` : 'another controller'
    super('EFAILED', `node ${node} is alive in the fleet: ${who} holds the name${k?.registered_at !== undefined ? ` (registered ${oneLine(String(k.registered_at))})` : ''}`, `stop that controller first, or give this one another name: --node NAME`)
  }
}

/** How one controller registers its node, again after each lost lease, under the same mark. */
export class NodeRegistration {
  readonly #cluster: Cluster
  readonly #node: string
  readonly #holder: string
  readonly #version: string
  readonly #instance = randomUUID()

  constructor(cluster: Cluster, node: string, holder: string, version: string) {
    this.#cluster = cluster
    this.#node = node
    this.#holder = holder
    this.#version = version
  }

  /** Puts `nodes/<node>` under `lease`; NodeTaken when a live controller holds it. */
  async register(lease: ClusterLease): Promise<void> {
    const key = `${KEYS.nodes}${this.#node}`
    const value: NodeKey = {
      name: this.#node,
      version: this.#version,
      registered_at: new Date().toISOString(),
      holder: this.#holder,
      host: os.hostname(),
      owner: formatOwner(ownOwner()),
      instance: this.#instance,
    }
    const write = { put: key, value: JSON.stringify(value), lease }
    for (let attempt = 0; attempt < 5; attempt++) {
      if (await this.#cluster.commit([{ key, created: '0' }], [write])) return
      const held = await this.#cluster.get(key)
      if (held === undefined) continue // its lease ran out just now
      const k = parse(held.value)
      // Its own key from before a lost lease, or a dead process's of this host: taken over, if unchanged meanwhile.
      if (k?.instance === this.#instance || (k !== undefined && deadHere(k))) {
        if (await this.#cluster.commit([{ key, mod: held.modRevision }], [write])) return
        continue
      }
      throw new NodeTaken(this.#node, k)
    }
    throw new NodeTaken(this.#node, parse((await this.#cluster.get(key))?.value ?? ''))
  }
}
