/**
 * Persistent volumes of a data dir (CONTRACT §7; Documentation/devel/volumes.md).
 * A record changes only under the volume's lock, which also serializes the
 * bindings of pods to it.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, errnoCode, isPodctlError, shortId, unlessNotFound } from '../../errors.js'
import { uniqueSuffix, writeFileAtomic } from '../../fs/atomic.js'
import { describeFailure } from '../../fs/errors.js'
import { DIR_MODE } from '../../fs/modes.js'
import { readOwnFile } from '../../fs/read.js'
import { removeTree } from '../../fs/remove-tree.js'
import { DEFAULT_WAIT_MS } from '../../lock/lock.js'
import { withLockAt } from '../../lock/with-lock.js'
import { NAME_RE } from '../../pod/manifest.js'
import { unlessError } from '../objects.js'
import { isProvisionedName, newVolumeRecord, type CreateVolumeOptions, type PvRecord } from '../volume-record.js'
import { bindingHolds, readBindings } from './bindings.js'
import { objectLock, PV_BINDINGS, PV_DATA, PV_RECORD, pvDataDir, pvDir, volumesRoot } from './layout.js'

const noSuchVolume = (name: string): PodctlError =>
  new PodctlError('ENOVOLUME', `no persistent volume named ${JSON.stringify(name)}`, `create it: podctl volume create ${name}`)

/** Checks a volume name given by a user (EUSAGE). */
export const checkVolumeName = (name: string): void => {
  if (!NAME_RE.test(name)) {
    throw new PodctlError('EUSAGE', `${JSON.stringify(name)} is not a valid volume name: 1 to 63 characters of a-z, 0-9 and "-", starting with a letter or digit`)
  }
}

/** Runs `fn` holding volume `name`'s lock, waiting for it up to `waitMs` (0: LockBusyError at once). */
export const withVolumeLock = <T>(dataDir: string, name: string, fn: () => T, waitMs = DEFAULT_WAIT_MS): T =>
  withLockAt(objectLock(dataDir, 'pv', name), `persistent volume ${name}`, { wait: waitMs > 0, timeoutMs: waitMs }, fn)

/** Where a volume's data is: its own data/ directory, or what its provisioner made. */
export const volumeDataPath = (dataDir: string, rec: PvRecord): string => rec.provisioned?.path ?? pvDataDir(dataDir, rec.name)

/** The smallest size limit a volume can keep: its empty data directory takes one block of the data dir's file system. */
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
  const limit = opts.sizeLimitBytes ?? null
  const min = limit === null ? 0 : minSizeLimit(dataDir)
  if (limit !== null && limit < min) {
    throw new PodctlError('EUSAGE', `a size limit of ${limit} bytes cannot hold the volume's own directory: at least ${min} bytes on this file system`, `give --size-limit ${min} or more`)
  }
}

/** Creates a persistent volume; EBADSTATE if it exists. */
export const createVolume = (dataDir: string, name: string, opts: CreateVolumeOptions = {}): PvRecord => {
  const rec = newVolumeRecord(name, opts)
  if (!writeNewVolume(dataDir, rec)) throw new PodctlError('EBADSTATE', `persistent volume ${name} already exists`, `see podctl volume inspect ${name}`)
  return rec
}

/** Writes a new volume with record `rec`, atomically: built under a temporary name, then renamed into place; false, and nothing written, if it exists. */
export const writeNewVolume = (dataDir: string, rec: PvRecord): boolean => {
  checkNewVolume(dataDir, rec.name, { sizeLimitBytes: rec.size_limit_bytes, provisioned: rec.provisioned ?? undefined })
  fs.mkdirSync(volumesRoot(dataDir), { recursive: true, mode: DIR_MODE })
  sweepVolumesDir(dataDir) // what a crashed create or rm left, long ago
  const tmp = path.join(volumesRoot(dataDir), `.new-${rec.name}-${uniqueSuffix()}`)
  fs.mkdirSync(tmp, { mode: DIR_MODE })
  try {
    // A provisioner that answered a path keeps the data there: no data/ of our own.
    if (!rec.provisioned?.path) fs.mkdirSync(path.join(tmp, PV_DATA), { mode: DIR_MODE })
    fs.mkdirSync(path.join(tmp, PV_BINDINGS), { mode: DIR_MODE })
    writeFileAtomic(tmp, PV_RECORD, `${JSON.stringify(rec)}\n`, { sync: true })
    fs.renameSync(tmp, pvDir(dataDir, rec.name))
    return true
  } catch (er) {
    removeTree(tmp)
    if (['ENOTEMPTY', 'EEXIST', 'ENOTDIR'].includes(errnoCode(er)!)) return false
    throw er
  }
}

/** Replaces a volume's record (under its lock): the one way it is written after its creation. */
export const writeVolume = (dataDir: string, rec: PvRecord): PvRecord => {
  writeFileAtomic(pvDir(dataDir, rec.name), PV_RECORD, `${JSON.stringify(rec)}\n`, { sync: true })
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
  const rec = unlessError(() => JSON.parse(f.bytes.toString('utf8')) as PvRecord)
  if (rec === undefined) throw damaged(`${file} is not valid JSON`)
  return rec
}

/** Whether a persistent volume named `name` exists: one this user may not look at is a refusal ("permission denied"), not an absence. */
export const volumeExists = (dataDir: string, name: string): boolean => {
  try {
    return fs.lstatSync(pvDir(dataDir, name), { throwIfNoEntry: false }) !== undefined
  } catch (er) {
    throw describeFailure(er, `cannot look at persistent volume ${name} (${pvDir(dataDir, name)})`)
  }
}

/** The volume's record, or undefined when there is none (or it went meanwhile). */
export const findVolume = (dataDir: string, name: string): PvRecord | undefined => {
  try {
    return volumeExists(dataDir, name) ? readVolume(dataDir, name) : undefined
  } catch (er) {
    if (isPodctlError(er) && er.code === 'ENOVOLUME') return undefined
    throw er
  }
}

/** Every persistent volume (whose name passes `only`), by name. Damaged or half-made entries are skipped. */
export const listVolumes = (dataDir: string, only: (name: string) => boolean = () => true): PvRecord[] =>
  (unlessNotFound(() => fs.readdirSync(volumesRoot(dataDir))) ?? [])
    .sort()
    // Temporaries (.new-*, .gone-*) are no volumes; one removed meanwhile, or damaged, is left out: inspect says which.
    .flatMap((n) => (NAME_RE.test(n) && only(n) ? (unlessError(() => readVolume(dataDir, n)) ?? []) : []))

/** Moves the volume's directory away (one rename: it is gone at once), then deletes it. */
export const deleteVolumeDir = (dataDir: string, name: string): void => {
  const away = path.join(volumesRoot(dataDir), `.gone-${name}-${uniqueSuffix()}`)
  fs.renameSync(pvDir(dataDir, name), away)
  removeTree(away)
}

/** `podctl volume rm`: EBADSTATE while a claim owns it or a running pod holds it; the mount points of pods not running dangle. */
export const removeVolume = (dataDir: string, name: string): void => {
  checkVolumeName(name)
  if (!volumeExists(dataDir, name)) throw noSuchVolume(name)
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
    const running = readBindings(dataDir, name).filter((b) => bindingHolds(dataDir, b))
    if (running.length > 0) {
      throw new PodctlError(
        'EBADSTATE',
        `persistent volume ${name} is in use by running pod${running.length > 1 ? 's' : ''} ${running.map((b) => b.pod).join(', ')}`,
        `stop ${running.length > 1 ? 'them' : 'it'} first: podctl stop ${running.map((b) => shortId(b.pod)).join(' ')}`,
      )
    }
    deleteVolumeDir(dataDir, name)
  })
}

/** Removes a node's copy of a fleet volume the fleet deleted, with its own data/ if it has one; false while a running pod holds it. */
export const removeFleetCopy = (dataDir: string, name: string): boolean =>
  withVolumeLock(dataDir, name, () => {
    if (!volumeExists(dataDir, name)) return true
    if (!readVolume(dataDir, name).provisioned?.fleet || readBindings(dataDir, name).some((b) => bindingHolds(dataDir, b))) return false
    deleteVolumeDir(dataDir, name)
    return true
  })

/** Removes what a crashed `volume create` or `volume rm` left in `<data>/volumes/` (older than `minAgeMs`). */
export const sweepVolumesDir = (dataDir: string, minAgeMs = 60_000, now = Date.now()): number => {
  let removed = 0
  for (const n of unlessError(() => fs.readdirSync(volumesRoot(dataDir))) ?? []) {
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

/** Removes temporaries of atomic writes in a volume's directories left by a process killed between writing and renaming; under the volume's lock, so no live writer has one open. */
export const sweepTemporaries = (dataDir: string, name: string): void => {
  for (const dir of [pvDir(dataDir, name), path.join(pvDir(dataDir, name), PV_BINDINGS)]) {
    for (const n of unlessError(() => fs.readdirSync(dir)) ?? []) if (n.startsWith('.') && n.includes('.tmp-')) fs.rmSync(path.join(dir, n), { force: true })
  }
}
