/** `empty` (emptyDir): `<pod>/volumes/<name>/`, created empty when the pod starts and deleted with it. */
import { mkdirsInside, resolveInside } from '../../fs/inside.js'
import { removeTree } from '../../fs/remove-tree.js'
import { podVolumeDir, podVolumeRel } from '../layout.js'
import { volumeMetrics } from '../metrics.js'
import type { PodRef } from '../types.js'
import { kindPlugin, type KindVolume } from './kind.js'

/** A volume whose data is `<pod>/volumes/<name>/`; usage and removal never follow a link an app put on the way or in it. */
export const inPodVolume = (pod: PodRef, name: string, setUp: () => void): KindVolume => {
  const dir = podVolumeDir(pod.path, name)
  return {
    path: dir,
    setUp,
    getMetrics: () => volumeMetrics(resolveInside(pod.path, podVolumeRel(name)) ?? dir, false, { followRoot: false }),
    tearDown: () => {
      const p = resolveInside(pod.path, podVolumeRel(name))
      if (p !== undefined) removeTree(p)
    },
  }
}

export const emptyPlugin = kindPlugin('podctl.io/empty', 'empty', (_v, name, pod) => inPodVolume(pod, name, () => void mkdirsInside(pod.path, podVolumeRel(name))))
