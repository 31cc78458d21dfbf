/**
 * `empty`: a directory owned by the pod, `<pod>/volumes/<name>/`, created
 * empty when the pod starts and deleted with it (emptyDir).
 */
import { removeTree } from '../../fs/remove-tree.js'
import { podVolumeDir, podVolumeRel } from '../layout.js'
import { volumeMetrics } from '../metrics.js'
import { mkdirsInside, resolveInside } from '../../fs/inside.js'
import type { Mounter, PodRef, Unmounter, VolumePlugin, VolumeSpec, VolumeStateRecord } from '../types.js'
import { specFromRecord } from './spec.js'

export const EMPTY_PLUGIN = 'podctl.io/empty'

/** The data dir of a volume that lives in the pod (empty, files), or undefined if it is not a real directory there. */
export const inPodPath = (pod: PodRef, name: string): string | undefined => resolveInside(pod.path, podVolumeRel(name))

/** Usage of a volume in the pod; its root is never followed if an app replaced it with a link. */
export const inPodMetrics = (pod: PodRef, name: string) => () => {
  const p = inPodPath(pod, name)
  return volumeMetrics(p ?? podVolumeDir(pod.path, name), false, { followRoot: false })
}

/** Removes a volume directory of the pod, never following a link on the way or in it. */
export const removeInPod = (pod: PodRef, name: string): void => {
  const p = inPodPath(pod, name)
  if (p !== undefined) removeTree(p)
}

export const emptyPlugin: VolumePlugin = {
  name: EMPTY_PLUGIN,
  canSupport: (spec: VolumeSpec) => spec.volume.kind === 'empty',
  newMounter: (spec: VolumeSpec, pod: PodRef): Mounter => ({
    pluginName: EMPTY_PLUGIN,
    path: podVolumeDir(pod.path, spec.name),
    setUp: () => void mkdirsInside(pod.path, podVolumeRel(spec.name)),
    getMetrics: inPodMetrics(pod, spec.name),
  }),
  newUnmounter: (spec: VolumeSpec, pod: PodRef): Unmounter => ({
    pluginName: EMPTY_PLUGIN,
    path: podVolumeDir(pod.path, spec.name),
    tearDown: () => removeInPod(pod, spec.name),
    getMetrics: inPodMetrics(pod, spec.name),
  }),
  constructVolumeSpec: (name: string, record: VolumeStateRecord) => specFromRecord(name, record, 'empty'),
}
