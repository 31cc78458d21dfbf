/**
 * `files`: projected content in `<pod>/volumes/<name>/`, written by the
 * AtomicWriter, updated while the pod runs by `podctl volume update`.
 */
import { PodctlError } from '../../errors.js'
import { podVolumeDir, podVolumeRel } from '../layout.js'
import { AtomicWriter, PROJECTED_DIR_MODE, payloadFromFiles } from '../atomic-writer.js'
import { mkdirsInside } from '../../fs/inside.js'
import type { Mounter, PodRef, Unmounter, VolumePlugin, VolumeSpec, VolumeStateRecord } from '../types.js'
import { inPodMetrics, removeInPod } from './empty.js'
import { specFromRecord } from './spec.js'

export const FILES_PLUGIN = 'podctl.io/files'

export const filesPlugin: VolumePlugin = {
  name: FILES_PLUGIN,
  canSupport: (spec: VolumeSpec) => spec.volume.kind === 'files',
  newMounter: (spec: VolumeSpec, pod: PodRef): Mounter => ({
    pluginName: FILES_PLUGIN,
    path: podVolumeDir(pod.path, spec.name),
    setUp: () => {
      if (spec.volume.kind !== 'files') throw new PodctlError('EFAILED', `bug: volume ${spec.name} is not a files volume`)
      const dir = mkdirsInside(pod.path, podVolumeRel(spec.name), PROJECTED_DIR_MODE)
      const w = new AtomicWriter(dir)
      // Projected once; after that the content is what the last
      // `volume update` made it, and setting up again keeps it.
      if (w.currentTsDir() === undefined) w.write(payloadFromFiles(spec.volume.files))
    },
    getMetrics: inPodMetrics(pod, spec.name),
  }),
  newUnmounter: (spec: VolumeSpec, pod: PodRef): Unmounter => ({
    pluginName: FILES_PLUGIN,
    path: podVolumeDir(pod.path, spec.name),
    tearDown: () => removeInPod(pod, spec.name),
    getMetrics: inPodMetrics(pod, spec.name),
  }),
  constructVolumeSpec: (name: string, record: VolumeStateRecord) => specFromRecord(name, record, 'files'),
}
