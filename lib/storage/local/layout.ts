/** Where a data dir keeps claims, classes and persistent volumes: pure path arithmetic (Documentation/devel/volumes.md, Layout on disk). */
import path from 'node:path'
import { registerDataDirFolders } from '../../pod/layout.js'

// Checked with the pod room's directories before a command works on a data
// dir; `controller` is the lease file's (lib/election/file.ts cannot register it: it stands below lib/pod).
registerDataDirFolders('volumes', 'volume-locks', 'classes', 'claims', 'controller')

export const volumesRoot = (dataDir: string): string => path.join(dataDir, 'volumes')
export const pvDir = (dataDir: string, name: string): string => path.join(volumesRoot(dataDir), name)
export const PV_RECORD = 'volume.json'
export const PV_DATA = 'data'
/** The pods bound to a volume: the directory's name is older than claim objects. */
export const PV_BINDINGS = 'claims'
export const pvDataDir = (dataDir: string, name: string): string => path.join(pvDir(dataDir, name), PV_DATA)
export const pvBindingsDir = (dataDir: string, name: string): string => path.join(pvDir(dataDir, name), PV_BINDINGS)

/** Locks of claims, classes and volumes, and of volume operations (lib/volume): gc's sweep of `<data>/locks/` would take them for dead pods' locks. */
export const volumeLocksDir = (dataDir: string): string => path.join(dataDir, 'volume-locks')
/** The lock of a persistent volume (`pv`), a claim or a class. UUIDs and names hold no ".", so no two collide. */
export const objectLock = (dataDir: string, kind: 'pv' | 'claim' | 'class', name: string): string => path.join(volumeLocksDir(dataDir), `${kind}.${name}`)
