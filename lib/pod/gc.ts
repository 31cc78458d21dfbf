/**
 * Garbage collection, in rkt's gc's passes: mark aborted prepares, expired
 * prepared pods and exited pods as garbage, then empty the garbage past
 * its grace period and sweep the locks of pods that are gone. Safe to run
 * concurrently with itself and every other command: each pod is handled
 * under its lock, and a pod another process holds or moved is skipped, not
 * an error.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodChangedStateError, PodctlError, shortId } from '../errors.js'
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

/** Pods of one pass; each slot is emptied once its pod is taken (takeEach). */
type Pods = (Pod | undefined)[]

/**
 * Runs one gc pass over `dataDir`, as rkt's gc does: marks exited pods,
 * aborted prepares and expired prepared pods as garbage, then deletes the
 * garbage past its grace period and the locks of pods that are gone.
 * Never throws for one bad pod: it is reported in `failed` and gc goes on.
 */
export const gc = async (dataDir: string, opts: GcOptions): Promise<GcResult> => {
  const c = new Collection(dataDir, opts)
  // Locks present before the listing: an exited pod without one had a
  // supervisor that ended cleanly (it recorded its apps' ends and removed
  // its lock), so only pods with a dead lock need their record read to
  // reap apps that outlived them. With 10,000 exited pods that is 10,000
  // file reads saved, cold ones included.
  const lockPresent = lockNames(dataDir)
  const pods = listPods(dataDir, Include.all, { onInvalid: (e) => c.invalid(e) })
  c.begin(pods)
  const of = byPass(pods)
  try {
    await markAborted(c, of.aborted)
    await markExpired(c, of.prepared)
    await markExited(c, of.run, lockPresent)
    c.syncMoved()
    await emptyGarbage(c, of.garbage)
    if (!opts.markOnly) sweepLocks(c)
  } finally {
    await c.end()
  }
  return c.result
}

type Pass = 'aborted' | 'prepared' | 'run' | 'garbage'
/** Which pass handles the pods of each state dir. */
const PASS_OF: Record<PodDir, Pass> = { embryo: 'aborted', prepare: 'aborted', prepared: 'prepared', run: 'run', 'exited-garbage': 'garbage', garbage: 'garbage' }

/**
 * The listed pods by the pass that handles them, in the order listed. Each
 * pod is let go once handled (its slot emptied): a pass over 10,000 pods
 * would otherwise keep every record it read until its end, and a
 * controller's heap would stay that large between passes.
 */
const byPass = (pods: Pod[]): Record<Pass, Pods> => {
  const out: Record<Pass, Pods> = { aborted: [], prepared: [], run: [], garbage: [] }
  for (const pod of pods) out[PASS_OF[pod.dir]].push(pod)
  pods.length = 0
  return out
}

/** Each pod of `pods` in turn, its slot emptied as it is taken. */
function* takeEach(pods: Pods): Generator<Pod> {
  for (let i = 0; i < pods.length; i++) {
    const pod = pods[i]!
    pods[i] = undefined
    yield pod
  }
}

const busy = (pod: Pod): string => `${pod.state}: a live process holds its lock`

/**
 * Embryos whose creator died before preparing them and aborted prepares,
 * to garbage/ (rkt's renameAborted). A creator holds its embryo's lock
 * from before mkdir; an unlocked embryo is left a while (isYoungEmbryo).
 */
const markAborted = async (c: Collection, pods: Pods): Promise<void> => {
  for (const pod of takeEach(pods)) {
    if (pod.state === 'preparing') await c.handle(pod, () => busy(pod))
    else if (pod.state === 'embryo' && pod.locked) await c.handle(pod, () => 'embryo: its creator is still preparing it')
    else if (pod.state === 'embryo' && isYoungEmbryo(pod, c.now, c.opts.gracePeriodMs)) await c.handle(pod, () => 'skip')
    else await c.handle(pod, () => c.mark(pod, () => pod.toGarbage({ sync: false })))
  }
}

/** Prepared pods older than --expire-prepared, to garbage/ (rkt's renameExpired). */
const markExpired = async (c: Collection, pods: Pods): Promise<void> => {
  for (const pod of takeEach(pods)) {
    const created = pod.creationTime()?.getTime() ?? dirTime(pod)
    if (c.now - created >= c.opts.expirePreparedMs) await c.handle(pod, () => c.mark(pod, () => pod.toGarbage({ sync: false })))
    else await c.handle(pod, () => 'skip')
  }
}

/**
 * Exited pods, to exited-garbage/ (rkt's renameExited), once what their
 * apps left running is ended: only a pod with a dead lock (`lockPresent`)
 * can have any.
 */
const markExited = async (c: Collection, pods: Pods, lockPresent: ReadonlySet<string>): Promise<void> => {
  for (const pod of takeEach(pods)) {
    if (pod.state === 'running') {
      await c.handle(pod, () => busy(pod))
      continue
    }
    if (lockPresent.has(pod.uuid)) reapOrphans(pod, { escaped: true })
    await c.handle(pod, () => c.mark(pod, () => pod.toExitedGarbage({ sync: false })))
  }
}

/**
 * Deletes the garbage whose grace period has passed, exited or not
 * (rkt's emptyExitedGarbage and emptyGarbage); with --mark-only, none.
 */
const emptyGarbage = async (c: Collection, pods: Pods): Promise<void> => {
  for (const pod of takeEach(pods)) {
    if (pod.locked) await c.handle(pod, () => busy(pod))
    else if (c.opts.markOnly) await c.handle(pod, () => 'skip')
    else await c.handle(pod, () => c.sweep(pod))
  }
  await c.settled()
}

/** Deletes the locks of pods that are gone (lib/pod/locks.ts), once every deletion has ended. */
const sweepLocks = (c: Collection): void => {
  try {
    sweepLocksDir(c.dataDir, (uuid) => POD_DIRS.some((d) => fs.existsSync(podPath(c.dataDir, d, uuid))))
  } catch (er) {
    c.result.failed.push({ uuid: 'locks', reason: `cleaning the locks dir: ${(er as Error).message}` })
  }
}

/**
 * One gc pass in progress: its options and clock, what it found, the state
 * dirs it moved pods out of and into, and the deletions under way (in the
 * threads of a RemovePool when there are many).
 */
class Collection {
  readonly dataDir: string
  readonly opts: GcOptions
  readonly now: number
  readonly result: GcResult = { marked: [], deleted: [], skipped: [], failed: [] }
  /** A zero grace period: a pod is deleted in the same lock hold that marks it. */
  readonly #deleteAtOnce: boolean
  readonly #moved = new Set<PodDir>()
  readonly #inFlight = new Set<Promise<void>>()
  #pool: RemovePool | undefined
  #total = 0
  #done = 0

  constructor(dataDir: string, opts: GcOptions) {
    this.dataDir = dataDir
    this.opts = opts
    this.now = opts.now ?? Date.now()
    this.#deleteAtOnce = opts.gracePeriodMs === 0 && !opts.markOnly
  }

  /** An entry of a state dir that is not a pod: reported, never followed. */
  invalid(e: { path: string; reason: string }): void {
    this.result.failed.push({ uuid: path.basename(e.path), path: e.path, reason: `${e.reason}; podctl never follows it` })
  }

  /** Counts the pods for progress, and starts removal threads if enough of them are to be deleted. */
  begin(pods: readonly Pod[]): void {
    this.#total = pods.length
    if (this.opts.markOnly || (this.opts.removeWorkers ?? 0) <= 0) return
    const deletable = pods.filter((p) => (this.#deleteAtOnce ? p.state !== 'running' : p.state.endsWith('garbage'))).length
    if (deletable >= POOL_MIN_PODS) this.#pool = new RemovePool(this.opts.removeWorkers!)
  }

  /** Handles one pod with `fn`, and records what it gave; a deletion in a thread is recorded when it ends. */
  async handle(pod: Pod, fn: () => Handled): Promise<void> {
    // Room for one more deletion before a lock is taken, so that no lock
    // is held while waiting for a worker.
    await this.#pool?.ready()
    let out: Handled
    try {
      out = fn()
    } catch (er) {
      this.#recordError(pod, er)
      this.#finished(pod)
      return
    }
    if (typeof out === 'string') {
      this.#record(pod, out)
      this.#finished(pod)
      return
    }
    const settled: Promise<void> = out
      .then(
        (o) => this.#record(pod, o),
        (er: unknown) => this.#recordError(pod, er),
      )
      .finally(() => {
        this.#finished(pod)
        this.#inFlight.delete(settled)
      })
    this.#inFlight.add(settled)
  }

  /** Marks a pod by moving it (`to`), under its lock; with a zero grace period deletes it in the same lock hold. */
  mark(pod: Pod, to: () => void): Handled {
    if (!pod.tryExclusiveLock({ renameFollows: true })) return 'in use by another process'
    const from = pod.dir
    to()
    this.#moved.add(from).add(pod.dir)
    if (this.#deleteAtOnce) return this.#remove(pod)
    writeMark(pod, this.now)
    return 'marked'
  }

  /** Deletes a garbage pod whose grace period has passed, by the mark gc recorded. */
  sweep(pod: Pod): Handled {
    // Not due by the mark it recorded: skipped without its lock, which a
    // controller's gc would otherwise take and drop for every marked pod
    // on every pass. Only gc writes the mark, under the lock; it is read
    // again under the lock below before anything is deleted.
    const recorded = pod.damaged() === undefined ? pod.gcMarkedTime()?.getTime() : undefined
    if (recorded !== undefined && this.now - recorded < this.opts.gracePeriodMs) return 'skip'
    if (!pod.tryExclusiveLock()) return 'in use by another process'
    let marked = pod.damaged() !== undefined ? markTimeOfDamaged(pod) : pod.gcMarkedTime()?.getTime()
    if (marked === undefined || Number.isNaN(marked)) {
      // Marked by a gc that died before recording when: the clock starts now.
      writeMark(pod, this.now)
      marked = this.now
    }
    if (this.now - marked < this.opts.gracePeriodMs) return 'skip'
    return this.#remove(pod)
  }

  /** fsyncs each state dir that pods were moved out of or into, once for the whole pass. */
  syncMoved(): void {
    for (const d of this.#moved) syncDir(stateDirPath(this.dataDir, d))
  }

  /** Resolves once every deletion under way has ended. */
  async settled(): Promise<void> {
    await Promise.all(this.#inFlight)
  }

  /** Waits for the deletions under way, then stops the removal threads. */
  async end(): Promise<void> {
    try {
      await this.settled()
    } finally {
      await this.#pool?.close()
    }
  }

  /** Deletes a pod that this gc holds in a garbage dir: in a worker if there is a pool. */
  #remove(pod: Pod): Handled {
    if (this.#pool === undefined) {
      pod.remove(this.opts.beforeDelete)
      return 'deleted'
    }
    return pod.removeIn(this.#pool, this.opts.beforeDelete).then(() => 'deleted' as const)
  }

  #record(pod: Pod, out: Outcome | string): void {
    if (out === 'marked') this.result.marked.push(pod.uuid)
    else if (out === 'deleted') this.result.deleted.push(pod.uuid)
    else if (out !== 'skip') this.result.skipped.push({ uuid: pod.uuid, reason: out })
    if (out === 'marked' || out === 'deleted') this.opts.onOutcome?.(out, pod.uuid)
  }

  #recordError(pod: Pod, er: unknown): void {
    if (er instanceof PodChangedStateError) {
      this.result.skipped.push({ uuid: pod.uuid, reason: 'changed state meanwhile (another process handled it)' })
    } else {
      this.result.failed.push({ uuid: pod.uuid, reason: er instanceof Error ? er.message : String(er) })
    }
  }

  #finished(pod: Pod): void {
    pod.close()
    this.opts.onProgress?.(++this.#done, this.#total)
  }
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
  const short = shortId(pod.uuid)
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
