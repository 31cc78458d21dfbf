/** The volume plugin interfaces: Kubernetes' pkg/volume, cut down to what host-process pods need. */
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

/** Common to mounters and unmounters. */
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
  /** The pod is being deleted (rm, gc), so a reclaim policy may apply; false when a failed start is rolled back. */
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
  /** Rebuilds the spec from a recorded actual state, so that a process that never saw the manifest can tear it down. */
  constructVolumeSpec(name: string, record: VolumeStateRecord): VolumeSpec
}

/** One link the executor made (relative to the pod dir) and its target. */
export interface RecordedMountPoint {
  link: string
  target: string
}

/** The actual state of one volume of a pod, written before a change and after it: what may exist after a crash. */
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
