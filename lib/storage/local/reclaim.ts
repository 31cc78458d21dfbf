/**
 * Reclaim policies in a data dir: what becomes of a persistent volume
 * when the last pod bound to it is removed (a volume of no claim), or
 * when its claim is removed (the binder, through the store's keep and
 * delete). retain keeps the data, delete removes the volume, recycle
 * scrubs the data and checks it is empty. podctl empties only what it
 * made: a directory a provisioner made is emptied by the provisioner's
 * delete, never recycled.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../../errors.js'
import { DIR_MODE } from '../../fs/modes.js'
import { removeTree } from '../../fs/remove-tree.js'
import { isoTime } from '../../pod/record.js'
import { withEventOf } from '../objects.js'
import type { ReclaimOutcome } from '../store.js'
import type { PvRecord } from '../volume-record.js'
import { deleteVolumeDir, volumeDataPath, writeVolume } from './volumes.js'

const cannotRecycle = (rec: PvRecord): PodctlError =>
  new PodctlError(
    'EFAILED',
    `persistent volume ${rec.name} was made by provisioner ${rec.provisioned?.provisioner ?? '?'}: podctl empties only the volumes it made, so its reclaim policy recycle is not applied`,
    'its data stays; remove it through its provisioner, or give its class --reclaim delete',
  )

/**
 * Scrubs a volume's data (never following a link in it), checks that it
 * is empty, and marks the volume available again. The "recycling" phase
 * is recorded first, so a scrub cut short is finished by the next pod
 * that binds it. Under the volume's lock.
 */
export const finishRecycle = (dataDir: string, rec: PvRecord): PvRecord => {
  if (rec.provisioned?.path) throw cannotRecycle(rec)
  writeVolume(dataDir, { ...rec, phase: 'recycling' })
  const data = volumeDataPath(dataDir, rec)
  const st = fs.lstatSync(data, { throwIfNoEntry: false })
  if (st && !st.isDirectory()) removeTree(data) // a link or file put in its place: unlinked, not followed
  if (!st || !st.isDirectory()) fs.mkdirSync(data, { mode: DIR_MODE })
  for (const n of fs.readdirSync(data)) removeTree(path.join(data, n))
  const left = fs.readdirSync(data)
  if (left.length > 0) {
    throw new PodctlError('EFAILED', `persistent volume ${rec.name} could not be recycled: ${left.length} entries are left in ${data}`, 'remove them by hand; the next claim finishes the recycling')
  }
  return writeVolume(dataDir, { ...rec, phase: 'available', recycled_at: isoTime() })
}

export type UnbindOutcome = 'retained' | 'deleted' | 'recycled' | 'recycle-pending'

/** Applies the reclaim policy of volume `rec`, bound to no claim, whose last pod was removed; under its lock. */
export const reclaimUnbound = (dataDir: string, rec: PvRecord): UnbindOutcome => {
  if (rec.reclaim === 'retain') return 'retained'
  if (rec.reclaim === 'delete') {
    deleteVolumeDir(dataDir, rec.name)
    return 'deleted'
  }
  try {
    finishRecycle(dataDir, { ...rec, phase: 'recycling' })
    return 'recycled'
  } catch {
    // Left "recycling": no pod can bind it until the next bind finishes the
    // scrub (and says what is in the way). Removing the pod must not fail for it.
    return 'recycle-pending'
  }
}

/**
 * `retain` and `recycle` of a volume released by its claim, under its
 * lock: available again (recycled first), for the next claim or pod. A
 * recycle podctl may not do is kept on the volume, which stays released,
 * as Kubernetes keeps a volume no recycler can take.
 */
export const keepReleased = (dataDir: string, rec: PvRecord): ReclaimOutcome => {
  const free = (r: PvRecord): void => void writeVolume(dataDir, { ...r, phase: 'available', claim_ref: null })
  if (rec.reclaim !== 'recycle') {
    free(rec)
    return 'retained'
  }
  if (rec.provisioned?.path) {
    writeVolume(dataDir, withEventOf(rec, { type: 'Warning', reason: 'VolumeFailedRecycle', message: cannotRecycle(rec).message }))
    throw cannotRecycle(rec)
  }
  free(finishRecycle(dataDir, { ...rec, phase: 'recycling' }))
  return 'recycled'
}
