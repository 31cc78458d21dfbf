/** The actual state of a pod's volumes, on disk as podctl has no daemon; written only under the volume's executor lock. */
import fs from 'node:fs'
import path from 'node:path'
import { unlessNotFound } from '../errors.js'
import { NAME_RE } from '../pod/manifest.js'
import { writeFileAtomic } from '../fs/atomic.js'
import { readOwnText } from '../fs/read.js'
import { isoTime } from '../pod/record.js'
import { POD_VOLUME_STATE, volumeStateDir } from './layout.js'
import { mkdirsInside, resolveInside } from '../fs/inside.js'
import { unlessError } from '../storage/objects.js'
import type { VolumeStateRecord } from './types.js'

const fileOf = (name: string): string => `${name}.json`
/** Whether the record dir is reached without a link (an app may have planted one). */
const stateDirSafe = (podPath: string): boolean => resolveInside(podPath, `${POD_VOLUME_STATE}/x`) !== undefined

/** Writes a volume's record (stamping pid and time). */
export const writeVolumeState = (podPath: string, rec: Omit<VolumeStateRecord, 'pid' | 'updated_at' | 'version'>): VolumeStateRecord => {
  const full: VolumeStateRecord = { version: 1, ...rec, pid: process.pid, updated_at: isoTime() }
  const dir = mkdirsInside(podPath, POD_VOLUME_STATE)
  writeFileAtomic(dir, fileOf(rec.volume), `${JSON.stringify(full)}\n`, { sync: true })
  return full
}

/** A volume's record, or undefined if none (or it is unreadable). */
export const readVolumeState = (podPath: string, name: string): VolumeStateRecord | undefined => {
  if (!stateDirSafe(podPath)) return undefined
  const rec = unlessError(() => JSON.parse(readOwnText(path.join(volumeStateDir(podPath), fileOf(name))) ?? '') as VolumeStateRecord | null)
  return rec !== null && typeof rec === 'object' && rec.volume === name ? rec : undefined
}

/** Names of the volumes that have a record: everything that may be set up. */
export const recordedVolumes = (podPath: string): string[] => {
  if (!stateDirSafe(podPath)) return []
  const names = unlessNotFound(() => fs.readdirSync(volumeStateDir(podPath))) ?? []
  return names.filter((n) => n.endsWith('.json') && NAME_RE.test(n.slice(0, -5))).map((n) => n.slice(0, -5)).sort()
}

/** Removes a volume's record (it is torn down). */
export const removeVolumeState = (podPath: string, name: string): void => {
  if (!stateDirSafe(podPath)) return
  fs.rmSync(path.join(volumeStateDir(podPath), fileOf(name)), { force: true })
}

/** Removes the record dir once it is empty. */
export const removeVolumeStateDir = (podPath: string): void => {
  // Not empty (a volume could not be torn down), or gone: left.
  if (stateDirSafe(podPath)) unlessError(() => fs.rmdirSync(volumeStateDir(podPath)))
}
