/**
 * The fleet view (a node's pods, seen from every node): each cluster
 * controller registers its node under an etcd lease and publishes a
 * summary of each local pod; any node reads them back.
 *
 * Keys, under the cluster prefix:
 *   nodes/<node>        {"name","version","registered_at","holder",...},
 *                       bound to the node's lease: present while its
 *                       controller lives (node-key.ts: one holder a name)
 *   node-info/<node>    {"name","version","last_seen"}: stays when the node
 *                       is lost, for `node list`
 *   pods/<node>/<uuid>  the pod's JSON (the same as `status --format json`)
 * Pod keys are not bound to the lease: a node that is lost keeps its pods
 * in the view, as `unknown` with `node_lost: true`, until it returns (its
 * own truth replaces them) or `node rm` forgets it.
 */
import fs from 'node:fs'
import type { Cluster, ClusterLease } from '../cluster/client.js'
import { KEYS } from '../cluster/keys.js'
import { PodctlError } from '../errors.js'
import { ensureDataDir, locksDir, POD_DIRS, stateDirPath } from '../pod/layout.js'
import { podView, type PodView } from '../pod/view.js'
import { Include, listPods } from '../pod/walk.js'
import { forgetNode, reconcileAttachments } from '../storage/fleet/attachments.js'
import { NodeRegistration, NodeTaken } from './node-key.js'

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

interface NodeInfo {
  name: string
  version: string
  last_seen: string
}

const parse = <T>(text: string): T | undefined => {
  try {
    return JSON.parse(text) as T
  } catch {
    return undefined
  }
}

const stringOrNull = (x: unknown): boolean => x === null || x === undefined || typeof x === 'string'

/**
 * Whether a summary read from etcd has the shape the view prints (the
 * fields list and status show), and is the pod its key names: etcd's
 * contents are not trusted to be podctl's.
 */
const podShaped = (v: PodView | undefined, uuid: string | undefined): v is PodView =>
  v !== undefined &&
  v !== null &&
  typeof v === 'object' &&
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
  const out: FleetPodView[] = []
  for (const [key, value] of pods) {
    const [, node = '', uuid] = key.split('/')
    const v = parse<PodView>(value)
    if (!podShaped(v, uuid)) continue // not podctl's, or damaged: left alone
    const lost = !live.has(node)
    out.push({ ...v, ...(lost ? { state: 'unknown' as const } : {}), node, node_lost: lost })
  }
  return out
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
    const i = parse<NodeInfo>(value)
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
  const known = (await cluster.list(`${KEYS.nodeInfo}${name}`)).size > 0 || (await cluster.list(`${KEYS.pods}${name}/`)).size > 0
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

/**
 * Publishes a node's pods to the fleet for a controller: registers the
 * node under a lease, publishes every pod whose JSON changed (watching
 * the state dirs, so that a pod's move is seen within a second; all of
 * them at least every resync), removes the pods that are gone, and
 * registers again (republishing everything) when etcd comes back after
 * the lease was lost.
 */
export class FleetPublisher {
  readonly #dataDir: string
  readonly #cluster: Cluster
  readonly #opts: PublisherOptions
  /** What etcd has for each local pod, as published: JSON text by UUID. */
  #published = new Map<string, string>()
  #lease: ClusterLease | undefined
  #watchers: fs.FSWatcher[] = []
  #timers: NodeJS.Timeout[] = []
  #pending: NodeJS.Timeout | undefined
  #running: Promise<void> | undefined
  #again = false
  #stopped = false
  #lastInfo = 0

  readonly #registration: NodeRegistration

  constructor(dataDir: string, cluster: Cluster, opts: PublisherOptions) {
    this.#dataDir = dataDir
    this.#cluster = cluster
    this.#opts = opts
    this.#registration = new NodeRegistration(cluster, opts.node, opts.holder, opts.version)
  }

  /**
   * Registers the node and starts publishing. NodeTaken when a live
   * controller holds the node's name; etcd not answering is logged and
   * tried again, as every later publish is.
   */
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
    // pod that exits stays in run/): either is a change of its state.
    for (const dir of [...POD_DIRS.map((d) => stateDirPath(this.#dataDir, d)), locksDir(this.#dataDir)]) {
      try {
        const w = fs.watch(dir, { persistent: false }, () => this.#soon())
        w.on('error', () => undefined) // a state dir removed: the resync still covers it
        this.#watchers.push(w)
      } catch {
        // no such dir yet: the resync covers it
      }
    }
    this.#timers.push(setInterval(() => this.#soon(), this.#opts.resyncMs))
    this.#soon()
  }

  /**
   * Stops publishing; the node's lease is revoked, so the fleet sees it
   * lost at once. A publish in flight gets `waitMs` to end: etcd that does
   * not answer must not hold a controller's stop.
   */
  async stop(waitMs = 200): Promise<void> {
    this.#stopped = true
    for (const w of this.#watchers) w.close()
    for (const t of this.#timers) clearInterval(t)
    clearTimeout(this.#pending)
    await Promise.race([this.#running?.catch(() => undefined), new Promise((r) => setTimeout(r, waitMs).unref())])
    try {
      await this.#lease?.revoke()
    } catch {
      // etcd gone: the lease expires by itself
    }
  }

  #soon(): void {
    if (this.#stopped || this.#pending !== undefined) return
    this.#pending = setTimeout(() => {
      this.#pending = undefined
      void this.#publishOnce()
    }, DEBOUNCE_MS)
  }

  /** One publish at a time; a change seen meanwhile gets one more. */
  async #publishOnce(): Promise<void> {
    if (this.#running !== undefined) {
      this.#again = true
      return
    }
    this.#running = this.#publish()
      .catch((er: unknown) => {
        if (er instanceof NodeTaken) {
          this.#stopped = true
          this.#opts.log(`fleet: ${er.message}`)
          return this.#opts.onTaken?.(er)
        }
        this.#opts.log(`fleet: ${(er as Error).message}; trying again in ${Math.round(this.#opts.resyncMs / 1000)}s`)
      })
      .finally(() => {
        this.#running = undefined
        if (this.#again && !this.#stopped) {
          this.#again = false
          this.#soon()
        }
      })
    await this.#running
  }

  async #register(): Promise<void> {
    const node = this.#opts.node
    // Set once granted: a grant that fails reports 'lost' too, before there is a lease to compare.
    let granted: ClusterLease | undefined
    const lease = await this.#cluster.grantLease(this.#opts.ttlS, (why) => {
      if (this.#stopped || granted === undefined || this.#lease !== granted) return
      this.#opts.log(`fleet: node ${node}'s lease is lost (${why}); registering again`)
      this.#lease = undefined
      this.#published.clear() // etcd may have lost nothing, but republishing all is what makes sure
      this.#soon()
    })
    granted = lease
    try {
      await this.#registration.register(lease)
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
    if (this.#lease === undefined) await this.#register()
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
    // Which pods of this node use the fleet's claims, and run: a pod's exit lets another node have a ReadWriteOnce claim.
    await reconcileAttachments(this.#cluster, node, this.#dataDir, () => this.#using())
    if (Date.now() - this.#lastInfo >= Math.min(this.#opts.resyncMs, 5_000)) {
      await this.#cluster.put(`${KEYS.nodeInfo}${node}`, JSON.stringify({ name: node, version: this.#opts.version, last_seen: new Date().toISOString() }))
      this.#lastInfo = Date.now()
    }
  }

  /** The claims each pod names, read once a pod (its volumes do not change). */
  readonly #claims = new Map<string, string[]>()

  /** The pods of this node by the claim their manifests name. */
  #using(): Map<string, string[]> {
    const using = new Map<string, string[]>()
    const seen = new Set<string>()
    for (const pod of listPods(this.#dataDir, Include.all)) {
      seen.add(pod.uuid)
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
    for (const uuid of this.#claims.keys()) if (!seen.has(uuid)) this.#claims.delete(uuid)
    return using
  }
}

