/**
 * The volume plugin interfaces, after Kubernetes' pkg/volume (seed 001),
 * cut down to what host-process pods need: a plugin says whether it
 * supports a spec and makes mounters (set up) and unmounters (tear down);
 * `constructVolumeSpec` rebuilds a spec from what is recorded on disk, so
 * that a volume can be torn down by a process that never saw the manifest.
 */
import type { Volume } from '../pod/manifest.js'

/** A volume as the plugins see it: the manifest's entry, by name. */
export interface VolumeSpec {
  readonly name: string
  readonly volume: Volume
}

/** The pod a volume belongs to: enough to find its directories. */
export interface PodRef {
  readonly dataDir: string
  readonly uuid: string
  /** The pod's directory now (it moves between state dirs). */
  readonly path: string
}

/** Usage of a volume (CONTRACT §5); null where not known or not applicable. */
export interface Metrics {
  used_bytes: number | null
  used_inodes: number | null
  capacity_bytes: number | null
  available_bytes: number | null
}

/** Common to mounters and unmounters (seed 001's Volume). */
export interface VolumeHandle {
  /** The plugin's name, as recorded in the actual state. */
  readonly pluginName: string
  /** Where the volume's data is: what the mount points link to. */
  readonly path: string
  /** Usage, computed on demand (cached briefly). */
  getMetrics(): Metrics
}

export interface Mounter extends VolumeHandle {
  /** Prepares the volume's data at `path`. Idempotent. */
  setUp(): void
}

/** Why a volume is torn down. */
export interface TearDownOptions {
  /**
   * The pod is being deleted (rm, gc): a persistent volume's claim is
   * released for good and its reclaim policy may apply. False when a
   * failed start is rolled back: the claim is dropped, nothing reclaimed.
   */
  podRemoved: boolean
}

export interface Unmounter extends VolumeHandle {
  /** Undoes setUp: removes what the pod owns, releases what it claimed. Idempotent. */
  tearDown(opts: TearDownOptions): void
}

export interface VolumePlugin {
  /** Unique, e.g. "podctl.io/empty". */
  readonly name: string
  canSupport(spec: VolumeSpec): boolean
  newMounter(spec: VolumeSpec, pod: PodRef): Mounter
  newUnmounter(spec: VolumeSpec, pod: PodRef): Unmounter
  /** Rebuilds the spec from a recorded actual state (for tear-down after a crash). */
  constructVolumeSpec(name: string, record: VolumeStateRecord): VolumeSpec
}

/** One link the executor made (relative to the pod dir) and its target. */
export interface RecordedMountPoint {
  link: string
  target: string
}

/**
 * The actual state of one volume of a pod, `<pod>/volume-state/<name>.json`
 * (the actual state of the world of seed 003). Written before any change
 * ("mounting", "unmounting") and after it ("mounted"), so that whoever
 * finds it after a crash knows what may exist and how to remove it.
 */
export interface VolumeStateRecord {
  version: 1
  volume: string
  plugin: string
  spec: Volume
  phase: 'mounting' | 'mounted' | 'unmounting'
  /** Every link the mount makes, made or not yet. */
  mount_points: RecordedMountPoint[]
  /** The process that wrote the record, and when. */
  pid: number
  updated_at: string
}
