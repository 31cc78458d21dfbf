/**
 * Persistent volumes: named volumes that outlive pods (CONTRACT §7),
 * `<data>/volumes/<name>/` with a record (volume.json), the data (data/)
 * and the claims of the pods bound to it (claims/<uuid>.json).
 *
 * Claims. A pod claims a volume when it starts to run and stays bound until
 * it is removed; the volume's reclaim policy applies when the last bound
 * pod is removed. A claim *holds* (counts for ReadWriteOnce and for
 * `volume rm`) only while the process that made it is alive and holds the
 * pod's lock, i.e. while that pod is running under the supervisor that
 * claimed: a supervisor killed with SIGKILL releases its claims the moment
 * it dies, with nothing to clean up first. Claims, releases, recycling and
 * removal of one volume are serialized by its lock
 * (`<data>/volume-locks/pv.<name>`), so two pods that start at once cannot
 * both get a ReadWriteOnce volume.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, errnoCode } from '../errors.js'
import { uniqueSuffix, writeFileAtomic } from '../fs/atomic.js'
import { DIR_MODE } from '../fs/modes.js'
import { describeFailure } from '../fs/errors.js'
import { readOwnFile, readOwnText } from '../fs/read.js'
import { removeTree } from '../fs/remove-tree.js'
import { DEFAULT_WAIT_MS } from '../lock/lock.js'
import { formatOwner, ownOwner, parseOwner, sameOwner } from '../lock/owner.js'
import { POD_DIRS, podPath } from '../pod/layout.js'
import { isLocked, lockOwner } from '../pod/locks.js'
import { NAME_RE, type AccessMode } from '../pod/manifest.js'
import { isoTime } from '../pod/record.js'
import { PV_CLAIMS, PV_DATA, PV_RECORD, pvClaimsDir, pvDataDir, pvDir, pvLockPath, volumesRoot } from './layout.js'
import { withVolumeLock as withLock } from './locking.js'
import { diskUsage } from './metrics.js'
import { withEvent, type ObjectEvent } from './objects.js'

export type ReclaimPolicy = 'retain' | 'delete' | 'recycle'
export const RECLAIM_POLICIES: readonly ReclaimPolicy[] = ['retain', 'delete', 'recycle']
export const ACCESS_MODES: readonly AccessMode[] = ['ReadWriteOnce', 'ReadWriteMany']

/** `<data>/volumes/<name>/volume.json`. */
export interface PvRecord {
  version: 1
  name: string
  created_at: string
  reclaim: ReclaimPolicy
  access_mode: AccessMode
  size_limit_bytes: number | null
  /**
   * "recycling" from the start of a scrub until the data is checked empty;
   * "released" from the removal of its claim until its reclaim policy is
   * applied (CONTRACT §8).
   */
  phase: 'available' | 'recycling' | 'released'
  recycled_at: string | null
  /** The claim object this volume is bound to: its reclaim policy then applies when the claim goes, not when a pod does. */
  claim_ref?: ClaimRef | null
  /** How a provisioned volume was made, for its deletion (the class may be gone by then). */
  provisioned?: Provisioned | null
  /** Its last events (VolumeFailedDelete), as a claim keeps its own. */
  events?: ObjectEvent[]
}

export interface ClaimRef {
  name: string
  uid: string
}

export interface Provisioned {
  class: string
  provisioner: string
  parameters: Record<string, string>
  /** Where the data is, when a provisioner made it elsewhere than the volume's own data/ directory. */
  path: string | null
  capacity_bytes: number | null
  /** The identity of who provisioned it (controller or command). */
  by: string
  /** In a fleet: the node whose data dir holds a `local` volume (its class's `node` parameter). */
  node?: string | null
  /** This record is a node's copy of a volume of the fleet (lib/volume/fleet-binder.ts), not the volume's truth. */
  fleet?: boolean
}

/** Where a volume's data is: its own data/ directory, or what its provisioner made. */
export const volumeDataPath = (dataDir: string, rec: PvRecord): string => rec.provisioned?.path ?? pvDataDir(dataDir, rec.name)

/** `<data>/volumes/<name>/claims/<uuid>.json`. */
export interface ClaimRecord {
  pod: string
  mode: AccessMode
  read_only: boolean
  /** Owner record (lib/pod/owner.ts) of the process that claimed: the pod's supervisor. */
  owner: string
  claimed_at: string
}

export interface CreateVolumeOptions {
  reclaim?: ReclaimPolicy
  accessMode?: AccessMode
  sizeLimitBytes?: number | null
  claimRef?: ClaimRef
  provisioned?: Provisioned
}

const short = (uuid: string): string => uuid.slice(0, 8)

const noSuchVolume = (name: string): PodctlError =>
  new PodctlError('ENOVOLUME', `no persistent volume named ${JSON.stringify(name)}`, `create it: podctl volume create ${name}`)

/** Checks a volume name given by a user (EUSAGE). */
export const checkVolumeName = (name: string): void => {
  if (!NAME_RE.test(name)) {
    throw new PodctlError('EUSAGE', `${JSON.stringify(name)} is not a valid volume name: 1 to 63 characters of a-z, 0-9 and "-", starting with a letter or digit`)
  }
}

const lockOpts = { wait: true, timeoutMs: DEFAULT_WAIT_MS }
const withVolumeLock = <T>(dataDir: string, name: string, fn: () => T, opts = lockOpts): T => withLock(pvLockPath(dataDir, name), `persistent volume ${name}`, opts, fn)

/**
 * Provisioned volumes are named pvc-<claim uid>, and no other volume may
 * be: the binder then tells a claim's provisioned volume and the static
 * volumes it may bind apart by name, without reading every record.
 */
const PROVISIONED_NAME_RE = /^pvc-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
export const isProvisionedName = (name: string): boolean => PROVISIONED_NAME_RE.test(name)

/**
 * The smallest size limit a volume can keep: its own data directory takes
 * one block of the file system (usage counts it), so a smaller limit
 * would be exceeded by the empty volume. The file system of the data dir,
 * or of its nearest existing parent before the first write.
 */
export const minSizeLimit = (dataDir: string): number => {
  for (let p = path.resolve(dataDir); ; p = path.dirname(p)) {
    try {
      return fs.statfsSync(p).bsize
    } catch (er) {
      if (p === path.dirname(p) || errnoCode(er) !== 'ENOENT') return 4096
    }
  }
}

/** What createVolume refuses before it writes anything (EUSAGE): a bad or reserved name, a size limit below one block. */
export const checkNewVolume = (dataDir: string, name: string, opts: Pick<CreateVolumeOptions, 'sizeLimitBytes' | 'provisioned'>): void => {
  checkVolumeName(name)
  if (isProvisionedName(name) && !opts.provisioned) {
    throw new PodctlError('EUSAGE', `${JSON.stringify(name)} is not a valid volume name: names of the form pvc-<uuid> are kept for provisioned volumes`, 'choose another name')
  }
  const limit = opts.sizeLimitBytes
  const min = limit === null || limit === undefined ? 0 : minSizeLimit(dataDir)
  if (limit !== null && limit !== undefined && limit < min) {
    throw new PodctlError('EUSAGE', `a size limit of ${limit} bytes cannot hold the volume's own directory: at least ${min} bytes on this file system`, `give --size-limit ${min} or more`)
  }
}

/** Creates a persistent volume, atomically: built under a temporary name, then renamed into place. */
export const createVolume = (dataDir: string, name: string, opts: CreateVolumeOptions = {}): PvRecord => {
  checkNewVolume(dataDir, name, opts)
  const rec: PvRecord = {
    version: 1,
    name,
    created_at: isoTime(),
    reclaim: opts.reclaim ?? 'retain',
    access_mode: opts.accessMode ?? 'ReadWriteOnce',
    size_limit_bytes: opts.sizeLimitBytes ?? null,
    phase: 'available',
    recycled_at: null,
    ...(opts.claimRef ? { claim_ref: opts.claimRef } : {}),
    ...(opts.provisioned ? { provisioned: opts.provisioned } : {}),
  }
  const root = volumesRoot(dataDir)
  fs.mkdirSync(root, { recursive: true, mode: DIR_MODE })
  sweepVolumesDir(dataDir) // what a crashed create or rm left, long ago
  const tmp = path.join(root, `.new-${name}-${uniqueSuffix()}`)
  fs.mkdirSync(tmp, { mode: DIR_MODE })
  try {
    // A provisioner that answered a path keeps the data there: no data/ of our own.
    if (!opts.provisioned?.path) fs.mkdirSync(path.join(tmp, PV_DATA), { mode: DIR_MODE })
    fs.mkdirSync(path.join(tmp, PV_CLAIMS), { mode: DIR_MODE })
    writeFileAtomic(tmp, PV_RECORD, `${JSON.stringify(rec)}\n`, { sync: true })
    try {
      fs.renameSync(tmp, pvDir(dataDir, name))
    } catch (er) {
      const code = errnoCode(er)
      if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOTDIR') {
        throw new PodctlError('EBADSTATE', `persistent volume ${name} already exists`, `see podctl volume inspect ${name}`)
      }
      throw er
    }
  } catch (er) {
    removeTree(tmp)
    throw er
  }
  return rec
}

/** Reads a volume's record; ENOVOLUME if there is no such volume. */
export const readVolume = (dataDir: string, name: string): PvRecord => {
  checkVolumeName(name)
  const file = path.join(pvDir(dataDir, name), PV_RECORD)
  const f = readOwnFile(file)
  if ('missing' in f) throw noSuchVolume(name)
  const damaged = (why: string): PodctlError => new PodctlError('EFAILED', `persistent volume ${name} has a damaged record: ${why}`, `look at ${file}; podctl volume rm ${name} removes the volume and its data`)
  if ('damaged' in f) throw damaged(f.damaged)
  try {
    return JSON.parse(f.bytes.toString('utf8')) as PvRecord
  } catch {
    throw damaged(`${file} is not valid JSON`)
  }
}

/** Whether a persistent volume named `name` exists. */
export const volumeExists = (dataDir: string, name: string): boolean => pvPresent(dataDir, name)

/**
 * Whether the directory of volume `name` is there. Only its absence says
 * no: a directory this user may not look into is a refusal, named as one
 * ("permission denied"), not a volume that does not exist.
 */
const pvPresent = (dataDir: string, name: string): boolean => {
  try {
    return fs.lstatSync(pvDir(dataDir, name), { throwIfNoEntry: false }) !== undefined
  } catch (er) {
    throw describeFailure(er, `cannot look at persistent volume ${name} (${pvDir(dataDir, name)})`)
  }
}

/** Every persistent volume (whose name passes `only`), by name. Damaged or half-made entries are skipped. */
export const listVolumes = (dataDir: string, only: (name: string) => boolean = () => true): PvRecord[] => {
  let names: string[]
  try {
    names = fs.readdirSync(volumesRoot(dataDir))
  } catch (er) {
    if (errnoCode(er) === 'ENOENT') return []
    throw er
  }
  const out: PvRecord[] = []
  for (const n of names.sort()) {
    if (!NAME_RE.test(n) || !only(n)) continue // temporaries: .new-*, .gone-*
    try {
      out.push(readVolume(dataDir, n))
    } catch {
      // removed meanwhile, or damaged: inspect says which
    }
  }
  return out
}

const podExists = (dataDir: string, uuid: string): boolean =>
  POD_DIRS.some((d) => fs.lstatSync(podPath(dataDir, d, uuid), { throwIfNoEntry: false })?.isDirectory() === true)

/**
 * Whether a claim holds: the process that made it is alive and holds the
 * pod's lock (it is that pod's supervisor, so the pod is running).
 */
export const claimHolds = (dataDir: string, c: ClaimRecord): boolean => {
  const made = parseOwner(c.owner)
  if (!made || !isLocked(dataDir, c.pod)) return false
  const now = lockOwner(dataDir, c.pod)
  return now !== undefined && sameOwner(now, made)
}

export interface ClaimView extends ClaimRecord {
  /** The claim holds: the pod is running under the supervisor that claimed. */
  running: boolean
}

/** The claim records of a volume (pods bound to it, running or not). */
export const readClaims = (dataDir: string, name: string): ClaimRecord[] => {
  let names: string[]
  try {
    names = fs.readdirSync(pvClaimsDir(dataDir, name))
  } catch (er) {
    if (errnoCode(er) === 'ENOENT' || errnoCode(er) === 'ENOTDIR') return []
    throw er
  }
  const out: ClaimRecord[] = []
  for (const n of names.sort()) {
    if (!n.endsWith('.json') || n.startsWith('.')) continue
    try {
      out.push(JSON.parse(readOwnText(path.join(pvClaimsDir(dataDir, name), n)) ?? '') as ClaimRecord)
    } catch {
      // removed meanwhile, or a torn write of an older podctl: not a claim
    }
  }
  return out
}

/** Claims with whether each holds. */
export const claimViews = (dataDir: string, name: string): ClaimView[] =>
  readClaims(dataDir, name).map((c) => ({ ...c, running: claimHolds(dataDir, c) }))

const claimFile = (dataDir: string, name: string, uuid: string): string => path.join(pvClaimsDir(dataDir, name), `${uuid}.json`)

/**
 * Removes temporaries of atomic writes in a volume's dir and claims dir
 * left by a process killed between writing and renaming. Called under the
 * volume's lock: no live writer has one open.
 */
const sweepTemporaries = (dataDir: string, name: string): void => {
  for (const dir of [pvDir(dataDir, name), pvClaimsDir(dataDir, name)]) {
    let names: string[]
    try {
      names = fs.readdirSync(dir)
    } catch {
      continue
    }
    for (const n of names) if (n.startsWith('.') && n.includes('.tmp-')) fs.rmSync(path.join(dir, n), { force: true })
  }
}

/** Drops claim records of pods that no longer exist (removed by hand, or by an older podctl). */
const dropStaleClaims = (dataDir: string, name: string, claims: ClaimRecord[]): ClaimRecord[] =>
  claims.filter((c) => {
    if (podExists(dataDir, c.pod)) return true
    fs.rmSync(claimFile(dataDir, name, c.pod), { force: true })
    return false
  })

export interface ClaimOptions {
  /** The access mode the pod asks for (default: the volume's). */
  mode?: AccessMode
  readOnly?: boolean
}

/**
 * Binds pod `uuid` to volume `name` (idempotent). The caller must hold the
 * pod's lock and keep holding it while the pod runs: the claim holds as
 * long as it does. Refuses (EBADSTATE) when another running pod holds a
 * claim that excludes this one (ReadWriteOnce on either side), when the
 * volume allows only ReadWriteOnce and ReadWriteMany is asked for, and
 * when the volume is over its size limit.
 */
export const claimVolume = (dataDir: string, name: string, uuid: string, opts: ClaimOptions = {}): PvRecord =>
  withVolumeLock(dataDir, name, () => {
    sweepTemporaries(dataDir, name)
    let rec = readVolume(dataDir, name)
    if (rec.phase === 'recycling') rec = finishRecycle(dataDir, rec) // a recycler died: finish its work first
    if (rec.phase === 'released') {
      throw new PodctlError('EBADSTATE', `persistent volume ${name} was released by its claim ${rec.claim_ref?.name ?? ''} and waits for its reclaim policy (${rec.reclaim})`, 'make a new claim for a pod')
    }
    const mode = opts.mode ?? rec.access_mode
    if (mode === 'ReadWriteMany' && rec.access_mode === 'ReadWriteOnce') {
      throw new PodctlError('EBADSTATE', `persistent volume ${name} allows ReadWriteOnce only; pod ${short(uuid)} asks for ReadWriteMany`, `create the volume with --access-mode ReadWriteMany, or drop "accessMode" from the manifest`)
    }
    if (rec.size_limit_bytes !== null) {
      const used = diskUsage(volumeDataPath(dataDir, rec))?.bytes ?? 0
      if (used > rec.size_limit_bytes) {
        throw new PodctlError('EBADSTATE', `persistent volume ${name} uses ${used} bytes, over its size limit of ${rec.size_limit_bytes}`, 'free some space in it before a pod can claim it')
      }
    }
    const claims = dropStaleClaims(dataDir, name, readClaims(dataDir, name))
    for (const c of claims) {
      if (c.pod === uuid || !claimHolds(dataDir, c)) continue
      if (mode === 'ReadWriteOnce' || c.mode === 'ReadWriteOnce') {
        throw new PodctlError(
          'EBADSTATE',
          `persistent volume ${name} is in use by running pod ${c.pod} (${c.mode === 'ReadWriteOnce' ? 'ReadWriteOnce' : `this pod asks for ${mode}`})`,
          `stop that pod first: podctl stop ${short(c.pod)}`,
        )
      }
    }
    const claim: ClaimRecord = { pod: uuid, mode, read_only: opts.readOnly === true, owner: formatOwner(ownOwner()), claimed_at: isoTime() }
    fs.mkdirSync(pvClaimsDir(dataDir, name), { recursive: true, mode: DIR_MODE })
    writeFileAtomic(pvClaimsDir(dataDir, name), `${uuid}.json`, `${JSON.stringify(claim)}\n`, { sync: true })
    return rec
  })

export type ReleaseOutcome = 'not-claimed' | 'released' | 'retained' | 'deleted' | 'recycled' | 'recycle-pending'

/**
 * Unbinds pod `uuid` from volume `name` (idempotent). When no pod is bound
 * any more and `reclaim` is set (the pod is being removed), applies the
 * reclaim policy: retain keeps the data, delete
 * removes the volume, recycle scrubs the data and checks it is empty.
 * Nothing happens to a volume this pod never claimed (one removed and
 * created again under the same name, say).
 */
export const releaseVolume = (dataDir: string, name: string, uuid: string, opts: { reclaim: boolean } = { reclaim: true }): ReleaseOutcome => {
  if (!pvPresent(dataDir, name)) return 'not-claimed'
  return withVolumeLock(dataDir, name, () => {
    sweepTemporaries(dataDir, name)
    const file = claimFile(dataDir, name, uuid)
    if (!fs.existsSync(file)) return 'not-claimed'
    let rec: PvRecord
    try {
      rec = readVolume(dataDir, name)
    } catch {
      fs.rmSync(file, { force: true })
      return 'released'
    }
    fs.rmSync(file, { force: true })
    const left = dropStaleClaims(dataDir, name, readClaims(dataDir, name))
    // A volume bound to a claim object is reclaimed when that claim is removed.
    if (left.length > 0 || !opts.reclaim || rec.claim_ref) return 'released'
    switch (rec.reclaim) {
      case 'retain':
        return 'retained'
      case 'delete':
        deleteVolumeDir(dataDir, name)
        return 'deleted'
      case 'recycle':
        try {
          finishRecycle(dataDir, { ...rec, phase: 'recycling' })
        } catch {
          // Left in phase "recycling": no pod can claim it until the next
          // claim finishes the scrub (and says what is in the way).
          // Removing the pod must not fail because of it.
          return 'recycle-pending'
        }
        return 'recycled'
    }
  })
}

const cannotRecycle = (rec: PvRecord): PodctlError =>
  new PodctlError(
    'EFAILED',
    `persistent volume ${rec.name} was made by provisioner ${rec.provisioned?.provisioner ?? '?'}: podctl empties only the volumes it made, so its reclaim policy recycle is not applied`,
    'its data stays; remove it through its provisioner, or give its class --reclaim delete',
  )

/**
 * Scrubs a volume's data (never following a link in it), checks that it
 * is empty, and marks the volume available again. The "recycling" phase
 * is recorded first, so a scrub cut short is finished by the next claim.
 */
const finishRecycle = (dataDir: string, rec: PvRecord): PvRecord => {
  // podctl empties only what it made: a provisioner's directory is emptied by its delete.
  if (rec.provisioned?.path) throw cannotRecycle(rec)
  const dir = pvDir(dataDir, rec.name)
  writeFileAtomic(dir, PV_RECORD, `${JSON.stringify({ ...rec, phase: 'recycling' })}\n`, { sync: true })
  const data = volumeDataPath(dataDir, rec)
  const st = fs.lstatSync(data, { throwIfNoEntry: false })
  if (st && !st.isDirectory()) removeTree(data) // a link or file put in its place: unlinked, not followed
  if (!st || !st.isDirectory()) fs.mkdirSync(data, { mode: DIR_MODE })
  for (const n of fs.readdirSync(data)) removeTree(path.join(data, n))
  const left = fs.readdirSync(data)
  if (left.length > 0) {
    throw new PodctlError('EFAILED', `persistent volume ${rec.name} could not be recycled: ${left.length} entries are left in ${data}`, 'remove them by hand; the next claim finishes the recycling')
  }
  const done: PvRecord = { ...rec, phase: 'available', recycled_at: isoTime() }
  writeFileAtomic(dir, PV_RECORD, `${JSON.stringify(done)}\n`, { sync: true })
  return done
}

/** Moves the volume's directory away (one rename: it is gone at once), then deletes it. */
const deleteVolumeDir = (dataDir: string, name: string): void => {
  const away = path.join(volumesRoot(dataDir), `.gone-${name}-${uniqueSuffix()}`)
  fs.renameSync(pvDir(dataDir, name), away)
  removeTree(away)
}

/**
 * `podctl volume rm`: removes a volume and its data. Refused (EBADSTATE)
 * while a running pod holds a claim on it; pods that are bound but not
 * running lose it (their mount points dangle until they are removed).
 */
export const removeVolume = (dataDir: string, name: string): void => {
  checkVolumeName(name)
  if (!pvPresent(dataDir, name)) throw noSuchVolume(name)
  withVolumeLock(dataDir, name, () => {
    const rec = readVolume(dataDir, name)
    // Its claim owns it: removing the record here would skip the provisioner's delete and leave its storage behind.
    if (rec.claim_ref) {
      throw new PodctlError(
        'EBADSTATE',
        `persistent volume ${name} ${rec.phase === 'released' ? 'was released by' : 'is bound to'} volume claim ${rec.claim_ref.name}`,
        rec.phase === 'released' ? 'its reclaim policy is still to be applied: podctl controller --once applies it' : `remove the claim instead: podctl volume claim rm ${rec.claim_ref.name}`,
      )
    }
    const running = readClaims(dataDir, name).filter((c) => claimHolds(dataDir, c))
    if (running.length > 0) {
      throw new PodctlError(
        'EBADSTATE',
        `persistent volume ${name} is in use by running pod${running.length > 1 ? 's' : ''} ${running.map((c) => c.pod).join(', ')}`,
        `stop ${running.length > 1 ? 'them' : 'it'} first: podctl stop ${running.map((c) => short(c.pod)).join(' ')}`,
      )
    }
    deleteVolumeDir(dataDir, name)
  })
}

/**
 * Removes a node's copy of a fleet volume whose record the fleet has
 * deleted: false while a running pod of this node holds it (the next
 * sweep tries again). Its data goes with it when it is a local volume
 * (its data/ directory); shared storage elsewhere is the provisioner's.
 */
export const removeFleetCopy = (dataDir: string, name: string): boolean =>
  withVolumeLock(dataDir, name, () => {
    if (!pvPresent(dataDir, name)) return true
    if (!readVolume(dataDir, name).provisioned?.fleet) return false
    if (readClaims(dataDir, name).some((c) => claimHolds(dataDir, c))) return false
    deleteVolumeDir(dataDir, name)
    return true
  })

/** Removes what a crashed `volume create` or `volume rm` left in `<data>/volumes/` (older than `minAgeMs`). */
export const sweepVolumesDir = (dataDir: string, minAgeMs = 60_000, now = Date.now()): number => {
  let removed = 0
  let names: string[]
  try {
    names = fs.readdirSync(volumesRoot(dataDir))
  } catch {
    return 0
  }
  for (const n of names) {
    if (!n.startsWith('.new-') && !n.startsWith('.gone-')) continue
    const p = path.join(volumesRoot(dataDir), n)
    const st = fs.lstatSync(p, { throwIfNoEntry: false })
    if (st && now - st.mtimeMs > minAgeMs) {
      removeTree(p)
      removed++
    }
  }
  return removed
}

/**
 * Binds an available static volume to a claim object, under the volume's
 * lock: true if it was still free (no claim_ref, not released or
 * recycling, no pod bound to it) and `fits` it; false if someone was first.
 */
export const bindStaticVolume = (dataDir: string, name: string, ref: ClaimRef, fits: (rec: PvRecord) => boolean): boolean =>
  withVolumeLock(dataDir, name, () => {
    let rec: PvRecord
    try {
      rec = readVolume(dataDir, name)
    } catch {
      return false
    }
    if (rec.claim_ref || rec.phase !== 'available' || !fits(rec)) return false
    if (dropStaleClaims(dataDir, name, readClaims(dataDir, name)).length > 0) return false
    writeFileAtomic(pvDir(dataDir, name), PV_RECORD, `${JSON.stringify({ ...rec, claim_ref: ref })}\n`, { sync: true })
    return true
  })

/** Marks a volume bound to claim `uid` released (its claim is being removed); false if it is not bound to it. */
export const markReleased = (dataDir: string, name: string, uid: string): boolean =>
  withVolumeLock(dataDir, name, () => {
    if (!pvPresent(dataDir, name)) return false
    const rec = readVolume(dataDir, name)
    if (rec.claim_ref?.uid !== uid) return false
    if (rec.phase !== 'released') writeFileAtomic(pvDir(dataDir, name), PV_RECORD, `${JSON.stringify({ ...rec, phase: 'released' })}\n`, { sync: true })
    return true
  })

export type ReclaimOutcome = 'retained' | 'deleted' | 'recycled' | 'ignored' | 'not-released'

/**
 * Applies a released volume's reclaim policy, under its lock, so that one
 * volume is deleted by one process once: retain and recycle make it
 * available again (recycle scrubs it first); delete asks `deleteStorage`
 * (the provisioner) to remove what it made, then removes the volume.
 * `deleteStorage` returning false (the seed's IgnoredError) leaves the
 * volume released. Its failure is thrown, and the volume stays released
 * for the next try.
 */
export const reclaimReleased = (dataDir: string, name: string, deleteStorage: (rec: PvRecord) => Promise<boolean>, wait = true): Promise<ReclaimOutcome> =>
  withVolumeLock(
    dataDir,
    name,
    async (): Promise<ReclaimOutcome> => {
      if (!pvPresent(dataDir, name)) return 'not-released'
      const rec = readVolume(dataDir, name)
      if (rec.phase !== 'released') return 'not-released'
      const free = (r: PvRecord): void => writeFileAtomic(pvDir(dataDir, name), PV_RECORD, `${JSON.stringify({ ...r, phase: 'available', claim_ref: null })}\n`, { sync: true })
      switch (rec.reclaim) {
        case 'retain':
          free(rec)
          return 'retained'
        case 'recycle':
          if (rec.provisioned?.path) {
            // Kept on the volume, which stays released, as Kubernetes keeps a volume no recycler can take.
            const events = withEvent(rec.events ?? [], 'Warning', 'VolumeFailedRecycle', cannotRecycle(rec).message)
            writeFileAtomic(pvDir(dataDir, name), PV_RECORD, `${JSON.stringify({ ...rec, events })}\n`, { sync: true })
            throw cannotRecycle(rec)
          }
          free(finishRecycle(dataDir, { ...rec, phase: 'recycling' }))
          return 'recycled'
        case 'delete':
          try {
            if (!(await deleteStorage(rec))) return 'ignored'
          } catch (er) {
            // Kept on the volume, which stays released for the next try: `volume inspect` says why.
            const events = withEvent(rec.events ?? [], 'Warning', 'VolumeFailedDelete', (er as Error).message)
            writeFileAtomic(pvDir(dataDir, name), PV_RECORD, `${JSON.stringify({ ...rec, events })}\n`, { sync: true })
            throw er
          }
          deleteVolumeDir(dataDir, name)
          return 'deleted'
      }
    },
    wait ? lockOpts : { wait: false, timeoutMs: 0 },
  )
