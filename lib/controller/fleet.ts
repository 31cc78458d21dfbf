/**
 * The fleet view: each cluster controller registers its node under an etcd
 * lease and publishes its pods. Pod keys outlive the lease, so a lost node's
 * pods show `unknown` until it returns or `node rm` forgets it (Documentation/fleet.md).
 */
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import type { Cluster, ClusterLease } from '../cluster/client.js'
import { KEYS, parseObject } from '../cluster/keys.js'
import { PodctlError } from '../errors.js'
import { ensureDataDir, locksDir, POD_DIRS, stateDirPath } from '../pod/layout.js'
import { podView, type PodView } from '../pod/view.js'
import { Include, listPods } from '../pod/walk.js'
import { forgetNode, reconcileAttachments } from '../storage/fleet/attachments.js'
import { unlessError } from '../storage/objects.js'
import { NodeTaken, registerNode } from './node-key.js'

/** A pod as the fleet shows it: its JSON, the node it is on, and whether that node is lost. */
export type FleetPodView = Omit<PodView, 'state'> & { state: PodView['state'] | 'unknown'; node: string; node_lost: boolean }

export interface NodeView {
  name: string
  /** When its controller last published (RFC 3339). */
  last_seen: string | null
  lost: boolean
  /** Its pods, counted by state. */
  pods: Record<string, number>
  version: string | null
}

const stringOrNull = (x: unknown): boolean => x === null || x === undefined || typeof x === 'string'

/** Whether a summary read from etcd has the fields list and status show, and is the pod its key names. */
const podShaped = (v: PodView | undefined, uuid: string | undefined): v is PodView =>
  v !== undefined &&
  v.uuid === uuid &&
  typeof v.state === 'string' &&
  Array.isArray(v.apps) &&
  v.apps.every((a) => a !== null && typeof a === 'object' && typeof a.name === 'string') &&
  stringOrNull(v.name) &&
  stringOrNull(v.created_at) &&
  stringOrNull(v.started_at)

/** The nodes whose controllers are alive now. */
const liveNodes = async (cluster: Cluster): Promise<Set<string>> => new Set([...(await cluster.list(KEYS.nodes)).keys()].map((k) => k.slice(KEYS.nodes.length)))

/** Every pod of the fleet; a lost node's pods are `unknown`, with `node_lost`. */
export const fleetPods = async (cluster: Cluster): Promise<FleetPodView[]> => {
  const [live, pods] = await Promise.all([liveNodes(cluster), cluster.list(KEYS.pods)])
  return [...pods].flatMap(([key, value]): FleetPodView[] => {
    const [, node = '', uuid] = key.split('/')
    const v = parseObject<PodView>(value)
    if (!podShaped(v, uuid)) return [] // not podctl's, or damaged: left alone
    const lost = !live.has(node)
    return [{ ...v, ...(lost ? { state: 'unknown' as const } : {}), node, node_lost: lost }]
  })
}

/** The fleet's nodes: those alive, and those that published pods or info before. */
export const fleetNodes = async (cluster: Cluster): Promise<NodeView[]> => {
  const [live, info, pods] = await Promise.all([liveNodes(cluster), cluster.list(KEYS.nodeInfo), fleetPods(cluster)])
  const nodes = new Map<string, NodeView>()
  const node = (name: string): NodeView => {
    let n = nodes.get(name)
    if (n === undefined) nodes.set(name, (n = { name, last_seen: null, lost: !live.has(name), pods: {}, version: null }))
    return n
  }
  for (const name of live) node(name)
  for (const [key, value] of info) {
    const i = parseObject<{ version: string; last_seen: string }>(value)
    const n = node(key.slice(KEYS.nodeInfo.length))
    if (i !== undefined) Object.assign(n, { last_seen: i.last_seen, version: i.version })
  }
  for (const p of pods) node(p.node).pods[p.state] = (node(p.node).pods[p.state] ?? 0) + 1
  return [...nodes.values()].sort((a, b) => (a.name < b.name ? -1 : 1))
}

/** Forgets a lost node: its pods, its info and its entries in claims' attachments. A node whose controller lives is refused (exit 4). */
export const removeNode = async (cluster: Cluster, name: string): Promise<void> => {
  if ((await liveNodes(cluster)).has(name)) {
    throw new PodctlError('EBADSTATE', `node ${name} is alive: its controller publishes its pods`, `stop its controller first (on ${name}), or wait until its lease has expired`)
  }
  const known = (await cluster.get(`${KEYS.nodeInfo}${name}`)) !== undefined || (await cluster.list(`${KEYS.pods}${name}/`)).size > 0
  if (!known) throw new PodctlError('ENOPOD', `no node named ${JSON.stringify(name)} in the fleet`, 'see podctl node list --cluster …')
  await forgetNode(cluster, name)
  await cluster.deletePrefix(`${KEYS.pods}${name}/`)
  await cluster.delete(`${KEYS.nodeInfo}${name}`)
}

export interface PublisherOptions {
  node: string
  /** The controller that publishes (its identity): named by the node's key, and in the refusal of a second one. */
  holder: string
  version: string
  /** The node's lease (s): its pods show as lost this long after its controller died. */
  ttlS: number
  /** A full republish at least this often (ms), besides the changes seen by watching the state dirs. */
  resyncMs: number
  log: (message: string) => void
  /** A live controller took this node's name while this one's lease was lost: this one must stop. */
  onTaken?: (er: NodeTaken) => void
}

/** How long after a change in a state dir the pods are published: changes come in bursts (a rename, then a record). */
const DEBOUNCE_MS = 100

/** Publishes a node's pods for its controller, each when its JSON changes (Documentation/devel/fleet.md); registers again after a lost lease. */
export class FleetPublisher {
  readonly #dataDir: string
  readonly #cluster: Cluster
  readonly #opts: PublisherOptions
  /** What etcd has for each local pod, as published: JSON text by UUID. */
  #published = new Map<string, string>()
  #lease: ClusterLease | undefined
  #watchers: fs.FSWatcher[] = []
  #resync: NodeJS.Timeout | undefined
  #pending: NodeJS.Timeout | undefined
  #running: Promise<void> | undefined
  #stopped = false
  #lastInfo = 0
  /** This controller's mark on its node's key, the same after a lost lease. */
  readonly #instance = randomUUID()
  /** The claims each pod names, read once a pod (its volumes do not change). */
  readonly #claims = new Map<string, string[]>()

  constructor(dataDir: string, cluster: Cluster, opts: PublisherOptions) {
    this.#dataDir = dataDir
    this.#cluster = cluster
    this.#opts = opts
  }

  /** Registers the node and starts publishing; NodeTaken when a live controller holds the name (etcd not answering is logged, and tried again). */
  async start(): Promise<void> {
    try {
      await this.#register()
    } catch (er) {
      if (er instanceof NodeTaken) throw er
      this.#opts.log(`fleet: ${(er as Error).message}; trying again in ${Math.round(this.#opts.resyncMs / 1000)}s`)
    }
    // A new node's data dir has no state dirs yet, and a watch needs them: made first, as run would.
    ensureDataDir(this.#dataDir)
    // A pod moves between state dirs, or its lock comes and goes (a running
    // pod that exits stays in run/): either is a change of its state. A dir that
    // cannot be watched (none, or no watch left) is the resync's, as is one removed later.
    for (const dir of [...POD_DIRS.map((d) => stateDirPath(this.#dataDir, d)), locksDir(this.#dataDir)]) {
      unlessError(() => this.#watchers.push(fs.watch(dir, { persistent: false }, () => this.#soon()).on('error', () => undefined)))
    }
    this.#resync = setInterval(() => this.#soon(), this.#opts.resyncMs)
    this.#soon()
  }

  /** Stops publishing, and revokes the lease so that the fleet sees the node lost at once; an etcd that does not answer holds it `waitMs` at most. */
  async stop(waitMs = 200): Promise<void> {
    this.#stopped = true
    for (const w of this.#watchers) w.close()
    clearInterval(this.#resync)
    clearTimeout(this.#pending)
    await Promise.race([this.#running?.catch(() => undefined), new Promise((r) => setTimeout(r, waitMs).unref())])
    await this.#lease?.revoke().catch(() => undefined) // etcd gone: the lease expires by itself
  }

  /** Publishes after DEBOUNCE_MS; one publish at a time, so one due while another runs waits for it. */
  #soon(): void {
    if (this.#stopped || this.#pending !== undefined) return
    this.#pending = setTimeout(() => {
      this.#pending = undefined
      if (this.#running !== undefined) return this.#soon()
      this.#running = this.#publish()
        .catch((er: unknown) => {
          if (er instanceof NodeTaken) {
            this.#stopped = true
            this.#opts.log(`fleet: ${er.message}`)
            return this.#opts.onTaken?.(er)
          }
          this.#opts.log(`fleet: ${(er as Error).message}; trying again in ${Math.round(this.#opts.resyncMs / 1000)}s`)
        })
        .finally(() => (this.#running = undefined))
    }, DEBOUNCE_MS)
  }

  async #register(): Promise<void> {
    const node = this.#opts.node
    // Set once granted: a grant that fails reports 'lost' too, before there is a lease to compare.
    let granted: ClusterLease | undefined
    const lease = await this.#cluster.grantLease(this.#opts.ttlS, (why) => {
      // Only the lease in use is news here: one lost while it was being registered is #register's own to find.
      if (this.#stopped || granted === undefined || this.#lease !== granted) return
      this.#opts.log(`fleet: node ${node}'s lease is lost (${why}); registering again`)
      this.#soon()
    })
    granted = lease
    try {
      await registerNode(this.#cluster, lease, { name: node, version: this.#opts.version, holder: this.#opts.holder, instance: this.#instance })
      // The key was put, but the client gave the lease up meanwhile (etcd was electing a leader, say): no one would
      // renew it, so the key would go at its TTL and the node stay lost. Another lease, at the next try.
      if (lease.lost()) throw new PodctlError('EFAILED', `node ${node}'s new lease ran out while the node was being registered`)
    } catch (er) {
      void lease.revoke().catch(() => undefined)
      throw er
    }
    this.#lease = lease
    // What etcd holds for this node from before (a restart): compared, so that pods gone meanwhile are removed.
    const mine = `${KEYS.pods}${node}/`
    this.#published = new Map([...(await this.#cluster.list(mine))].map(([k, v]) => [k.slice(mine.length), v]))
    this.#opts.log(`fleet: node ${node} registered (lease ${this.#opts.ttlS}s)`)
  }

  async #publish(): Promise<void> {
    // lost() and not only the 'lost' event: etcd3 can also give a lease up without a word.
    if (this.#lease === undefined || this.#lease.lost()) await this.#register()
    const node = this.#opts.node
    const now = new Map<string, string>()
    for (const pod of listPods(this.#dataDir, Include.all)) {
      try {
        now.set(pod.uuid, JSON.stringify({ ...podView(pod), node }))
      } finally {
        pod.close()
      }
    }
    for (const [uuid, json] of now) {
      if (this.#published.get(uuid) === json) continue
      await this.#cluster.put(`${KEYS.pods}${node}/${uuid}`, json)
      this.#published.set(uuid, json)
    }
    for (const uuid of [...this.#published.keys()]) {
      if (now.has(uuid)) continue
      await this.#cluster.delete(`${KEYS.pods}${node}/${uuid}`)
      this.#published.delete(uuid)
    }
    for (const uuid of this.#claims.keys()) if (!now.has(uuid)) this.#claims.delete(uuid)
    // Which pods of this node use the fleet's claims, and run: a pod's exit lets another node have a ReadWriteOnce claim.
    await reconcileAttachments(this.#cluster, node, this.#dataDir, () => this.#using())
    if (Date.now() - this.#lastInfo >= Math.min(this.#opts.resyncMs, 5_000)) {
      await this.#cluster.put(`${KEYS.nodeInfo}${node}`, JSON.stringify({ name: node, version: this.#opts.version, last_seen: new Date().toISOString() }))
      this.#lastInfo = Date.now()
    }
  }

  /** The pods of this node by the claim their manifests name. */
  #using(): Map<string, string[]> {
    const using = new Map<string, string[]>()
    for (const pod of listPods(this.#dataDir, Include.all)) {
      try {
        let claims = this.#claims.get(pod.uuid)
        if (claims === undefined) this.#claims.set(pod.uuid, (claims = (pod.podManifest().manifest.volumes ?? []).flatMap((v) => (v.kind === 'persistent' ? [v.claim] : []))))
        for (const c of claims) using.set(c, [...(using.get(c) ?? []), pod.uuid])
      } catch {
        // no manifest yet (an embryo), or a damaged one: none, and read again next time
      } finally {
        pod.close()
      }
    }
    return using
  }
}

