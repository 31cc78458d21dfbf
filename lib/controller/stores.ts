/**
 * Where the controller finds its work, behind one small interface: the
 * data dir's claims and volumes (files under locks, watched with
 * fs.watch), or the fleet's (etcd, one transaction per decision, watched
 * with etcd's watch). The controller's queues, workers, backoff and
 * leadership are the same over both.
 */
import fs from 'node:fs'
import { reclaimVolume, releasedVolumes, syncClaim, type BinderOptions, type SyncResult } from '../volume/binder.js'
import { CLAIM, listClaims, type VolumeClaim } from '../volume/claims.js'
import { reclaimFleetVolume, releasedFleetVolumes, sweepFleetCopies, syncFleetClaim } from '../volume/fleet-binder.js'
import type { FleetStore } from '../volume/fleet-store.js'
import { volumesRoot } from '../volume/layout.js'
import { objectsDir } from '../volume/objects.js'
import { readVolume, type ReclaimOutcome } from '../volume/persistent.js'

export interface ControllerStore {
  /** "claims/ and volumes/", "the fleet's etcd": for the log. */
  readonly what: string
  /** In a fleet, this node's name: its classes name exec provisioners, never programs. */
  readonly node?: string
  claims(): Promise<VolumeClaim[]>
  releasedVolumes(): Promise<string[]>
  syncClaim(name: string, opts: BinderOptions): Promise<SyncResult>
  reclaimVolume(name: string, opts: BinderOptions): Promise<ReclaimOutcome>
  /** The class a volume was provisioned through, for the metrics ('' when unknown). */
  classOfVolume(name: string): Promise<string>
  /** Tells of changed claims and volumes at once; the returned function stops it. */
  watch(onClaim: (name: string) => void, onVolume: (name: string) => void, log: (line: string) => void): Promise<() => void>
  /** What a node does at each resync whether it leads or not. */
  housekeeping?(): Promise<string | undefined>
}

/** The data dir's store. */
export const dataDirStore = (dataDir: string): ControllerStore => ({
  what: dataDir,
  claims: async () => listClaims(dataDir),
  releasedVolumes: async () => releasedVolumes(dataDir),
  syncClaim: (name, opts) => syncClaim(dataDir, name, opts),
  reclaimVolume: (name, opts) => reclaimVolume(dataDir, name, opts),
  classOfVolume: async (name) => {
    try {
      return readVolume(dataDir, name).provisioned?.class ?? ''
    } catch {
      return ''
    }
  },
  watch: async (onClaim, onVolume, log) => {
    const watchers: fs.FSWatcher[] = []
    for (const dir of [objectsDir(dataDir, CLAIM), volumesRoot(dataDir)]) {
      try {
        fs.mkdirSync(dir, { recursive: true, mode: 0o750 })
        const w = fs.watch(dir, (_event, file) => {
          if (typeof file !== 'string' || file.startsWith('.')) return
          if (dir === volumesRoot(dataDir)) onVolume(file)
          else if (file.endsWith('.json')) {
            onClaim(file.slice(0, -'.json'.length))
            // A removed claim released its volume, whose record changed below volumes/<name>/, out of the watch's sight.
            if (!fs.existsSync(`${dir}/${file}`)) for (const v of releasedVolumes(dataDir)) onVolume(v)
          }
        })
        w.on('error', () => {}) // the directory went away: the resync carries on
        watchers.push(w)
      } catch (er) {
        log(`watch ${dir}: ${(er as Error).message}; relying on the resync`)
      }
    }
    return () => {
      for (const w of watchers) w.close()
    }
  },
})

/** The fleet's store; this node's data dir is where its copies of fleet volumes are. */
export const fleetStore = (store: FleetStore, dataDir: string): ControllerStore => ({
  what: "the fleet's etcd",
  node: store.node,
  claims: () => store.listClaims(),
  releasedVolumes: () => releasedFleetVolumes(store),
  syncClaim: (name, opts) => syncFleetClaim(store, dataDir, name, opts),
  reclaimVolume: (name, opts) => reclaimFleetVolume(store, dataDir, name, opts),
  classOfVolume: async (name) => (await store.findVolume(name).catch(() => undefined))?.value.provisioned?.class ?? '',
  watch: async (onClaim, onVolume) => {
    const stops = [store.cluster.watch('claims/', (key) => onClaim(key.slice('claims/'.length))), store.cluster.watch('volumes/', (key) => onVolume(key.slice('volumes/'.length)))]
    return () => {
      for (const s of stops) void s().catch(() => {})
    }
  },
  housekeeping: async () => {
    const n = await sweepFleetCopies(store, dataDir)
    return n > 0 ? `removed ${n === 1 ? "this node's copy of a fleet volume" : `${n} copies of fleet volumes`} the fleet deleted` : undefined
  },
})
