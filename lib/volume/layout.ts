/** Where a pod's volumes live on disk (Documentation/devel/volumes.md); persistent ones are lib/storage/local/layout.ts's. */
import path from 'node:path'
import { volumeLocksDir } from '../storage/local/layout.js'

/** The executor's lock of one (pod, volume) key, beside the locks of lib/storage/local/layout.ts. */
export const opLockPath = (dataDir: string, uuid: string, volume: string): string => path.join(volumeLocksDir(dataDir), `${uuid}.${volume}`)

/** In a pod: data of empty and files volumes, relative to the pod dir. */
export const POD_VOLUMES = 'volumes'
/** In a pod: the actual-state records, relative to the pod dir. */
export const POD_VOLUME_STATE = 'volume-state'
export const podVolumeRel = (name: string): string => `${POD_VOLUMES}/${name}`
export const podVolumeDir = (podPath: string, name: string): string => path.join(podPath, POD_VOLUMES, name)
export const volumeStateDir = (podPath: string): string => path.join(podPath, POD_VOLUME_STATE)

/**
 * Where the apps of an isolated pod see each volume's data (the runtime
 * binds it there), and so where the mount-point links of such a pod
 * point: a path of the pod's, never a host path, so that the data dir's
 * location shows nowhere inside the pod (CONTRACT §12a).
 */
export const ISOLATED_VOLUMES = '/run/podctl/volumes'
export const isolatedVolumePath = (name: string): string => `${ISOLATED_VOLUMES}/${name}`
