/**
 * One leader in the fleet (CONTRACT §11): the key
 * `<prefix>election/controller`, put only if absent and bound to an etcd
 * lease of --lease-duration that the leader renews every retry period.
 * The leader counts its renewals from when it sent them, so a leader cut
 * off from etcd's quorum stops working at its renew deadline, before etcd
 * can expire the lease and let another take the key. SIGTERM revokes the
 * lease, which deletes the key at once.
 *
 * `<prefix>election/history` keeps what outlives a leader: how many times
 * the lead changed hands, and who took it last.
 */
import os from 'node:os'
import type { Cluster } from '../cluster/client.js'
import { ELECTION_KEY } from '../volume/fleet-store.js'
import type { LeaderElection } from './leader.js'

const HISTORY_KEY = 'election/history'

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

type Granted = Awaited<ReturnType<Cluster['grantLease']>>

export class FleetElection implements LeaderElection {
  readonly what = "the fleet's lease"
  readonly #cluster: Cluster
  readonly #identity: string
  readonly #node: string
  readonly #ttlS: number
  #lease: Granted | undefined

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
    if (await this.#cluster.get(ELECTION_KEY)) return false
    const history = await this.#cluster.get(HISTORY_KEY)
    let past: ElectionHistory = { transitions: 0, last_holder: null }
    try {
      if (history) past = JSON.parse(history.value) as ElectionHistory
    } catch {
      // damaged: counted again from 0
    }
    const lease = await this.#cluster.grantLease(this.#ttlS)
    const leader: FleetLeader = { holder: this.#identity, node: this.#node, acquired_at: new Date().toISOString(), lease_duration_s: this.#ttlS }
    const next: ElectionHistory = { transitions: past.transitions + 1, last_holder: this.#identity }
    const won = await this.#cluster
      .commit(
        [{ key: ELECTION_KEY, created: '0' }, history ? { key: HISTORY_KEY, mod: history.modRevision } : { key: HISTORY_KEY, created: '0' }],
        [{ put: ELECTION_KEY, value: JSON.stringify(leader), lease: lease.lease }, { put: HISTORY_KEY, value: JSON.stringify(next) }],
      )
      .catch(async (er: unknown) => {
        await lease.revoke().catch(() => {})
        throw er
      })
    if (!won) {
      await lease.revoke().catch(() => {})
      return false
    }
    this.#lease = lease
    return true
  }

  async release(): Promise<void> {
    const lease = this.#lease
    this.#lease = undefined
    await lease?.revoke()
  }

  watchVacancy(onVacant: () => void): () => void {
    const stop = this.#cluster.watch(ELECTION_KEY, (key, deleted) => {
      if (deleted && key === ELECTION_KEY && !this.#lease) onVacant()
    })
    return () => void stop().catch(() => {})
  }

  stepDown(): void {
    const lease = this.#lease
    this.#lease = undefined
    void lease?.revoke().catch(() => {}) // etcd away: the key expires with the lease
  }
}

/** Who leads the fleet (undefined: nobody), and the history of the lead. */
export const fleetLeader = async (cluster: Cluster): Promise<{ leader: FleetLeader | undefined; history: ElectionHistory }> => {
  const [key, history] = await Promise.all([cluster.get(ELECTION_KEY), cluster.get(HISTORY_KEY)])
  const parse = <T>(text: string | undefined): T | undefined => {
    try {
      return text === undefined ? undefined : (JSON.parse(text) as T)
    } catch {
      return undefined
    }
  }
  return { leader: parse<FleetLeader>(key?.value), history: parse<ElectionHistory>(history?.value) ?? { transitions: 0, last_holder: null } }
}

/** The identity a fleet controller has by default: its node, host and process. */
export const fleetIdentity = (node: string): string => `${node}/${os.hostname()}/${process.pid}`
