/**
 * Kubernetes' operation executor, across processes: each operation on a volume holds its (pod, volume) key's lock and
 * records the actual state before and after each change, so that gc and rm can tear it down, even after a crash.
 */
import { shortId } from '../errors.js'
import { ensureLink, removeLink } from '../fs/inside.js'
import { lockHeldAt, lockOwnerAt, type AcquireOptions } from '../lock/lock.js'
import { opLockPath } from './layout.js'
import { acquireLockIn } from '../lock/with-lock.js'
import { failpoint } from './failpoint.js'
import { defaultRegistry } from './plugins/index.js'
import type { PluginRegistry } from './registry.js'
import { readVolumeState, recordedVolumes, removeVolumeState, writeVolumeState } from './state.js'
import type { PodRef, RecordedMountPoint, TearDownOptions, VolumePlugin, VolumeSpec, VolumeStateRecord } from './types.js'
import { clearMetricsCache } from './metrics.js'

const isMountPoint = (mp: unknown): mp is RecordedMountPoint => typeof (mp as RecordedMountPoint | null)?.link === 'string' && typeof (mp as RecordedMountPoint).target === 'string'

export type OperationOptions = AcquireOptions

export class OperationExecutor {
  readonly pod: PodRef
  readonly registry: PluginRegistry

  constructor(pod: PodRef, registry: PluginRegistry = defaultRegistry()) {
    this.pod = pod
    this.registry = registry
  }

  #lock(volume: string): string {
    return opLockPath(this.pod.dataDir, this.pod.uuid, volume)
  }

  /** Whether an operation on (this pod, `volume`) is pending in any process (IsOperationPending). */
  isOperationPending(volume: string): boolean {
    return lockHeldAt(this.#lock(volume))
  }

  /** The pid of the process whose operation on `volume` is pending, if any. */
  pendingPid(volume: string): number | undefined {
    return this.isOperationPending(volume) ? lockOwnerAt(this.#lock(volume))?.pid : undefined
  }

  /** Runs `fn` as the one operation on (this pod, `volume`), refusing or waiting (`opts`) while another is pending. */
  run<T>(volume: string, opts: OperationOptions, fn: () => T): T {
    const held = acquireLockIn(this.#lock(volume), `volume "${volume}" of pod ${shortId(this.pod.uuid)}`, opts)
    try {
      return fn()
    } finally {
      held.release()
      clearMetricsCache()
    }
  }

  /** Sets up a volume and makes its mount points, recording "mounting" first and "mounted" once done. Idempotent. */
  mountVolume(spec: VolumeSpec, mountPoints: RecordedMountPoint[], opts: OperationOptions): VolumeStateRecord {
    return this.run(spec.name, opts, () => {
      const plugin = this.registry.findPluginBySpec(spec)
      const mounter = plugin.newMounter(spec, this.pod)
      const base = { volume: spec.name, plugin: plugin.name, spec: spec.volume, mount_points: mountPoints }
      writeVolumeState(this.pod.path, { ...base, phase: 'mounting' })
      failpoint('mounting', spec.name)
      mounter.setUp()
      failpoint('set-up', spec.name)
      for (const mp of mountPoints) ensureLink(this.pod.path, mp.link, mp.target)
      failpoint('linked', spec.name)
      return writeVolumeState(this.pod.path, { ...base, phase: 'mounted' })
    })
  }

  /**
   * Tears a volume down from its recorded actual state: removes its mount
   * points (only links, never followed), has its plugin tear it down, and
   * drops the record. Returns false when nothing was recorded. Idempotent.
   */
  unmountVolume(name: string, opts: OperationOptions, why: TearDownOptions = { podRemoved: true }): boolean {
    return this.run(name, opts, () => {
      const rec = readVolumeState(this.pod.path, name)
      if (!rec) return false
      let plugin: VolumePlugin
      let spec: VolumeSpec
      try {
        if (!Array.isArray(rec.mount_points) || !rec.mount_points.every(isMountPoint)) throw new Error('damaged mount points')
        plugin = this.registry.findPluginByName(rec.plugin)
        spec = plugin.constructVolumeSpec(name, rec)
      } catch {
        // A record no plugin can use (damaged, or from a newer podctl): remove the links it
        // lists and let the pod's deletion, which never follows a link, do the rest.
        for (const mp of Array.isArray(rec.mount_points) ? rec.mount_points : []) if (isMountPoint(mp)) removeLink(this.pod.path, mp.link, mp.target)
        removeVolumeState(this.pod.path, name)
        return false
      }
      writeVolumeState(this.pod.path, { volume: rec.volume, plugin: rec.plugin, spec: rec.spec, mount_points: rec.mount_points, phase: 'unmounting' })
      failpoint('unmounting', name)
      for (const mp of rec.mount_points) removeLink(this.pod.path, mp.link, mp.target)
      plugin.newUnmounter(spec, this.pod).tearDown(why)
      removeVolumeState(this.pod.path, name)
      return true
    })
  }

  /** The recorded actual state of every volume of the pod. */
  actualState(): VolumeStateRecord[] {
    return recordedVolumes(this.pod.path).flatMap((n) => readVolumeState(this.pod.path, n) ?? [])
  }
}
