/** Leader election behind one interface: a data dir's lease file (file.ts) or an etcd key (etcd.ts); the controller keeps the renew deadline of both. */
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
  /** Calls `onVacant` as soon as the lead is given up or expires, so that a standby campaigns at once; returns the stop. */
  watchVacancy?(onVacant: () => void): () => void
}

/** How a controller or a command appears in a lease, a lock and provisioned_by: `HOST/PID`, or `NODE/HOST/PID` in a fleet. */
export const defaultIdentity = (node?: string): string => `${node === undefined ? '' : `${node}/`}${os.hostname()}/${process.pid}`
