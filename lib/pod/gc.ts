/**
 * Garbage collection (rkt's gc): mark, then sweep. Safe to run
 * concurrently with itself and every other command: each pod is handled
 * under its lock, and a pod another process holds or moved is skipped, not
 * an error.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodChangedStateError, PodctlError } from '../errors.js'
import { syncDir } from '../fs/atomic.js'
import { RemovePool } from '../fs/remove-pool.js'
import { POD_DIRS, podPath, stateDirPath, type PodDir } from './layout.js'
import { lockNames, sweepLocksDir } from './locks.js'
import type { BeforeDelete, Pod } from './pod.js'
import { isoTime, writeRecord } from './record.js'
import { reapOrphans } from './reap.js'
import { Include, listPods } from './walk.js'

export interface GcOptions {
  /** How long garbage is kept after it was marked (ms). */
  gracePeriodMs: number
  /** Prepared pods older than this are marked garbage (ms). */
  expirePreparedMs: number
  /** Mark only; delete nothing. */
  markOnly?: boolean
  now?: number
  /** Called as pods are handled, for a progress display. */
  onProgress?: (done: number, total: number) => void
  /** Undoes, under each pod's lock, what other layers set up for it (volumes) before it is deleted. */
  beforeDelete?: BeforeDelete
  /** Called as each pod is marked or deleted (so that a caller can say so at once, not at the end). */
  onOutcome?: (outcome: 'marked' | 'deleted', uuid: string) => void
  /**
   * Worker threads that delete pods' trees while this thread locks and
   * moves the next pods (lib/fs/remove-pool.ts); 0 (the default) deletes
   * in this thread. Used only for passes with many pods to delete.
   */
  removeWorkers?: number
}

/** Pods to delete in one pass below which worker threads are not worth their start. */
const POOL_MIN_PODS = 200

export interface GcSkip {
  /** The pod's UUID, or the name of an entry that is not a pod. */
  uuid: string
  /** Where the entry is, for entries that are not pods. */
  path?: string
  reason: string
}

export interface GcResult {
  marked: string[]
  deleted: string[]
  skipped: GcSkip[]
  /** Pods (or entries) that could not be handled because of an error. */
  failed: GcSkip[]
}

type Outcome = 'marked' | 'deleted' | 'skip'

/** What handling one pod gave: an outcome, a reason it was skipped, or a deletion under way. */
type Handled = Outcome | string | Promise<'deleted'>

/**
 * Runs one gc pass over `dataDir`. Never throws for one bad pod: it is
 * reported in `failed` and gc goes on.
 */
export const gc = async (dataDir: string, opts: GcOptions): Promise<GcResult> => {
  const now = opts.now ?? Date.now()
  const result: GcResult = { marked: [], deleted: [], skipped: [], failed: [] }
  const invalid = (e: { path: string; reason: string }): void => {
    result.failed.push({ uuid: path.basename(e.path), path: e.path, reason: `${e.reason}; podctl never follows it` })
  }
  // Locks present before the listing: an exited pod without one had a
  // supervisor that ended cleanly (it recorded its apps' ends and removed
  // its lock), so only pods with a dead lock need their record read to
  // reap apps that outlived them. With 10,000 exited pods that is 10,000
  // file reads saved, cold ones included.
  const lockPresent = lockNames(dataDir)
  // Each pod is let go once handled (slots set to undefined): a pass over
  // 10,000 pods would otherwise keep every record it read until its end,
  // and a controller's heap would stay that large between passes.
  const pods: (Pod | undefined)[] = listPods(dataDir, Include.all, { onInvalid: invalid })
  const total = pods.length
  let done = 0
  const moved = new Set<PodDir>()
  const deleteAtOnce = opts.gracePeriodMs === 0 && !opts.markOnly

  const deletable = pods.filter((p) => p !== undefined && (deleteAtOnce ? p.state !== 'running' : p.state.endsWith('garbage'))).length
  const pool = !opts.markOnly && (opts.removeWorkers ?? 0) > 0 && deletable >= POOL_MIN_PODS ? new RemovePool(opts.removeWorkers!) : undefined
  const inFlight = new Set<Promise<void>>()

  const record = (pod: Pod, out: Outcome | string): void => {
    if (out === 'marked') result.marked.push(pod.uuid)
    else if (out === 'deleted') result.deleted.push(pod.uuid)
    else if (out !== 'skip') result.skipped.push({ uuid: pod.uuid, reason: out })
    if (out === 'marked' || out === 'deleted') opts.onOutcome?.(out, pod.uuid)
  }
  const recordError = (pod: Pod, er: unknown): void => {
    if (er instanceof PodChangedStateError) {
      result.skipped.push({ uuid: pod.uuid, reason: 'changed state meanwhile (another process handled it)' })
    } else {
      result.failed.push({ uuid: pod.uuid, reason: er instanceof Error ? er.message : String(er) })
    }
  }
  const finished = (pod: Pod): void => {
    pod.close()
    opts.onProgress?.(++done, total)
  }

  const handle = async (pod: Pod, fn: () => Handled): Promise<void> => {
    // Room for one more deletion before a lock is taken, so that no lock
    // is held while waiting for a worker.
    await pool?.ready()
    let out: Handled
    try {
      out = fn()
    } catch (er) {
      recordError(pod, er)
      finished(pod)
      return
    }
    if (typeof out === 'string') {
      record(pod, out)
      finished(pod)
      return
    }
    const settled: Promise<void> = out
      .then(
        (o) => record(pod, o),
        (er: unknown) => recordError(pod, er),
      )
      .finally(() => {
        finished(pod)
        inFlight.delete(settled)
      })
    inFlight.add(settled)
  }

  /** Deletes a pod that this gc holds in a garbage dir: in a worker if there is a pool. */
  const remove = (pod: Pod): Handled => {
    if (pool === undefined) {
      pod.remove(opts.beforeDelete)
      return 'deleted'
    }
    return pod.removeIn(pool, opts.beforeDelete).then(() => 'deleted' as const)
  }

  // Mark, and with a zero grace period delete in the same lock hold.
  const mark = (pod: Pod, to: () => void): Handled => {
    if (!pod.tryExclusiveLock({ renameFollows: true })) return 'in use by another process'
    const from = pod.dir
    to()
    moved.add(from).add(pod.dir)
    if (deleteAtOnce) return remove(pod)
    writeMark(pod, now)
    return 'marked'
  }

  const sweep = (pod: Pod): Handled => {
    // Not due by the mark it recorded: skipped without its lock, which a
    // controller's gc would otherwise take and drop for every marked pod
    // on every pass. Only gc writes the mark, under the lock; it is read
    // again under the lock below before anything is deleted.
    const recorded = pod.damaged() === undefined ? pod.gcMarkedTime()?.getTime() : undefined
    if (recorded !== undefined && now - recorded < opts.gracePeriodMs) return 'skip'
    if (!pod.tryExclusiveLock()) return 'in use by another process'
    let marked = pod.damaged() !== undefined ? markTimeOfDamaged(pod) : pod.gcMarkedTime()?.getTime()
    if (marked === undefined || Number.isNaN(marked)) {
      // Marked by a gc that died before recording when: the clock starts now.
      writeMark(pod, now)
      marked = now
    }
    if (now - marked < opts.gracePeriodMs) return 'skip'
    return remove(pod)
  }

  try {
    const garbage: (Pod | undefined)[] = []
    for (let i = 0; i < pods.length; i++) {
      const pod = pods[i]!
      pods[i] = undefined
      const s = pod.state
      switch (s) {
        case 'exited':
          if (lockPresent.has(pod.uuid)) reapOrphans(pod, { escaped: true })
          await handle(pod, () => mark(pod, () => pod.toExitedGarbage({ sync: false })))
          break
        case 'aborted prepare':
        case 'embryo':
          if (s === 'embryo' && (pod.locked || isYoungEmbryo(pod, now, opts.gracePeriodMs))) {
            await handle(pod, () => (pod.locked ? 'embryo: its creator is still preparing it' : 'skip'))
            break
          }
          await handle(pod, () => mark(pod, () => pod.toGarbage({ sync: false })))
          break
        case 'prepared': {
          const created = pod.creationTime()?.getTime() ?? dirTime(pod)
          if (now - created >= opts.expirePreparedMs) {
            await handle(pod, () => mark(pod, () => pod.toGarbage({ sync: false })))
          } else {
            await handle(pod, () => 'skip')
          }
          break
        }
        case 'exited garbage':
        case 'garbage':
          garbage.push(pod)
          break
        default:
          // running, preparing, deleting: a live process is on it
          await handle(pod, () => `${s}: a live process holds its lock`)
      }
    }
    for (const d of moved) syncDir(stateDirPath(dataDir, d))
    if (!opts.markOnly) {
      for (let i = 0; i < garbage.length; i++) {
        const pod = garbage[i]!
        garbage[i] = undefined
        await handle(pod, () => sweep(pod))
      }
      await Promise.all(inFlight)
      try {
        sweepLocksDir(dataDir, (uuid) => POD_DIRS.some((d) => fs.existsSync(podPath(dataDir, d, uuid))))
      } catch (er) {
        result.failed.push({ uuid: 'locks', reason: `cleaning the locks dir: ${(er as Error).message}` })
      }
    } else {
      for (const pod of garbage) await handle(pod!, () => 'skip')
    }
    await Promise.all(inFlight)
  } finally {
    await pool?.close()
  }
  return result
}

/**
 * Records when gc marked the pod. A damaged pod's record is not written
 * (its pod.json may be a directory, or another pod's): the move into a
 * garbage dir, which changes the pod dir's ctime, is its mark.
 */
const writeMark = (pod: Pod, now: number): void => {
  if (pod.damaged() !== undefined) return
  const r = { ...pod.record(), gc_marked_at: isoTime(now) }
  writeRecord(pod.path, r)
  pod.setCachedRecord(r)
}

/** When a damaged pod was marked: the last change of its directory, its move into a garbage dir. */
const markTimeOfDamaged = (pod: Pod): number | undefined => fs.lstatSync(pod.path, { throwIfNoEntry: false })?.ctimeMs

const dirTime = (pod: Pod): number => {
  try {
    return fs.statSync(pod.path).mtimeMs
  } catch {
    return 0
  }
}

// An unlocked embryo is a creator that died between mkdir and the move to
// prepare/; the creator holds the lock from before mkdir, so any age would
// do, but a minute keeps gc clear of clock skew on shared data dirs. A
// shorter grace period shortens it: `--grace-period 0s` means "collect all
// that is dead now", and leaves no embryo behind.
const EMBRYO_MIN_AGE_MS = 60_000
// The time of a directory made in this millisecond can be ahead of
// Date.now(), which truncates: with no wait at all, age is not looked at.
const isYoungEmbryo = (pod: Pod, now: number, gracePeriodMs: number): boolean => {
  const wait = Math.min(EMBRYO_MIN_AGE_MS, gracePeriodMs)
  return wait > 0 && now - dirTime(pod) < wait
}

/**
 * Removes one pod that is not running (`podctl rm`): exited pods go
 * through exited-garbage, prepared pods and aborted prepares through
 * garbage, then the pod is deleted under its lock (`beforeDelete` first).
 */
export const removePod = (pod: Pod, beforeDelete?: BeforeDelete): void => {
  const short = pod.uuid.slice(0, 8)
  switch (pod.state) {
    case 'running':
      throw new PodctlError('EBADSTATE', `pod ${short} is running; stop it: podctl stop ${short}`)
    case 'preparing':
    case 'deleting':
    case 'exited deleting':
    case 'embryo':
      if (pod.state !== 'embryo' || !pod.tryExclusiveLock()) {
        throw new PodctlError('EBADSTATE', `pod ${short} is ${pod.state}: another process is working on it`, `try again later: podctl status ${short}`)
      }
      pod.toGarbage()
      break
    case 'exited':
      reapOrphans(pod, { escaped: true })
      pod.toExitedGarbage()
      break
    case 'prepared':
    case 'aborted prepare':
      pod.toGarbage()
      break
    case 'exited garbage':
    case 'garbage':
      break
  }
  pod.remove(beforeDelete)
}
