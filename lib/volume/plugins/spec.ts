/** Rebuilding a volume spec from its recorded actual state (ConstructVolumeSpec). */
import { PodctlError } from '../../errors.js'
import type { Volume } from '../../pod/manifest.js'
import type { VolumeSpec, VolumeStateRecord } from '../types.js'

/** The spec a record was made from, checked to be of the plugin's kind. */
export const specFromRecord = (name: string, record: VolumeStateRecord, kind: Volume['kind']): VolumeSpec => {
  const v = record.spec as Partial<Volume> | undefined
  if (v === undefined || v === null || typeof v !== 'object' || v.kind !== kind || record.volume !== name) {
    throw new PodctlError('EFAILED', `the recorded state of volume "${name}" is damaged: it is not a ${kind} volume named "${name}"`)
  }
  return { name, volume: v as Volume }
}
