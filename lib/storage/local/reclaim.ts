/**
 * Reclaim policies in a data dir, applied when the last pod of a volume of
 * no claim is removed, or its claim is (Documentation/devel/volumes.md).
 * podctl empties only what it made: never a provisioner's directory.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../../errors.js'
import { DIR_MODE } from '../../fs/modes.js'
import { removeTree } from '../../fs/remove-tree.js'
import { isoTime } from '../../pod/record.js'
import { unlessError, withEventOf } from '../objects.js'
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
 * Scrubs a volume's data without following a link, checks it is empty and
 * marks it available again; under its lock. "recycling" is recorded first:
 * a scrub cut short is finished by the next pod that binds it.
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
  // A failed scrub leaves it "recycling": no pod can bind it until the next bind
  // finishes the scrub (and says what is in the way). Removing the pod must not fail for it.
  return unlessError(() => finishRecycle(dataDir, rec)) ? 'recycled' : 'recycle-pending'
}

/**
 * `retain` and `recycle` of a volume released by its claim, under its lock:
 * available again, recycled first. A recycle podctl may not do is kept on
 * the volume, which stays released.
 */
export const keepReleased = (dataDir: string, rec: PvRecord): ReclaimOutcome => {
  if (rec.reclaim === 'recycle' && rec.provisioned?.path) {
    const er = cannotRecycle(rec)
    writeVolume(dataDir, withEventOf(rec, { type: 'Warning', reason: 'VolumeFailedRecycle', message: er.message }))
    throw er
  }
  const kept = rec.reclaim === 'recycle' ? finishRecycle(dataDir, rec) : rec
  writeVolume(dataDir, { ...kept, phase: 'available', claim_ref: null })
  return rec.reclaim === 'recycle' ? 'recycled' : 'retained'
}
