/**
 * The data dir's ClaimStore: classes and claims as files, changed under
 * their locks in `<data>/volume-locks/`; volumes as the data dir's
 * persistent volumes (volumes.ts); the controller's lease file says who leads.
 */
import fs from 'node:fs'
import { PodctlError } from '../../errors.js'
import { DIR_MODE } from '../../fs/modes.js'
import { DEFAULT_WAIT_MS } from '../../lock/lock.js'
import { withLockAt } from '../../lock/with-lock.js'
import { defaultIdentity } from '../../election/election.js'
import { controllerLive } from '../../election/file.js'
import { Include, listPods } from '../../pod/walk.js'
import { boundTo, checkClaimOptions, CLAIM, existingClaim, newClaim, type CreateClaimOptions, type VolumeClaim } from '../claims.js'
import { CLASS, checkClassUnused, newClass, type CreateClassOptions, type VolumeClass } from '../classes.js'
import { checkName, listObjects, mustExist, objectsDir, readObject, removeObject, unlessError, withEventOf, writeObject, type NewEvent } from '../objects.js'
import type { ClaimStore, ClaimUser, Held, ReclaimOutcome, Stored } from '../store.js'
import { isProvisionedName, provisionedName, type PvRecord } from '../volume-record.js'
import { dropStaleBindings } from './bindings.js'
import { objectLock, volumesRoot } from './layout.js'
import { keepReleased } from './reclaim.js'
import { deleteVolumeDir, findVolume, listVolumes, readVolume, withVolumeLock, writeNewVolume, writeVolume } from './volumes.js'

const stored = <T>(value: T | undefined): Stored<T> | undefined => (value === undefined ? undefined : { value, rev: '' })

/** The claim object of that name in the data dir, if any. */
export const findClaim = (dataDir: string, name: string): VolumeClaim | undefined => readObject(dataDir, CLAIM, name)

/** The volume a manifest's `"claim": NAME` means: claim NAME's, else the volume NAME (CONTRACT §7); EBADSTATE if not bound yet. */
export const volumeOfClaim = (dataDir: string, name: string): string => {
  const c = findClaim(dataDir, name)
  if (c === undefined) return name
  if (c.phase !== 'bound' || c.volume === null) {
    throw new PodctlError('EBADSTATE', `volume claim ${name} is ${c.phase}, not bound to a volume`, `see podctl volume claim inspect ${name}`)
  }
  return c.volume
}

/** The pods of the data dir (any state, until removed) whose manifest names claim `name`. */
export const podsUsingClaim = (dataDir: string, name: string): string[] =>
  listPods(dataDir, Include.all).flatMap((p) => {
    try {
      return (p.podManifest().manifest.volumes ?? []).some((v) => v.kind === 'persistent' && v.claim === name) ? [p.uuid] : []
    } catch {
      return []
    } finally {
      p.close()
    }
  })

export class LocalStore implements ClaimStore {
  readonly dataDir: string
  readonly identity: string
  readonly flag = ''

  constructor(dataDir: string, identity = defaultIdentity()) {
    this.dataDir = dataDir
    this.identity = identity
  }

  #lock<T>(kind: 'claim' | 'class', name: string, fn: () => T, waitMs = DEFAULT_WAIT_MS): T {
    checkName(kind, name) // before the name is part of a path
    return withLockAt(objectLock(this.dataDir, kind, name), `volume ${kind} ${name}`, { wait: waitMs > 0, timeoutMs: waitMs }, fn)
  }

  findClass = async (name: string): Promise<VolumeClass | undefined> => readObject(this.dataDir, CLASS, name)
  readClass = async (name: string): Promise<VolumeClass> => mustExist(readObject(this.dataDir, CLASS, name), CLASS, name)
  listClasses = async (): Promise<VolumeClass[]> => listObjects(this.dataDir, CLASS)

  async createClass(name: string, opts: CreateClassOptions): Promise<VolumeClass> {
    const c = newClass(name, opts)
    return this.#lock('class', name, () => {
      if (readObject(this.dataDir, CLASS, name)) throw new PodctlError('EBADSTATE', `volume class ${name} already exists`, `see podctl volume class inspect ${name}`)
      const other = c.default ? listObjects(this.dataDir, CLASS).find((x) => x.default) : undefined
      if (other) throw new PodctlError('EBADSTATE', `volume class ${other.name} is already the default`, `remove it first (podctl volume class rm ${other.name}), or create ${name} without --default`)
      writeObject(this.dataDir, CLASS, name, c)
      return c
    })
  }

  /** Its claims are listed under the class's lock, which createClaim takes too: a claim made meanwhile is in the list, or waits. */
  async removeClass(name: string): Promise<void> {
    this.#lock('class', name, () => {
      mustExist(readObject(this.dataDir, CLASS, name), CLASS, name)
      checkClassUnused(name, listObjects(this.dataDir, CLAIM), this.flag)
      removeObject(this.dataDir, CLASS, name)
    })
  }

  findClaim = async (name: string): Promise<Stored<VolumeClaim> | undefined> => stored(findClaim(this.dataDir, name))
  readClaim = async (name: string): Promise<Stored<VolumeClaim>> => ({ value: mustExist(findClaim(this.dataDir, name), CLAIM, name), rev: '' })
  listClaims = async (): Promise<VolumeClaim[]> => listObjects(this.dataDir, CLAIM)

  async createClaim(name: string, opts: CreateClaimOptions = {}): Promise<VolumeClaim> {
    const mode = checkClaimOptions(name, opts)
    const clsName = opts.class ?? listObjects(this.dataDir, CLASS).find((c) => c.default)?.name ?? null
    const make = (): VolumeClaim =>
      this.#lock('claim', name, () => {
        const old = findClaim(this.dataDir, name)
        if (old) return existingClaim(old, clsName, opts)
        const c = newClaim(name, clsName, mode, opts)
        writeObject(this.dataDir, CLAIM, name, c)
        return c
      })
    if (clsName === null) return make()
    // Under the class's lock, so that `class rm` sees every claim of its class.
    return this.#lock('class', clsName, () => {
      if (!readObject(this.dataDir, CLASS, clsName)) {
        throw new PodctlError('EUSAGE', `unknown volume class ${JSON.stringify(clsName)}`, 'see podctl volume class list; make one with podctl volume class create NAME --provisioner local')
      }
      return make()
    })
  }

  async saveClaim(_s: Stored<VolumeClaim>, next: VolumeClaim, _held: Held, event?: NewEvent): Promise<Stored<VolumeClaim>> {
    const c = withEventOf(next, event)
    writeObject(this.dataDir, CLAIM, c.name, c)
    return { value: c, rev: '' }
  }

  podsUsing = async (c: VolumeClaim): Promise<ClaimUser[]> => podsUsingClaim(this.dataDir, c.name).map((pod) => ({ pod }))

  findVolume = async (name: string): Promise<Stored<PvRecord> | undefined> => stored(findVolume(this.dataDir, name))
  staticVolumes = async (): Promise<PvRecord[]> => listVolumes(this.dataDir, (n) => !isProvisionedName(n))

  async ownVolume(c: VolumeClaim, statics?: PvRecord[]): Promise<Stored<PvRecord> | undefined> {
    // By name, one lstat and one read, not among every volume; none, half-made or damaged: provisioning makes it again or says why.
    const v = unlessError(() => readVolume(this.dataDir, provisionedName(c.uid)))
    return stored(v?.claim_ref?.uid === c.uid ? v : (statics ?? (await this.staticVolumes())).find((s) => s.claim_ref?.uid === c.uid))
  }

  /** Free means no claim_ref, not released or recycling, and no pod bound to it. */
  bindStatic = async (name: string, c: VolumeClaim, fits: (v: PvRecord) => boolean): Promise<boolean> =>
    withVolumeLock(this.dataDir, name, () => {
      const rec = unlessError(() => readVolume(this.dataDir, name))
      if (!rec || rec.claim_ref || rec.phase !== 'available' || !fits(rec) || dropStaleBindings(this.dataDir, name).length > 0) return false
      writeVolume(this.dataDir, { ...rec, claim_ref: { name: c.name, uid: c.uid } })
      return true
    })

  async provisioned(s: Stored<VolumeClaim>, v: PvRecord, event: NewEvent, held: Held): Promise<Stored<VolumeClaim> | undefined> {
    if (!writeNewVolume(this.dataDir, v)) {
      // Made by an earlier try, to be read again; a damaged record says so (EFAILED, naming its file) instead of being waited for.
      readVolume(this.dataDir, v.name)
      return undefined
    }
    return this.saveClaim(s, boundTo(s.value, v), held, event)
  }

  async release(s: Stored<VolumeClaim>, v: Stored<PvRecord> | undefined): Promise<void> {
    if (v) {
      withVolumeLock(this.dataDir, v.value.name, () => {
        const rec = findVolume(this.dataDir, v.value.name)
        if (rec?.claim_ref?.uid === s.value.uid && rec.phase !== 'released') writeVolume(this.dataDir, { ...rec, phase: 'released' })
      })
    }
    removeObject(this.dataDir, CLAIM, s.value.name)
  }

  releasedVolumes = async (): Promise<string[]> => listVolumes(this.dataDir).flatMap((v) => (v.phase === 'released' ? [v.name] : []))
  keep = async (v: Stored<PvRecord>): Promise<ReclaimOutcome> => keepReleased(this.dataDir, v.value)
  deleteVolume = async (v: Stored<PvRecord>): Promise<void> => deleteVolumeDir(this.dataDir, v.value.name)
  volumeEvent = async (v: Stored<PvRecord>, event: NewEvent): Promise<void> => void writeVolume(this.dataDir, withEventOf(v.value, event))

  // async: a lock that is busy (or a bad name) is a rejection, as the interface promises, not a throw before any promise exists.
  async withLock<T>(kind: 'claim' | 'volume', name: string, waitMs: number | undefined, fn: (held: Held) => Promise<T>): Promise<T> {
    return kind === 'claim' ? this.#lock('claim', name, () => fn(undefined), waitMs) : withVolumeLock(this.dataDir, name, () => fn(undefined), waitMs)
  }

  leaderLive = async (): Promise<boolean> => controllerLive(this.dataDir)

  async watch(onClaim: (name: string) => void, onVolume: (name: string) => void, log: (line: string) => void): Promise<() => void> {
    const watchers: fs.FSWatcher[] = []
    for (const dir of [objectsDir(this.dataDir, CLAIM), volumesRoot(this.dataDir)]) {
      try {
        fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE })
        const w = fs.watch(dir, (_event, file) => {
          if (typeof file !== 'string' || file.startsWith('.')) return
          if (dir === volumesRoot(this.dataDir)) return onVolume(file)
          if (!file.endsWith('.json')) return
          onClaim(file.slice(0, -'.json'.length))
          // A removed claim released its volume, whose record changed below volumes/<name>/, out of the watch's sight.
          if (!fs.existsSync(`${dir}/${file}`)) void this.releasedVolumes().then((vs) => vs.forEach(onVolume))
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
  }

  close(): void {}
}
