/**
 * Leader election behind one small interface (seed 004's leaderelection
 * package): the lease file of a data dir (file.ts), or a key bound to an
 * etcd lease (etcd.ts). A leader that cannot renew within the renew
 * deadline stops working; the controller decides that, from when the last
 * renewal succeeded.
 */
import os from 'node:os'

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

/** How a controller or a command appears in a lease, a lock and provisioned_by: `HOST/PID`, or `NODE/HOST/PID` in a fleet. */
export const defaultIdentity = (node?: string): string => `${node === undefined ? '' : `${node}/`}${os.hostname()}/${process.pid}`
