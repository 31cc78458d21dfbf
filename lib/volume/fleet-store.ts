/**
 * The fleet's store of classes, claims and provisioned volumes (CONTRACT
 * §11): the same JSON objects the data dir keeps, under
 * `<prefix>classes/`, `<prefix>claims/` and `<prefix>volumes/` in etcd.
 * Every change is one transaction guarded by the mod revision of what it
 * read, so that two nodes never both act on one picture: the loser's
 * transaction fails and it reads again.
 *
 * Work that calls out (a provisioner, a delete) is done under a lock key,
 * `<prefix>locks/<kind>.<name>`, put only if absent and bound to a lease
 * of the worker: a worker that dies frees it when its lease expires. Every
 * write made under the lock also requires the lock key to be the one this
 * worker made (its create revision), so a worker whose lease ran out
 * cannot write after another took over: the pattern of etcd's own
 * concurrency.Mutex.
 */
import os from 'node:os'
import { Cluster, type ClusterOptions, type Guard, type Write } from '../cluster/client.js'
import { PodctlError, oneLine } from '../errors.js'
import { LockBusyError } from '../lock/lock.js'
import { CLAIM, checkClaimOptions, existingClaim, newClaim, type CreateClaimOptions, type VolumeClaim } from './claims.js'
import { FLEET_CLASS, newClass, type CreateClassOptions, type VolumeClass } from './classes.js'
import { withEvent, type EventReason, type EventType, type ObjectKind } from './objects.js'
import type { PvRecord } from './persistent.js'
import { fleetVolumeProblem } from './volume-record.js'

/** An object as read, with the mod revision a write of it must compare. */
export interface Stored<T> {
  value: T
  rev: string
}

/** The key a leading controller holds under its lease (lib/controller's election): while it exists, commands leave provisioning to it. */
export const ELECTION_KEY = 'election/controller'
const DEFAULT_CLASS_KEY = 'class-default'
/** A lock key's lease: a worker killed while holding one frees it this long after. */
const LOCK_TTL_S = 10

/** Someone else changed what this worker read: nothing was written; read again. */
export class FleetConflict extends PodctlError {
  constructor(what: string) {
    super('EBADSTATE', `${what} changed while podctl worked on it`, 'try again')
  }
}

/** The volume record of a fleet: a data dir's PvRecord, its `provisioned` naming the node a local volume lives on. */
export type FleetVolume = PvRecord

/** A fleet's volume record: checked whole, as anything read from etcd (volume-record.ts). */
const VOLUME: ObjectKind<FleetVolume> = {
  what: 'fleet volume',
  dir: 'volumes',
  problem: fleetVolumeProblem,
  missingHint: () => 'see podctl volume claim list --cluster',
}

/** Which fleet a command works in, and as which node: what a detached supervisor is handed. */
export interface FleetRef {
  cluster: ClusterOptions
  node: string
}

/** Connects to the fleet (FleetStore.close() ends the connection). */
export const openFleet = async (ref: FleetRef): Promise<FleetStore> => new FleetStore(await Cluster.open(ref.cluster), ref.node)

export class FleetStore {
  readonly cluster: Cluster
  /** This node's name (`--node`). */
  readonly node: string
  /** Who works: recorded on the lock keys and as provisioned_by. */
  readonly identity: string

  constructor(cluster: Cluster, node: string, identity = `${node}/${os.hostname()}/${process.pid}`) {
    this.cluster = cluster
    this.node = node
    this.identity = identity
  }

  async #get<T>(kind: ObjectKind<T>, name: string): Promise<Stored<T> | undefined> {
    const kv = await this.cluster.get(`${kind.dir}/${name}`)
    if (kv === undefined) return undefined
    const damaged = (why: string) =>
      new PodctlError('EFAILED', `${kind.what} ${name} is damaged in etcd: ${why}`, `look at it: etcdctl get ${this.cluster.options.prefix}${kind.dir}/${name}`)
    let v: unknown
    try {
      v = JSON.parse(kv.value)
    } catch {
      throw damaged('not valid JSON')
    }
    const problem = kind.problem(v)
    if (problem) throw damaged(oneLine(problem))
    // A value moved under another key is not the object that key names.
    if ((v as { name: string }).name !== name) throw damaged(`it names itself ${JSON.stringify((v as { name: string }).name)}`)
    return { value: v as T, rev: kv.modRevision }
  }

  async #must<T>(kind: ObjectKind<T>, name: string): Promise<Stored<T>> {
    const s = await this.#get(kind, name)
    if (s === undefined) throw new PodctlError('ENOVOLUME', `no such ${kind.what} in the fleet: ${name}`, kind.missingHint(name))
    return s
  }

  /** Every valid object of a kind, by name (a damaged one is left out: inspect names it). */
  async #list<T>(kind: ObjectKind<T>): Promise<T[]> {
    const out: T[] = []
    for (const [key, text] of await this.cluster.list(`${kind.dir}/`)) {
      try {
        const v: unknown = JSON.parse(text)
        if (!kind.problem(v) && key === `${kind.dir}/${(v as { name: string }).name}`) out.push(v as T)
      } catch {
        // damaged
      }
    }
    return out.sort((a, b) => ((a as { name: string }).name < (b as { name: string }).name ? -1 : 1))
  }

  findClass = (name: string): Promise<Stored<VolumeClass> | undefined> => this.#get(FLEET_CLASS, name)
  readClass = (name: string): Promise<Stored<VolumeClass>> => this.#must(FLEET_CLASS, name)
  listClasses = (): Promise<VolumeClass[]> => this.#list(FLEET_CLASS)
  findClaim = (name: string): Promise<Stored<VolumeClaim> | undefined> => this.#get(CLAIM, name)
  readClaim = (name: string): Promise<Stored<VolumeClaim>> => this.#must(CLAIM, name)
  listClaims = (): Promise<VolumeClaim[]> => this.#list(CLAIM)
  findVolume = (name: string): Promise<Stored<FleetVolume> | undefined> => this.#get(VOLUME, name)
  listVolumes = (): Promise<FleetVolume[]> => this.#list(VOLUME)

  /** Creates a class (EBADSTATE if it exists, or if it would be a second default). */
  async createClass(name: string, opts: CreateClassOptions): Promise<VolumeClass> {
    const c = newClass(name, opts, true)
    const key = `classes/${name}`
    const guards: Guard[] = [{ key, created: '0' }]
    const writes: Write[] = [{ put: key, value: JSON.stringify(c) }]
    if (c.default) {
      guards.push({ key: DEFAULT_CLASS_KEY, created: '0' })
      writes.push({ put: DEFAULT_CLASS_KEY, value: name })
    }
    if (await this.cluster.commit(guards, writes)) return c
    if (await this.findClass(name)) throw new PodctlError('EBADSTATE', `volume class ${name} already exists in the fleet`, `see podctl volume class inspect ${name} --cluster`)
    const other = await this.cluster.get(DEFAULT_CLASS_KEY)
    throw new PodctlError('EBADSTATE', `volume class ${other?.value ?? '?'} is already the fleet's default`, `remove it first, or create ${name} without --default`)
  }

  /**
   * Removes a class; EBADSTATE while claims of the fleet use it. Its
   * claims are listed under the class's lock, and a claim is made only
   * while that lock is free (createClaim): a claim made meanwhile is either
   * in the list or waits.
   */
  removeClass(name: string): Promise<void> {
    return this.withLock('class', name, async (lock) => {
      const s = await this.readClass(name)
      const claims = (await this.listClaims()).filter((c) => c.class === name).map((c) => c.name)
      if (claims.length > 0) {
        throw new PodctlError(
          'EBADSTATE',
          `volume class ${name} is used by ${claims.length === 1 ? 'claim' : 'claims'} ${claims.slice(0, 5).join(', ')}${claims.length > 5 ? ', …' : ''}`,
          `remove ${claims.length === 1 ? 'that claim' : 'those claims'} first: podctl volume claim rm --cluster ${claims.slice(0, 5).join(' ')}`,
        )
      }
      const writes: Write[] = [{ delete: `classes/${name}` }, this.releaseWrite(lock)]
      if (s.value.default) writes.push({ delete: DEFAULT_CLASS_KEY })
      if (!(await this.cluster.commit([{ key: `classes/${name}`, mod: s.rev }, lock], writes))) throw new FleetConflict(`volume class ${name}`)
      this.released(lock)
    })
  }

  /**
   * Creates a pending claim. Its class must exist unchanged, and its lock
   * be free (no `class rm` listing its claims), in the same transaction.
   */
  async createClaim(name: string, opts: CreateClaimOptions = {}): Promise<VolumeClaim> {
    const mode = checkClaimOptions(name, opts)
    const key = `claims/${name}`
    for (let attempt = 0; attempt < 20; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, 50 * attempt))
      const clsName = opts.class ?? (await this.cluster.get(DEFAULT_CLASS_KEY))?.value ?? null
      const old = await this.findClaim(name)
      if (old) return existingClaim(old.value, clsName, opts)
      const c = newClaim(name, clsName, mode, opts)
      if (clsName === null) {
        if (await this.cluster.commit([{ key, created: '0' }], [{ put: key, value: JSON.stringify(c) }])) return c
        continue
      }
      const cls = await this.findClass(clsName)
      if (!cls) throw new PodctlError('EUSAGE', `unknown volume class ${JSON.stringify(clsName)} in the fleet`, 'see podctl volume class list --cluster')
      const guards: Guard[] = [{ key, created: '0' }, { key: `classes/${clsName}`, mod: cls.rev }, { key: `locks/class.${clsName}`, created: '0' }]
      if (await this.cluster.commit(guards, [{ put: key, value: JSON.stringify(c) }])) return c
    }
    throw new FleetConflict(`volume claim ${name}`)
  }

  /**
   * Writes the claim if it is still at `rev` (and `lock` is still held):
   * its new revision. FleetConflict when someone changed it first.
   */
  async saveClaim(c: VolumeClaim, rev: string, lock: Guard, event?: { type: EventType; reason: EventReason; message: string }): Promise<Stored<VolumeClaim>> {
    const next = event ? { ...c, events: withEvent(c.events, event.type, event.reason, event.message) } : c
    const key = `claims/${c.name}`
    const made = await this.cluster.commit([{ key, mod: rev }, lock], [{ put: key, value: JSON.stringify(next) }])
    if (made === undefined) throw new FleetConflict(`volume claim ${c.name}`)
    return { value: next, rev: made }
  }

  close(): void {
    clearInterval(this.#renew)
    void this.#session?.then((l) => l.revoke()).catch(() => {})
    this.cluster.close()
  }

  /** Whether a controller leads the fleet now (its election key lives only as long as its lease). */
  async leaderLive(): Promise<boolean> {
    return (await this.cluster.get(ELECTION_KEY)) !== undefined
  }

  #session: Promise<Awaited<ReturnType<Cluster['grantLease']>>> | undefined
  #renew: NodeJS.Timeout | undefined

  /**
   * The lease this process's lock keys live under (etcd's
   * concurrency.Session): granted once, renewed every third of its TTL
   * while the store is open. When a renewal fails it is dropped, and the
   * next lock gets a new one; the keys of the old one have gone with it,
   * which is what the lock guards of their holders then find.
   */
  #lockLease(): Promise<Awaited<ReturnType<Cluster['grantLease']>>> {
    if (this.#session === undefined) {
      const granted = this.cluster.grantLease(LOCK_TTL_S)
      this.#session = granted
      granted.catch(() => (this.#session = undefined))
      clearInterval(this.#renew)
      this.#renew = setInterval(() => {
        void granted.then((l) => l.keepAlive()).catch(() => {
          if (this.#session === granted) this.#session = undefined
        })
      }, (LOCK_TTL_S * 1000) / 3)
      this.#renew.unref()
    }
    return this.#session
  }

  /**
   * Runs `fn` holding the fleet lock `<kind>.<name>`, given the guard
   * every write under it must add; LockBusyError at once when another
   * worker holds it. The key is deleted after `fn` (only if it is still
   * this one); a holder that dies frees it when its lease runs out.
   */
  async withLock<T>(kind: 'claim' | 'volume' | 'class', name: string, fn: (lock: Guard) => Promise<T>): Promise<T> {
    const key = `locks/${kind}.${name}`
    const lease = await this.#lockLease()
    const value = JSON.stringify({ holder: this.identity, node: this.node, since: new Date().toISOString() })
    // The revision the transaction made is the key's create revision.
    const created = await this.cluster.commit([{ key, created: '0' }], [{ put: key, value, lease: lease.lease }])
    if (created === undefined) {
      const who = await this.cluster.get(key).catch(() => undefined)
      let holder = ''
      try {
        holder = who ? ` (${(JSON.parse(who.value) as { holder: string }).holder})` : ''
      } catch {
        // a foreign value: named without its holder
      }
      throw new LockBusyError(`fleet ${kind} ${name}`, holder)
    }
    const lock: Guard = { key, created }
    try {
      return await fn(lock)
    } finally {
      // Unless the work's last transaction let it go already (releasing).
      if (!this.#released.delete(lock)) await this.cluster.commit([lock], [{ delete: key }]).catch(() => {}) // unreachable: it goes with the lease
    }
  }

  readonly #released = new WeakSet<Guard>()

  /** The write that deletes the lock key, for the last transaction of the work done under it (one write fewer than a delete of its own). */
  releaseWrite(lock: Guard): Write {
    return { delete: lock.key }
  }

  /** That transaction happened: withLock deletes nothing more. */
  released(lock: Guard): void {
    this.#released.add(lock)
  }
}
