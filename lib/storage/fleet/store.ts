/**
 * The fleet's ClaimStore (CONTRACT §11): the data dir's JSON objects under
 * `<prefix>classes/`, `claims/` and `volumes/` in etcd. Each change is one
 * transaction guarded by the revisions it read (the loser gets Conflict);
 * work that calls out runs under a lock key of this process's session, which
 * each write under it requires (Documentation/devel/fleet.md).
 */
import { Cluster, type ClusterOptions, type Guard, type Write } from '../../cluster/client.js'
import { KEYS } from '../../cluster/keys.js'
import { Session } from '../../cluster/session.js'
import { defaultIdentity } from '../../election/election.js'
import { fleetLeaderLive } from '../../election/etcd.js'
import { PodctlError, oneLine } from '../../errors.js'
import { sleep } from '../../poll.js'
import { backoffMs } from '../binder.js'
import { boundTo, checkClaimOptions, CLAIM, existingClaim, newClaim, type CreateClaimOptions, type VolumeClaim } from '../claims.js'
import { checkClassUnused, FLEET_CLASS, newClass, type CreateClassOptions, type VolumeClass } from '../classes.js'
import { findClaim, LocalStore, podsUsingClaim } from '../local/store.js'
import { listVolumes, removeFleetCopy } from '../local/volumes.js'
import { mustExist, parseObject, removeObject, withEventOf, type NewEvent, type ObjectKind } from '../objects.js'
import { Conflict, type ClaimStore, type ClaimUser, type Held, type ReclaimOutcome, type Stored } from '../store.js'
import { FLEET_VOLUME, provisionedName, type PvRecord } from '../volume-record.js'
import { readAttachment, usersOf } from './attachments.js'

/** Which fleet a command works in, and as which node: what a detached supervisor is handed. */
export interface FleetRef {
  cluster: ClusterOptions
  node: string
}

/** Connects to the fleet as node `ref.node`, whose data dir is `dataDir` (close() ends the connection). */
export const openFleet = async (ref: FleetRef, dataDir: string, identity?: string): Promise<FleetStore> => new FleetStore(await Cluster.open(ref.cluster), ref.node, dataDir, identity)

const keyOf = (kind: ObjectKind<unknown>, name: string): string => `${kind.dir}/${name}`

export class FleetStore implements ClaimStore {
  readonly flag = ' --cluster'
  readonly cluster: Cluster
  readonly node: string
  readonly dataDir: string
  readonly identity: string
  readonly session: Session

  constructor(cluster: Cluster, node: string, dataDir: string, identity = defaultIdentity(node)) {
    this.cluster = cluster
    this.node = node
    this.dataDir = dataDir
    this.identity = identity
    this.session = new Session(cluster, identity, node)
  }

  /** An object and its revision, checked whole, as anything read from etcd. */
  async #get<T extends { name: string }>(kind: ObjectKind<T>, name: string): Promise<Stored<T> | undefined> {
    const kv = await this.cluster.get(keyOf(kind, name))
    if (kv === undefined) return undefined
    const o = parseObject(kind, kv.value)
    // A value moved under another key is not the object that key names.
    if ('value' in o && o.value.name === name) return { value: o.value, rev: kv.modRevision }
    const why = 'problem' in o ? oneLine(o.problem) : `it names itself ${JSON.stringify(o.value.name)}`
    throw new PodctlError('EFAILED', `${kind.what} ${name} is damaged in etcd: ${why}`, `look at it: etcdctl get ${this.cluster.options.prefix}${keyOf(kind, name)}`)
  }

  /** Every valid object of a kind, by name (a damaged one is left out: inspect names it). */
  async #list<T extends { name: string }>(kind: ObjectKind<T>): Promise<T[]> {
    return [...(await this.cluster.list(`${kind.dir}/`))]
      .flatMap(([key, text]) => {
        const o = parseObject(kind, text)
        return 'value' in o && key === keyOf(kind, o.value.name) ? [o.value] : []
      })
      .sort((a, b) => (a.name < b.name ? -1 : 1))
  }

  findClass = async (name: string): Promise<VolumeClass | undefined> => (await this.#get(FLEET_CLASS, name))?.value
  readClass = async (name: string): Promise<VolumeClass> => mustExist(await this.findClass(name), FLEET_CLASS, name, ' in the fleet')
  listClasses = (): Promise<VolumeClass[]> => this.#list(FLEET_CLASS)
  findClaim = (name: string): Promise<Stored<VolumeClaim> | undefined> => this.#get(CLAIM, name)
  readClaim = async (name: string): Promise<Stored<VolumeClaim>> => mustExist(await this.findClaim(name), CLAIM, name, ' in the fleet')
  listClaims = (): Promise<VolumeClaim[]> => this.#list(CLAIM)
  findVolume = (name: string): Promise<Stored<PvRecord> | undefined> => this.#get(FLEET_VOLUME, name)

  async createClass(name: string, opts: CreateClassOptions): Promise<VolumeClass> {
    const c = newClass(name, opts, true)
    const key = keyOf(FLEET_CLASS, name)
    const guards: Guard[] = [{ key, created: '0' }]
    const writes: Write[] = [{ put: key, value: JSON.stringify(c) }]
    if (c.default) {
      guards.push({ key: KEYS.defaultClass, created: '0' })
      writes.push({ put: KEYS.defaultClass, value: name })
    }
    if (await this.cluster.commit(guards, writes)) return c
    if (await this.findClass(name)) throw new PodctlError('EBADSTATE', `volume class ${name} already exists in the fleet`, `see podctl volume class inspect ${name} --cluster`)
    const other = await this.cluster.get(KEYS.defaultClass)
    throw new PodctlError('EBADSTATE', `volume class ${other?.value ?? '?'} is already the fleet's default`, `remove it first, or create ${name} without --default`)
  }

  /** Its claims are listed under the class's lock, and a claim is made only while that lock is free (createClaim). */
  removeClass(name: string): Promise<void> {
    return this.session.withLock(`class.${name}`, `fleet class ${name}`, async (lock) => {
      const s = mustExist(await this.#get(FLEET_CLASS, name), FLEET_CLASS, name, ' in the fleet')
      checkClassUnused(name, await this.listClaims(), this.flag)
      const writes: Write[] = [{ delete: keyOf(FLEET_CLASS, name) }, { delete: lock.key }]
      if (s.value.default) writes.push({ delete: KEYS.defaultClass })
      if (!(await this.cluster.commit([{ key: keyOf(FLEET_CLASS, name), mod: s.rev }, lock], writes))) throw new Conflict(`volume class ${name}`)
      this.session.released(lock)
    })
  }

  /** A pending claim, made if its class exists unchanged and its lock is free (no `class rm` listing its claims), in one transaction. */
  async createClaim(name: string, opts: CreateClaimOptions = {}): Promise<VolumeClaim> {
    const mode = checkClaimOptions(name, opts)
    const key = keyOf(CLAIM, name)
    for (let attempt = 0; attempt < 20; attempt++) {
      if (attempt > 0) await sleep(backoffMs(attempt, { minMs: 50, maxMs: 500 }))
      const clsName = opts.class ?? (await this.cluster.get(KEYS.defaultClass))?.value ?? null
      const old = await this.findClaim(name)
      if (old) return existingClaim(old.value, clsName, opts)
      const c = newClaim(name, clsName, mode, opts)
      const guards: Guard[] = [{ key, created: '0' }]
      if (clsName !== null) {
        const cls = await this.#get(FLEET_CLASS, clsName)
        if (!cls) throw new PodctlError('EUSAGE', `unknown volume class ${JSON.stringify(clsName)} in the fleet`, 'see podctl volume class list --cluster')
        guards.push({ key: keyOf(FLEET_CLASS, clsName), mod: cls.rev }, { key: `${KEYS.locks}class.${clsName}`, created: '0' })
      }
      if (await this.cluster.commit(guards, [{ put: key, value: JSON.stringify(c) }])) return c
    }
    throw new Conflict(`volume claim ${name}`)
  }

  async saveClaim(s: Stored<VolumeClaim>, next: VolumeClaim, held: Held, event?: NewEvent): Promise<Stored<VolumeClaim>> {
    const c = withEventOf(next, event)
    const key = keyOf(CLAIM, c.name)
    const made = await this.cluster.commit([{ key, mod: s.rev }, ...(held ? [held] : [])], [{ put: key, value: JSON.stringify(c) }])
    if (made === undefined) throw new Conflict(`volume claim ${c.name}`)
    return { value: c, rev: made }
  }

  /** This node's pods that name the claim, and those of other nodes its attachment lists. */
  async podsUsing(c: VolumeClaim): Promise<ClaimUser[]> {
    const { a } = await readAttachment(this.cluster, c)
    return [...podsUsingClaim(this.dataDir, c.name).map((pod) => ({ pod })), ...usersOf(a, this.node)]
  }

  async ownVolume(c: VolumeClaim): Promise<Stored<PvRecord> | undefined> {
    const v = await this.findVolume(provisionedName(c.uid))
    return v?.value.claim_ref?.uid === c.uid ? v : undefined
  }

  staticVolumes = async (): Promise<PvRecord[]> => []
  bindStatic = async (): Promise<boolean> => false

  /** The volume and the bind in one transaction: both or neither, and only if nobody made the volume or changed the claim. */
  async provisioned(s: Stored<VolumeClaim>, v: PvRecord, event: NewEvent, held: Held): Promise<Stored<VolumeClaim> | undefined> {
    const c = withEventOf(boundTo(s.value, v), event)
    const [claimKey, volumeKey] = [keyOf(CLAIM, c.name), keyOf(FLEET_VOLUME, v.name)]
    const made = await this.cluster.commit(
      [{ key: claimKey, mod: s.rev }, held!, { key: volumeKey, created: '0' }],
      [{ put: volumeKey, value: JSON.stringify(v) }, { put: claimKey, value: JSON.stringify(c) }, { delete: held!.key }],
    )
    if (made === undefined) return undefined
    this.session.released(held!)
    return { value: c, rev: made }
  }

  /** Removes the claim, its attachment and its volume's bind in one transaction, only while no other node's pod uses it. */
  async release(s: Stored<VolumeClaim>, v: Stored<PvRecord> | undefined, held: Held): Promise<void> {
    const name = s.value.name
    const { a, guard } = await readAttachment(this.cluster, s.value)
    // Attached on another node since podsUsing looked: read again, and refuse then.
    if (usersOf(a, this.node).length > 0) throw new Conflict(`volume claim ${name}`)
    const guards: Guard[] = [{ key: keyOf(CLAIM, name), mod: s.rev }, held!, guard]
    const writes: Write[] = [{ delete: keyOf(CLAIM, name) }, { delete: guard.key }]
    if (v) {
      guards.push({ key: keyOf(FLEET_VOLUME, v.value.name), mod: v.rev })
      writes.push({ put: keyOf(FLEET_VOLUME, v.value.name), value: JSON.stringify({ ...v.value, phase: 'released' }) })
    }
    if (!(await this.cluster.commit(guards, writes))) throw new Conflict(`volume claim ${name}`)
  }

  /** Only `delete` is reclaimed in a fleet: a retained volume stays released, its storage kept, as a Kubernetes PersistentVolume stays Released. */
  releasedVolumes = async (): Promise<string[]> => (await this.#list(FLEET_VOLUME)).flatMap((v) => (v.phase === 'released' && v.reclaim === 'delete' ? [v.name] : []))
  keep = async (): Promise<ReclaimOutcome> => 'retained'

  /** A local volume's data is removed by its node (housekeeping). */
  async deleteVolume(v: Stored<PvRecord>, held: Held): Promise<void> {
    if (!(await this.cluster.commit([{ key: keyOf(FLEET_VOLUME, v.value.name), mod: v.rev }, held!], [{ delete: keyOf(FLEET_VOLUME, v.value.name) }]))) throw new Conflict(`volume ${v.value.name}`)
  }

  async volumeEvent(v: Stored<PvRecord>, event: NewEvent, held: Held): Promise<void> {
    const key = keyOf(FLEET_VOLUME, v.value.name)
    await this.cluster.commit([{ key, mod: v.rev }, held!], [{ put: key, value: JSON.stringify(withEventOf(v.value, event)) }])
  }

  withLock<T>(kind: 'claim' | 'volume', name: string, _waitMs: number | undefined, fn: (held: Held) => Promise<T>): Promise<T> {
    return this.session.withLock(`${kind}.${name}`, `fleet ${kind} ${name}`, fn)
  }

  leaderLive = (): Promise<boolean> => fleetLeaderLive(this.cluster)

  async watch(onClaim: (name: string) => void, onVolume: (name: string) => void): Promise<() => void> {
    const stops = [this.cluster.watch(KEYS.claims, (key) => onClaim(key.slice(KEYS.claims.length))), this.cluster.watch(KEYS.volumes, (key) => onVolume(key.slice(KEYS.volumes.length)))]
    return () => {
      for (const s of stops) void s().catch(() => {})
    }
  }

  /** This node's copies of volumes the fleet deleted go, with their claims' copies, unless a running pod holds them. */
  async housekeeping(): Promise<string | undefined> {
    let n = 0
    for (const v of listVolumes(this.dataDir)) {
      if (!v.provisioned?.fleet || (await this.findVolume(v.name)) || !removeFleetCopy(this.dataDir, v.name)) continue
      n++
      const ref = v.claim_ref
      if (!ref) continue
      await new LocalStore(this.dataDir).withLock('claim', ref.name, undefined, async () => {
        const c = findClaim(this.dataDir, ref.name)
        if (c?.fleet && c.uid === ref.uid) removeObject(this.dataDir, CLAIM, ref.name)
      })
    }
    return n > 0 ? `removed ${n === 1 ? "this node's copy of a fleet volume" : `${n} copies of fleet volumes`} the fleet deleted` : undefined
  }

  close(): void {
    this.session.close()
    this.cluster.close()
  }
}
