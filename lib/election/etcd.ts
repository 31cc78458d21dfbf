/**
 * One leader in a fleet (CONTRACT §11): `election/controller`, put only if
 * absent under an etcd lease that the leader renews (not etcd3's `campaign`,
 * which has no hook to stop before the lease can expire: Documentation/devel/fleet.md).
 */
import type { Cluster, ClusterLease } from '../cluster/client.js'
import { KEYS, parseObject } from '../cluster/keys.js'
import type { LeaderElection } from './election.js'

/** What the election key holds: `controller status --cluster`. */
export interface FleetLeader {
  holder: string
  node: string
  acquired_at: string
  lease_duration_s: number
}

export interface ElectionHistory {
  transitions: number
  last_holder: string | null
}

// A damaged history is as if absent: it counts again from 0.
const historyOf = (text: string | undefined): ElectionHistory => parseObject<ElectionHistory>(text) ?? { transitions: 0, last_holder: null }

export class FleetElection implements LeaderElection {
  readonly what = "the fleet's lease"
  readonly #cluster: Cluster
  readonly #identity: string
  readonly #node: string
  readonly #ttlS: number
  #lease: ClusterLease | undefined

  constructor(cluster: Cluster, identity: string, node: string, leaseDurationMs: number) {
    this.#cluster = cluster
    this.#identity = identity
    this.#node = node
    this.#ttlS = Math.max(1, Math.round(leaseDurationMs / 1000))
  }

  async tryAcquireOrRenew(): Promise<boolean> {
    if (this.#lease) {
      await this.#lease.keepAlive()
      return true
    }
    // One read when someone leads, which is the usual answer of a standby.
    if (await this.#cluster.get(KEYS.election)) return false
    const history = await this.#cluster.get(KEYS.history)
    const past = historyOf(history?.value)
    const lease = await this.#cluster.grantLease(this.#ttlS)
    const leader: FleetLeader = { holder: this.#identity, node: this.#node, acquired_at: new Date().toISOString(), lease_duration_s: this.#ttlS }
    const next: ElectionHistory = { transitions: past.transitions + 1, last_holder: this.#identity }
    let won: string | undefined
    try {
      won = await this.#cluster.commit(
        [{ key: KEYS.election, created: '0' }, { key: KEYS.history, ...(history ? { mod: history.modRevision } : { created: '0' }) }],
        [{ put: KEYS.election, value: JSON.stringify(leader), lease }, { put: KEYS.history, value: JSON.stringify(next) }],
      )
    } finally {
      if (won === undefined) await lease.revoke().catch(() => {})
    }
    if (won !== undefined) this.#lease = lease
    return won !== undefined
  }

  async release(): Promise<void> {
    const lease = this.#lease
    this.#lease = undefined
    await lease?.revoke()
  }

  watchVacancy(onVacant: () => void): () => void {
    const stop = this.#cluster.watch(KEYS.election, (key, deleted) => {
      if (deleted && key === KEYS.election && !this.#lease) onVacant()
    })
    return () => void stop().catch(() => {})
  }

  stepDown(): void {
    void this.release().catch(() => {}) // etcd away: the key expires with the lease
  }
}

/** Who leads the fleet (undefined: nobody), and the history of the lead. */
export const fleetLeader = async (cluster: Cluster): Promise<{ leader: FleetLeader | undefined; history: ElectionHistory }> => {
  const [key, history] = await Promise.all([cluster.get(KEYS.election), cluster.get(KEYS.history)])
  return { leader: parseObject<FleetLeader>(key?.value), history: historyOf(history?.value) }
}

/** Whether a controller leads the fleet now (its election key lives only as long as its lease). */
export const fleetLeaderLive = async (cluster: Cluster): Promise<boolean> => (await cluster.get(KEYS.election)) !== undefined
