/**
 * `host`: an existing path of the host (hostPath). Mount points link to it;
 * podctl never creates, changes or removes anything in it. `readOnly` is
 * recorded and shown, but not enforced: without mount namespaces (and
 * without root) there is no read-only view of a directory to give an app
 * that runs as the same user (Documentation/devel/volumes.md).
 */
import fs from 'node:fs'
import { PodctlError } from '../../errors.js'
import { volumeMetrics } from '../metrics.js'
import type { Mounter, PodRef, Unmounter, VolumePlugin, VolumeSpec, VolumeStateRecord } from '../types.js'
import { specFromRecord } from './spec.js'

export const HOST_PLUGIN = 'podctl.io/host'

const sourceOf = (spec: VolumeSpec): string => {
  if (spec.volume.kind !== 'host') throw new PodctlError('EFAILED', `bug: volume ${spec.name} is not a host volume`)
  return spec.volume.source
}

export const hostPlugin: VolumePlugin = {
  name: HOST_PLUGIN,
  canSupport: (spec: VolumeSpec) => spec.volume.kind === 'host',
  newMounter: (spec: VolumeSpec, _pod: PodRef): Mounter => {
    const source = sourceOf(spec)
    return {
      pluginName: HOST_PLUGIN,
      path: source,
      setUp: () => {
        if (!fs.existsSync(source)) {
          throw new PodctlError('EFAILED', `host path ${source} of volume "${spec.name}" does not exist`, 'create it, or change "source" in the manifest')
        }
      },
      getMetrics: () => volumeMetrics(source, true, { followRoot: true }),
    }
  },
  newUnmounter: (spec: VolumeSpec, _pod: PodRef): Unmounter => {
    const source = sourceOf(spec)
    return {
      pluginName: HOST_PLUGIN,
      path: source,
      // The mount points (links) are the executor's; the source is the host's.
      tearDown: () => {},
      getMetrics: () => volumeMetrics(source, true, { followRoot: true }),
    }
  },
  constructVolumeSpec: (name: string, record: VolumeStateRecord) => specFromRecord(name, record, 'host'),
}
