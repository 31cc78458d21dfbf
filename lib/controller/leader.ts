/**
 * Leader election behind one small interface (seed 004's leaderelection
 * package): the file lease of a data dir (lib/volume/lease.ts), or the
 * fleet's etcd lease (fleet-election.ts). A leader that cannot renew
 * within the renew deadline stops working; the controller decides that,
 * from when the last renewal succeeded.
 */
import { releaseLease, tryAcquireOrRenew } from '../volume/lease.js'

export interface LeaderElection {
  /** Takes the lead if nobody holds it, or renews it: whether this process leads now. Throws when the store cannot be reached. */
  tryAcquireOrRenew(): Promise<boolean>
  /** Gives the lead up at once (SIGTERM), so that a standby takes it at its next try. */
  release(): Promise<void>
  /** The lead was given up without a release (renew deadline passed): forget it, and campaign again from scratch. */
  stepDown(): void
  /** Where the lead is held, for the log: "the lease", "the fleet's lease". */
  readonly what: string
  /**
   * Calls `onVacant` as soon as the lead is given up or expires, so that a
   * standby campaigns at once instead of at its next retry (etcd's
   * election watches its predecessor the same way). Returns the stop.
   */
  watchVacancy?(onVacant: () => void): () => void
}

/** The data dir's lease file. */
export const fileElection = (dataDir: string, identity: string, leaseDurationMs: number, lockTimeoutMs: number): LeaderElection => ({
  what: 'the lease',
  tryAcquireOrRenew: async () => tryAcquireOrRenew(dataDir, identity, leaseDurationMs, lockTimeoutMs),
  release: async () => releaseLease(dataDir, identity, lockTimeoutMs),
  stepDown: () => {},
})
