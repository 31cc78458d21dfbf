/**
 * `persistent`: a volume of `<data>/volumes/` that outlives pods. Set-up binds the pod to it under the
 * volume's lock, so two pods that start at once cannot both get a ReadWriteOnce one; tear-down unbinds.
 */
import fs from 'node:fs'
import { PodctlError, oneLine, shortId } from '../../errors.js'
import { writeFileAtomic } from '../../fs/atomic.js'
import { DIR_MODE } from '../../fs/modes.js'
import { unreachableDir } from '../../fs/reach.js'
import { formatOwner, ownOwner } from '../../lock/owner.js'
import type { AccessMode } from '../../pod/manifest.js'
import { isoTime } from '../../pod/record.js'
import { accessModeOf } from '../../storage/access-modes.js'
import { bindingFile, bindingHolds, dropStaleBindings, type PodBinding } from '../../storage/local/bindings.js'
import { pvBindingsDir, pvDataDir } from '../../storage/local/layout.js'
import { finishRecycle, reclaimUnbound, type UnbindOutcome } from '../../storage/local/reclaim.js'
import { volumeOfClaim } from '../../storage/local/store.js'
import { readVolume, sweepTemporaries, volumeDataPath, volumeExists, withVolumeLock } from '../../storage/local/volumes.js'
import { unlessError } from '../../storage/objects.js'
import type { PvRecord } from '../../storage/volume-record.js'
import { diskUsage, volumeMetrics } from '../metrics.js'
import { kindPlugin } from './kind.js'

export interface BindOptions {
  /** The access mode the pod asks for (default: the volume's). */
  mode?: AccessMode
  readOnly?: boolean
}

/**
 * Binds pod `uuid` to volume `name` (idempotent). The caller holds the pod's
 * lock while the pod runs: the binding holds as long as it does. Refuses
 * (EBADSTATE) when another running pod's binding excludes this one
 * (ReadWriteOnce on either side), ReadWriteMany of a ReadWriteOnce volume,
 * and a volume over its size limit.
 */
export const bindVolume = (dataDir: string, name: string, uuid: string, opts: BindOptions = {}): PvRecord =>
  withVolumeLock(dataDir, name, () => {
    sweepTemporaries(dataDir, name)
    let rec = readVolume(dataDir, name)
    if (rec.phase === 'recycling') rec = finishRecycle(dataDir, rec) // a recycler died: finish its work first
    if (rec.phase === 'released') {
      throw new PodctlError('EBADSTATE', `persistent volume ${name} was released by its claim ${rec.claim_ref?.name ?? ''} and waits for its reclaim policy (${rec.reclaim})`, 'make a new claim for a pod')
    }
    const mode = opts.mode ?? rec.access_mode
    if (mode === 'ReadWriteMany' && rec.access_mode === 'ReadWriteOnce') {
      throw new PodctlError('EBADSTATE', `persistent volume ${name} allows ReadWriteOnce only; pod ${shortId(uuid)} asks for ReadWriteMany`, `create the volume with --access-mode ReadWriteMany, or drop "accessMode" from the manifest`)
    }
    const used = rec.size_limit_bytes === null ? 0 : (diskUsage(volumeDataPath(dataDir, rec))?.bytes ?? 0)
    if (rec.size_limit_bytes !== null && used > rec.size_limit_bytes) {
      throw new PodctlError('EBADSTATE', `persistent volume ${name} uses ${used} bytes, over its size limit of ${rec.size_limit_bytes}`, 'free some space in it before a pod can claim it')
    }
    for (const b of dropStaleBindings(dataDir, name)) {
      if (b.pod === uuid || (mode !== 'ReadWriteOnce' && b.mode !== 'ReadWriteOnce') || !bindingHolds(dataDir, b)) continue
      throw new PodctlError(
        'EBADSTATE',
        `persistent volume ${name} is in use by running pod ${b.pod} (${b.mode === 'ReadWriteOnce' ? 'ReadWriteOnce' : `this pod asks for ${mode}`})`,
        `stop that pod first: podctl stop ${shortId(b.pod)}`,
      )
    }
    const binding: PodBinding = { pod: uuid, mode, read_only: opts.readOnly === true, owner: formatOwner(ownOwner()), claimed_at: isoTime() }
    fs.mkdirSync(pvBindingsDir(dataDir, name), { recursive: true, mode: DIR_MODE })
    writeFileAtomic(pvBindingsDir(dataDir, name), `${uuid}.json`, `${JSON.stringify(binding)}\n`, { sync: true })
    return rec
  })

/**
 * Unbinds pod `uuid` from volume `name` (idempotent); with `reclaim`, the last
 * pod's removal applies the reclaim policy of a volume no claim owns. A volume
 * this pod was never bound to (made again under the same name) is left alone.
 */
export const unbindVolume = (dataDir: string, name: string, uuid: string, opts: { reclaim: boolean } = { reclaim: true }): UnbindOutcome | 'not-bound' | 'unbound' => {
  if (!volumeExists(dataDir, name)) return 'not-bound'
  return withVolumeLock(dataDir, name, () => {
    sweepTemporaries(dataDir, name)
    const file = bindingFile(dataDir, name, uuid)
    if (!fs.existsSync(file)) return 'not-bound'
    const rec = readableVolume(dataDir, name) // if damaged, the binding goes and the volume stays as it is
    fs.rmSync(file, { force: true })
    if (!rec || !opts.reclaim || rec.claim_ref || dropStaleBindings(dataDir, name).length > 0) return 'unbound'
    return reclaimUnbound(dataDir, rec)
  })
}

/** A volume's record, or undefined when it is missing or cannot be read. */
export const readableVolume = (dataDir: string, name: string): PvRecord | undefined => unlessError(() => readVolume(dataDir, name))

export const persistentPlugin = kindPlugin('podctl.io/persistent', 'persistent', (v, _volume, pod, tearingDown) => {
  let name: string
  try {
    name = volumeOfClaim(pod.dataDir, v.claim)
  } catch (er) {
    // A claim cannot be removed while a pod using it is not, so at tear-down
    // a name that is no bound claim object is the volume of that name.
    if (!tearingDown) throw er
    name = v.claim
  }
  // A provisioner may have made the data elsewhere; its own data/ when the record cannot be read.
  const rec = readableVolume(pod.dataDir, name)
  const data = rec ? volumeDataPath(pod.dataDir, rec) : pvDataDir(pod.dataDir, name)
  return {
    path: data,
    setUp: () => {
      bindVolume(pod.dataDir, name, pod.uuid, { ...(v.accessMode ? { mode: accessModeOf(v.accessMode) } : {}), readOnly: v.readOnly === true })
      if (data !== pvDataDir(pod.dataDir, name)) {
        // A provisioner's directory: apps are linked to it only while it is a directory reached without a link.
        const problem = unreachableDir(data)
        if (problem) throw new PodctlError('EFAILED', `persistent volume ${name} cannot be used: ${oneLine(problem)}`, 'its provisioner must keep a real directory there (no symlink on the way)')
      } else if (!fs.lstatSync(data, { throwIfNoEntry: false })?.isDirectory()) {
        throw new PodctlError('EFAILED', `persistent volume ${name} has no data directory (${data} is missing or not a directory)`, `remove and create it again: podctl volume rm ${name}`)
      }
    },
    tearDown: ({ podRemoved }) => void unbindVolume(pod.dataDir, name, pod.uuid, { reclaim: podRemoved }),
    getMetrics: () => volumeMetrics(data, true, { followRoot: false }),
  }
})
