/**
 * Where a data dir keeps claims, classes and persistent volumes
 * (Documentation/devel/volumes.md). Pure path arithmetic.
 *
 * ```
 * <data>/claims/<name>.json                  a volume claim
 * <data>/classes/<name>.json                 a volume class
 * <data>/volumes/<name>/volume.json          a persistent volume's record
 * <data>/volumes/<name>/data/                its data (what apps see)
 * <data>/volumes/<name>/claims/<uuid>.json   the pods bound to it
 * <data>/volume-locks/pv.<name>              a persistent volume's lock
 * <data>/volume-locks/claim.<name>, class.<name>
 * ```
 *
 * The locks are not in `<data>/locks/`: that directory holds only pod
 * locks, and gc's sweep of it treats every other name as a dead pod's lock.
 */
import path from 'node:path'
import { registerDataDirFolders } from '../../pod/layout.js'

// What this room walks and writes through, checked with the pod room's
// directories before a command works on a data dir: persistent volumes, the
// locks of their operations, the objects of claims and classes, and the
// controller's lease file (lib/election/file.ts, which stands below the pod
// room and so cannot register it itself).
registerDataDirFolders('volumes', 'volume-locks', 'classes', 'claims', 'controller')

export const volumesRoot = (dataDir: string): string => path.join(dataDir, 'volumes')
export const pvDir = (dataDir: string, name: string): string => path.join(volumesRoot(dataDir), name)
export const PV_RECORD = 'volume.json'
export const PV_DATA = 'data'
/** The pods bound to a volume: the directory's name is older than claim objects. */
export const PV_BINDINGS = 'claims'
export const pvDataDir = (dataDir: string, name: string): string => path.join(pvDir(dataDir, name), PV_DATA)
export const pvBindingsDir = (dataDir: string, name: string): string => path.join(pvDir(dataDir, name), PV_BINDINGS)

/** Locks of claims, classes and volumes, and of volume operations (lib/volume), outside `<data>/locks/`. */
export const volumeLocksDir = (dataDir: string): string => path.join(dataDir, 'volume-locks')
/** The lock of a persistent volume (`pv`), a claim or a class. UUIDs and names hold no ".", so no two collide. */
export const objectLock = (dataDir: string, kind: 'pv' | 'claim' | 'class', name: string): string => path.join(volumeLocksDir(dataDir), `${kind}.${name}`)
