/**
 * `persistent`: a named volume of `<data>/volumes/` that outlives pods.
 * Setting up claims it for the pod (ReadWriteOnce is exclusive among
 * running pods); tearing down releases the claim, and the last release
 * applies the volume's reclaim policy (lib/volume/persistent.ts).
 */
import fs from 'node:fs'
import { PodctlError, oneLine } from '../../errors.js'
import { unreachableDir } from '../../fs/reach.js'
import { pvDataDir } from '../layout.js'
import { volumeMetrics } from '../metrics.js'
import { volumeOfClaim } from '../claims.js'
import { claimVolume, readVolume, releaseVolume, volumeDataPath } from '../persistent.js'
import type { Mounter, PodRef, Unmounter, VolumePlugin, VolumeSpec, VolumeStateRecord } from '../types.js'
import { specFromRecord } from './spec.js'
import { accessModeOf } from '../access-modes.js'

export const PERSISTENT_PLUGIN = 'podctl.io/persistent'

/** Where a volume's data is (a provisioner may have made it elsewhere); its own data/ when it cannot be read. */
const dataPathOf = (dataDir: string, name: string): string => {
  try {
    return volumeDataPath(dataDir, readVolume(dataDir, name))
  } catch {
    return pvDataDir(dataDir, name)
  }
}

/** The volume to release: the claim's, or the claim's name when it is not a bound claim object. */
const unmountName = (dataDir: string, claim: string): string => {
  try {
    return volumeOfClaim(dataDir, claim)
  } catch {
    return claim
  }
}

const claimOf = (spec: VolumeSpec) => {
  if (spec.volume.kind !== 'persistent') throw new PodctlError('EFAILED', `bug: volume ${spec.name} is not a persistent volume`)
  return spec.volume
}

export const persistentPlugin: VolumePlugin = {
  name: PERSISTENT_PLUGIN,
  canSupport: (spec: VolumeSpec) => spec.volume.kind === 'persistent',
  newMounter: (spec: VolumeSpec, pod: PodRef): Mounter => {
    const v = claimOf(spec)
    const name = volumeOfClaim(pod.dataDir, v.claim)
    const data = dataPathOf(pod.dataDir, name)
    return {
      pluginName: PERSISTENT_PLUGIN,
      path: data,
      setUp: () => {
        claimVolume(pod.dataDir, name, pod.uuid, { ...(v.accessMode ? { mode: accessModeOf(v.accessMode) } : {}), readOnly: v.readOnly === true })
        if (data !== pvDataDir(pod.dataDir, name)) {
          // A provisioner's directory: apps are linked to it only while it is a directory reached without a link.
          const problem = unreachableDir(data)
          if (problem) throw new PodctlError('EFAILED', `persistent volume ${name} cannot be used: ${oneLine(problem)}`, 'its provisioner must keep a real directory there (no symlink on the way)')
        } else if (!fs.lstatSync(data, { throwIfNoEntry: false })?.isDirectory()) {
          throw new PodctlError('EFAILED', `persistent volume ${name} has no data directory (${data} is missing or not a directory)`, `remove and create it again: podctl volume rm ${name}`)
        }
      },
      getMetrics: () => volumeMetrics(data, true, { followRoot: false }),
    }
  },
  newUnmounter: (spec: VolumeSpec, pod: PodRef): Unmounter => {
    const v = claimOf(spec)
    // A claim cannot be removed while a pod using it is not, so it still says which volume.
    const name = unmountName(pod.dataDir, v.claim)
    const data = dataPathOf(pod.dataDir, name)
    return {
      pluginName: PERSISTENT_PLUGIN,
      path: data,
      tearDown: ({ podRemoved }) => void releaseVolume(pod.dataDir, name, pod.uuid, { reclaim: podRemoved }),
      getMetrics: () => volumeMetrics(data, true, { followRoot: false }),
    }
  },
  constructVolumeSpec: (name: string, record: VolumeStateRecord) => specFromRecord(name, record, 'persistent'),
}
