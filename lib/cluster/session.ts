/**
 * etcd's concurrency.Session and Mutex, as podctl uses them: one lease of
 * this process, renewed every third of its TTL, and lock keys put under it
 * only if absent (Documentation/devel/fleet.md). Every write under a lock
 * also requires the key's create revision, so a holder whose lease ran out
 * while it waited on something slow cannot write after another took over.
 */
import { LockBusyError } from '../lock/lock.js'
import type { Cluster, ClusterLease, Guard } from './client.js'
import { KEYS, parseObject } from './keys.js'

/** A lock key's lease: a holder killed while holding one frees it this long after. */
const LOCK_TTL_S = 10

export class Session {
  readonly cluster: Cluster
  /** Who holds: recorded on the lock keys. */
  readonly identity: string
  readonly #node: string
  #lease: Promise<ClusterLease> | undefined
  #renew: NodeJS.Timeout | undefined
  readonly #released = new WeakSet<Guard>()

  constructor(cluster: Cluster, identity: string, node: string) {
    this.cluster = cluster
    this.identity = identity
    this.#node = node
  }

  /**
   * The session's lease. When a renewal fails it is dropped and the next
   * lock gets a new one; the keys of the old one have gone with it, which
   * is what the guards of their holders then find.
   */
  #session(): Promise<ClusterLease> {
    if (this.#lease === undefined) {
      const granted = this.cluster.grantLease(LOCK_TTL_S)
      const drop = (): void => {
        if (this.#lease === granted) this.#lease = undefined
      }
      this.#lease = granted
      granted.catch(drop)
      clearInterval(this.#renew)
      this.#renew = setInterval(() => void granted.then((l) => l.keepAlive()).catch(drop), (LOCK_TTL_S * 1000) / 3).unref()
    }
    return this.#lease
  }

  /**
   * Runs `fn` holding the lock `locks/<name>`, given the guard every write
   * under it must add; LockBusyError at once when another holds it. The
   * key is deleted after `fn` (only if it is still this one), unless the
   * work's last transaction deleted it (`released`).
   */
  async withLock<T>(name: string, what: string, fn: (lock: Guard) => Promise<T>): Promise<T> {
    const key = `${KEYS.locks}${name}`
    const lease = await this.#session()
    const value = JSON.stringify({ holder: this.identity, node: this.#node, since: new Date().toISOString() })
    // The revision the transaction made is the key's create revision.
    const created = await this.cluster.commit([{ key, created: '0' }], [{ put: key, value, lease }])
    if (created === undefined) {
      // A foreign value: named without its holder.
      const holder = parseObject<{ holder?: unknown }>((await this.cluster.get(key).catch(() => undefined))?.value)?.holder
      throw new LockBusyError(what, holder === undefined ? '' : ` (${String(holder)})`)
    }
    const lock: Guard = { key, created }
    try {
      return await fn(lock)
    } finally {
      // etcd away: the key goes with the lease.
      if (!this.#released.delete(lock)) await this.cluster.commit([lock], [{ delete: key }]).catch(() => {})
    }
  }

  /** The work's last transaction deleted the lock key itself (`{ delete: lock.key }`: one write fewer): withLock deletes nothing more. */
  released(lock: Guard): void {
    this.#released.add(lock)
  }

  close(): void {
    clearInterval(this.#renew)
    void this.#lease?.then((l) => l.revoke()).catch(() => {})
  }
}
