/**
 * Where volumes live on disk (Documentation/devel/volumes.md). Pure path
 * arithmetic.
 *
 * ```
 * <data>/volumes/<name>/volume.json          a persistent volume's record
 * <data>/volumes/<name>/data/                its data (what apps see)
 * <data>/volumes/<name>/claims/<uuid>.json   pods bound to it
 * <data>/volume-locks/<uuid>.<volume>        the executor's key locks
 * <data>/volume-locks/pv.<name>              a persistent volume's admin lock
 * <pod>/volumes/<name>/                      data of empty and files volumes
 * <pod>/volume-state/<name>.json             actual state: what is mounted where
 * ```
 *
 * The locks are not in `<data>/locks/`: that directory holds only pod
 * locks, and gc's sweep of it treats every other name as a dead pod's lock.
 */
import path from 'node:path'
import { registerDataDirFolders } from '../pod/layout.js'

// What this room walks and writes through, checked with the pod room's
// directories before a command works on a data dir: persistent volumes and
// the locks of volume operations, and the objects of claims, classes and
// the controller's lease (claims.ts, classes.ts, lease.ts).
registerDataDirFolders('volumes', 'volume-locks', 'classes', 'claims', 'controller')

/** Persistent volumes: `<data>/volumes/<name>/`. */
export const volumesRoot = (dataDir: string): string => path.join(dataDir, 'volumes')
export const pvDir = (dataDir: string, name: string): string => path.join(volumesRoot(dataDir), name)
export const PV_RECORD = 'volume.json'
export const PV_DATA = 'data'
export const PV_CLAIMS = 'claims'
export const pvDataDir = (dataDir: string, name: string): string => path.join(pvDir(dataDir, name), PV_DATA)
export const pvClaimsDir = (dataDir: string, name: string): string => path.join(pvDir(dataDir, name), PV_CLAIMS)

/** Locks of volume operations, outside `<data>/locks/` (see above). */
export const volumeLocksDir = (dataDir: string): string => path.join(dataDir, 'volume-locks')
/** The executor's lock of one (pod, volume) key. UUIDs and volume names hold no ".". */
export const opLockPath = (dataDir: string, uuid: string, volume: string): string => path.join(volumeLocksDir(dataDir), `${uuid}.${volume}`)
/** Taken for each read-modify-write of the controller's lease (lease.ts). */
export const controllerLeaseLock = (dataDir: string): string => path.join(volumeLocksDir(dataDir), 'controller.lease')
/** The lock that serializes claims, releases and removal of one persistent volume. */
export const pvLockPath = (dataDir: string, name: string): string => path.join(volumeLocksDir(dataDir), `pv.${name}`)

/** In a pod: data of empty and files volumes, relative to the pod dir. */
export const POD_VOLUMES = 'volumes'
/** In a pod: the actual-state records, relative to the pod dir. */
export const POD_VOLUME_STATE = 'volume-state'
export const podVolumeRel = (name: string): string => `${POD_VOLUMES}/${name}`
export const podVolumeDir = (podPath: string, name: string): string => path.join(podPath, POD_VOLUMES, name)
export const volumeStateDir = (podPath: string): string => path.join(podPath, POD_VOLUME_STATE)
