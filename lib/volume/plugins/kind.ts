/** What the built-in plugins share: each serves one kind of the manifest's volumes. */
import { PodctlError } from '../../errors.js'
import type { Volume } from '../../pod/manifest.js'
import type { Mounter, PodRef, Unmounter, VolumePlugin, VolumeSpec, VolumeStateRecord } from '../types.js'

/** One volume as a plugin handles it: its mounter and unmounter are views of this. */
export type KindVolume = Omit<Mounter & Unmounter, 'pluginName'>

/** A plugin for volumes of `kind`; `open` makes one volume's handle, told whether it is for a tear-down. */
export const kindPlugin = <K extends Volume['kind']>(
  name: string,
  kind: K,
  open: (v: Extract<Volume, { kind: K }>, volume: string, pod: PodRef, tearingDown: boolean) => KindVolume,
): VolumePlugin => {
  const volumeOf = (spec: VolumeSpec, pod: PodRef, tearingDown: boolean): KindVolume => {
    if (spec.volume.kind !== kind) throw new PodctlError('EFAILED', `bug: volume ${spec.name} is not a ${kind} volume`)
    return open(spec.volume as Extract<Volume, { kind: K }>, spec.name, pod, tearingDown)
  }
  return {
    name,
    canSupport: (spec) => spec.volume.kind === kind,
    newMounter: (spec, pod) => {
      const v = volumeOf(spec, pod, false)
      return { pluginName: name, path: v.path, setUp: v.setUp, getMetrics: v.getMetrics }
    },
    newUnmounter: (spec, pod) => {
      const v = volumeOf(spec, pod, true)
      return { pluginName: name, path: v.path, tearDown: v.tearDown, getMetrics: v.getMetrics }
    },
    // The spec a record was made from, checked to be of this kind.
    constructVolumeSpec: (volume: string, record: VolumeStateRecord): VolumeSpec => {
      const v = record.spec as Partial<Volume> | undefined
      if (v === undefined || v === null || typeof v !== 'object' || v.kind !== kind || record.volume !== volume) {
        throw new PodctlError('EFAILED', `the recorded state of volume "${volume}" is damaged: it is not a ${kind} volume named "${volume}"`)
      }
      return { name: volume, volume: v as Volume }
    },
  }
}
