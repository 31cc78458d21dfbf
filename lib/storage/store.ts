/**
 * Where classes, claims and provisioned volumes are kept (a data dir, a
 * fleet's etcd), as the external-provisioner hands persistence to its
 * VolumeStore; the binder decides (Documentation/devel/controller.md).
 */
import { PodctlError } from '../errors.js'
import type { Guard } from '../cluster/client.js'
import type { CreateClaimOptions, VolumeClaim } from './claims.js'
import type { CreateClassOptions, VolumeClass } from './classes.js'
import type { NewEvent } from './objects.js'
import type { PvRecord } from './volume-record.js'

/** An object as read, with the revision a write of it must compare (etcd's mod revision; '' in a data dir). */
export type Stored<T> = { value: T; rev: string }

/** What a worker holds while it works on an object: a fleet's lock key (its guard); nothing in a data dir. */
export type Held = Guard | undefined

/** What a reclaim policy did to a released volume. */
export type ReclaimOutcome = 'retained' | 'deleted' | 'recycled' | 'ignored' | 'not-released'

/** A pod that uses a claim: on this node, or (in a fleet) on `node`. */
export type ClaimUser = { pod: string; node?: string }

/** Someone else changed what this worker read: nothing was written; read again. */
export class Conflict extends PodctlError {
  constructor(what: string) {
    super('EBADSTATE', `${what} changed while podctl worked on it`, 'try again')
  }
}

export interface ClaimStore {
  /** This node's data dir: provisioners are told it; a fleet's node keeps its copies there. */
  readonly dataDir: string
  /** In a fleet, this node's name: its classes name provisioners, never programs. */
  readonly node?: string
  /** Who works: recorded as provisioned_by (and on a fleet's lock keys). */
  readonly identity: string
  /** How hints name this store's commands: '' or ' --cluster'. */
  readonly flag: string

  findClass(name: string): Promise<VolumeClass | undefined>
  readClass(name: string): Promise<VolumeClass>
  listClasses(): Promise<VolumeClass[]>
  /** EBADSTATE if it exists, or if it would be a second default; EUSAGE for bad input. */
  createClass(name: string, opts: CreateClassOptions): Promise<VolumeClass>
  /** EBADSTATE while claims use it. */
  removeClass(name: string): Promise<void>

  findClaim(name: string): Promise<Stored<VolumeClaim> | undefined>
  readClaim(name: string): Promise<Stored<VolumeClaim>>
  listClaims(): Promise<VolumeClaim[]>
  /** A pending claim; EBADSTATE if it exists (unless `existingOk` and it asks for the same), EUSAGE for bad input or an unknown class. */
  createClaim(name: string, opts?: CreateClaimOptions): Promise<VolumeClaim>
  /** Writes `next` over `s` (under the claim's lock), with an event when one is given. */
  saveClaim(s: Stored<VolumeClaim>, next: VolumeClaim, held: Held, event?: NewEvent): Promise<Stored<VolumeClaim>>
  /** The pods that use a claim and are not removed: EBADSTATE for its removal while there are any. */
  podsUsing(c: VolumeClaim): Promise<ClaimUser[]>

  findVolume(name: string): Promise<Stored<PvRecord> | undefined>
  /** The volume that names claim `c`: the one provisioned for it, or a static one bound to it (left naming it by a crash, too). */
  ownVolume(c: VolumeClaim, statics?: PvRecord[]): Promise<Stored<PvRecord> | undefined>
  /** The static volumes a claim may bind to (`volume create`'s; a fleet binds to provisioned volumes only). */
  staticVolumes(): Promise<PvRecord[]>
  /** Binds a free static volume that `fits` to claim `c`, under the volume's lock; false if someone was first. */
  bindStatic(name: string, c: VolumeClaim, fits: (v: PvRecord) => boolean): Promise<boolean>
  /** Writes volume `v` provisioned for claim `s`, then the claim bound to it (or both at once); undefined, nothing written, if `v` exists. */
  provisioned(s: Stored<VolumeClaim>, v: PvRecord, event: NewEvent, held: Held): Promise<Stored<VolumeClaim> | undefined>
  /** Removes the claim and marks its volume released (the volume first, or both at once). */
  release(s: Stored<VolumeClaim>, v: Stored<PvRecord> | undefined, held: Held): Promise<void>
  /** The released volumes whose reclaim policy is still to be applied. */
  releasedVolumes(): Promise<string[]>
  /** Applies `retain` or `recycle` to a released volume (under its lock). */
  keep(v: Stored<PvRecord>, held: Held): Promise<ReclaimOutcome>
  /** Removes a released volume's record, its provisioner having deleted its storage. */
  deleteVolume(v: Stored<PvRecord>, held: Held): Promise<void>
  /** Keeps an event on a volume (a failed delete). */
  volumeEvent(v: Stored<PvRecord>, event: NewEvent, held: Held): Promise<void>

  /** Runs `fn` holding the lock of claim or volume `name`; held by another, LockBusyError after `waitMs` (default 30 s; a fleet never waits). */
  withLock<T>(kind: 'claim' | 'volume', name: string, waitMs: number | undefined, fn: (held: Held) => Promise<T>): Promise<T>
  /** Whether a controller leads now: commands then leave provisioning to it. */
  leaderLive(): Promise<boolean>
  /** Tells of changed claims and volumes at once; the returned function stops it. */
  watch(onClaim: (name: string) => void, onVolume: (name: string) => void, log: (line: string) => void): Promise<() => void>
  /** What a node does at each resync whether it leads or not; a line for the log when it did something. */
  housekeeping?(): Promise<string | undefined>
  close(): void
}
