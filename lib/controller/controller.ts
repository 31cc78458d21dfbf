/**
 * `podctl controller`: seed 004's ProvisionController with the data dir in
 * the place of the API server. It elects a leader through the lease
 * (lib/volume/lease.ts); the leader binds pending claims and reclaims
 * released volumes through the same binder the commands use inline, so
 * exactly-once rests on the claim and volume locks, not on who runs.
 *
 * Work arrives from a file-system watch of claims/ and volumes/ (at once),
 * a full relist every resync period, and per-object retry timers (the
 * claim's retry_at, the seed's exponential backoff). `threadiness` claim
 * workers and as many volume workers take keys from two queues, one key
 * at a time each; a provisioner's call is awaited, so a slow one holds up
 * neither the other workers nor the lease's renewal, which runs on its own
 * timer. A claim's lock is held for its whole sync: a claim another
 * process works on is put back for later, never waited for.
 */
import fs from 'node:fs'
import { isPodctlError } from '../errors.js'
import { gc } from '../pod/gc.js'
import { isoTime } from '../pod/record.js'
import { LockBusyError } from '../lock/lock.js'
import { syncClaim, reclaimVolume, releasedVolumes, defaultIdentity, DEFAULT_FAILED_THRESHOLD, type BinderOptions } from '../volume/binder.js'
import { listClaims } from '../volume/claims.js'
import type { VolumeClass } from '../volume/classes.js'
import { volumesRoot } from '../volume/layout.js'
import { releaseLease, tryAcquireOrRenew } from '../volume/lease.js'
import { objectsDir } from '../volume/objects.js'
import { readVolume } from '../volume/persistent.js'
import { CLAIM } from '../volume/claims.js'
import { tearDownPodVolumes } from '../volume/pod-volumes.js'
import { provisionerOf, type Provisioner } from '../volume/provisioner.js'
import type { ControllerMetrics } from './metrics.js'
import { WorkQueue } from './queue.js'

/** The seed's option functions, as fields. */
export interface ControllerOptions {
  identity?: string
  /** Full relist period (ms); 15m. */
  resyncPeriod?: number
  /** Claim sync steps run at once (the seed's threadiness). */
  threadiness?: number
  exponentialBackoff?: boolean
  failedProvisionThreshold?: number
  failedDeleteThreshold?: number
  leaderElection?: boolean
  leaseDuration?: number
  renewDeadline?: number
  retryPeriod?: number
  /** gc every this many ms (0: off), with these grace and expiry periods. */
  gcInterval?: number
  gcGracePeriod?: number
  gcExpirePrepared?: number
  /**
   * Runs one gc pass; in this process by default. The CLI runs `podctl gc`
   * in a child process instead, so that a pass over many pods does not
   * leave the controller's heap that large between passes.
   */
  gcRunner?: GcRunner
  /** One pass over everything, then return. */
  once?: boolean
  metrics?: ControllerMetrics
  /** What the controller does, one line each (the CLI prints them on stderr). */
  log?: (line: string, time: string) => void
}

const DEFAULTS = {
  resyncPeriod: 15 * 60_000,
  threadiness: 4,
  leaseDuration: 15_000,
  renewDeadline: 10_000,
  retryPeriod: 2_000,
  gcInterval: 60_000,
  gcGracePeriod: 30 * 60_000,
  gcExpirePrepared: 24 * 3_600_000,
}

/** One gc pass over `dataDir` with these periods; how many pods it marked and deleted. */
export type GcRunner = (dataDir: string, periods: { gracePeriodMs: number; expirePreparedMs: number }) => Promise<{ marked: number; deleted: number }>

const gcInProcess: GcRunner = async (dataDir, periods) => {
  const r = await gc(dataDir, { ...periods, markOnly: false, beforeDelete: tearDownPodVolumes })
  return { marked: r.marked.length, deleted: r.deleted.length }
}

type Settings = Required<Omit<ControllerOptions, 'metrics' | 'log' | 'identity' | 'gcRunner'>> & Pick<ControllerOptions, 'metrics' | 'log'>

export class ProvisionController {
  readonly identity: string
  readonly #dataDir: string
  readonly #opts: Settings
  readonly #binder: BinderOptions
  readonly #claims = new WorkQueue<string>()
  readonly #volumes = new WorkQueue<string>()
  #leading = false
  #renewedAt = 0
  #deleteFailures = new Map<string, number>()
  #gcRunning = false
  readonly #gcRunner: GcRunner

  /**
   * `name` and `provisioner`: serve only classes whose provisioner is
   * `name`, through `provisioner` (a library user's own); null for both:
   * every class, each through its own provisioner (the CLI).
   */
  constructor(dataDir: string, name: string | null, provisioner: Provisioner | null, options: ControllerOptions = {}) {
    this.#dataDir = dataDir
    this.identity = options.identity ?? defaultIdentity()
    this.#gcRunner = options.gcRunner ?? gcInProcess
    this.#opts = {
      ...DEFAULTS,
      exponentialBackoff: true,
      failedProvisionThreshold: DEFAULT_FAILED_THRESHOLD,
      failedDeleteThreshold: DEFAULT_FAILED_THRESHOLD,
      leaderElection: true,
      once: false,
      ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)),
    } as Settings
    const serves = (cls: VolumeClass): boolean => name === null || cls.provisioner === name
    this.#binder = {
      identity: this.identity,
      exponentialBackoff: this.#opts.exponentialBackoff,
      failedProvisionThreshold: this.#opts.failedProvisionThreshold,
      provisionerFor: (cls) => {
        if (!serves(cls)) throw new NotOurs(cls.name)
        return provisioner ?? provisionerOf(cls)
      },
      lockWaitMs: 0,
    }
  }

  get leading(): boolean {
    return this.#leading
  }

  #log(line: string): void {
    this.#opts.log?.(line, isoTime())
  }

  /** Runs until `signal` aborts (SIGTERM): finishes the items in hand, gives up the lease, returns. */
  async run(signal: AbortSignal): Promise<void> {
    const stopWatch = this.#opts.once ? () => {} : this.#watch()
    const timers: NodeJS.Timeout[] = []
    try {
      if (this.#opts.once) {
        if (this.#elect()) {
          this.#relist()
          await this.#work(signal, true)
        }
        return
      }
      this.#elect()
      this.#relist()
      timers.push(setInterval(() => this.#elect(), this.#opts.retryPeriod))
      timers.push(setInterval(() => this.#relist(), this.#opts.resyncPeriod))
      // A safety net beside the watch: pending claims are few and cheap to list, and a command may be waiting on one.
      timers.push(setInterval(() => this.#leading && this.#relistPending(), Math.min(this.#opts.resyncPeriod, 10 * this.#opts.retryPeriod)))
      if (this.#opts.gcInterval > 0) timers.push(setInterval(() => this.#leading && void this.#gc(), this.#opts.gcInterval))
      await this.#work(signal, false)
    } finally {
      for (const t of timers) clearInterval(t)
      stopWatch()
      if (this.#leading && this.#opts.leaderElection) {
        try {
          releaseLease(this.#dataDir, this.identity, this.#opts.renewDeadline)
          this.#log(`released the lease (${this.identity})`)
        } catch (er) {
          this.#log(`could not release the lease: ${(er as Error).message}`)
        }
      }
      this.#setLeading(false)
    }
  }

  /** Takes or renews the lease; a leader that could not renew within the renew deadline stops working. */
  #elect(): boolean {
    if (!this.#opts.leaderElection) return this.#setLeading(true)
    try {
      const lead = tryAcquireOrRenew(this.#dataDir, this.identity, this.#opts.leaseDuration, this.#opts.retryPeriod)
      if (lead) this.#renewedAt = Date.now()
      const gained = lead && !this.#leading
      this.#setLeading(lead)
      if (gained) {
        this.#log(`leading (${this.identity})`)
        this.#relist()
      }
      return lead
    } catch (er) {
      this.#log(`lease: ${(er as Error).message}`)
      if (this.#leading && Date.now() - this.#renewedAt > this.#opts.renewDeadline) {
        this.#log('could not renew the lease within the renew deadline: stopped working')
        return this.#setLeading(false)
      }
      return this.#leading
    }
  }

  #setLeading(lead: boolean): boolean {
    if (this.#leading && !lead) this.#log('not leading')
    this.#leading = lead
    this.#opts.metrics?.leader.set({ name: 'podctl-controller' }, lead ? 1 : 0)
    return lead
  }

  /** Still the leader with a lease renewed recently enough to act on. */
  #mayWork(): boolean {
    if (!this.#opts.leaderElection || !this.#leading) return this.#leading
    if (Date.now() - this.#renewedAt > this.#opts.renewDeadline / 2) this.#elect()
    return this.#leading
  }

  #queueReleased(): void {
    try {
      for (const v of releasedVolumes(this.#dataDir)) this.#volumes.add(v)
    } catch (er) {
      this.#log(`volumes: ${(er as Error).message}`)
    }
  }

  #relistPending(): void {
    try {
      for (const c of listClaims(this.#dataDir)) if (c.phase === 'pending' && (c.retry_at === null || Date.parse(c.retry_at) <= Date.now())) this.#claims.add(c.name)
    } catch (er) {
      this.#log(`relist: ${(er as Error).message}`)
    }
  }

  /** Every claim and released volume into the queue. */
  #relist(): void {
    try {
      for (const c of listClaims(this.#dataDir)) if (c.phase !== 'bound') this.#claims.add(c.name)
      this.#queueReleased()
      this.#opts.metrics?.observePods(this.#dataDir)
    } catch (er) {
      this.#log(`relist: ${(er as Error).message}`)
    }
  }

  /** Reacts to changes of claims and volumes at once; the resync catches what a watch misses. */
  #watch(): () => void {
    const watchers: fs.FSWatcher[] = []
    for (const dir of [objectsDir(this.#dataDir, CLAIM), volumesRoot(this.#dataDir)]) {
      try {
        fs.mkdirSync(dir, { recursive: true, mode: 0o750 })
        const w = fs.watch(dir, (_event, file) => {
          if (typeof file !== 'string' || file.startsWith('.')) return
          if (dir === volumesRoot(this.#dataDir)) this.#volumes.add(file)
          else if (file.endsWith('.json')) {
            this.#claims.add(file.slice(0, -'.json'.length))
            // A removed claim released its volume, whose record changed below volumes/<name>/, out of the watch's sight.
            if (!fs.existsSync(`${dir}/${file}`)) this.#queueReleased()
          }
        })
        w.on('error', () => {}) // the directory went away: the resync carries on
        watchers.push(w)
      } catch (er) {
        this.#log(`watch ${dir}: ${(er as Error).message}; relying on the resync`)
      }
    }
    return () => {
      for (const w of watchers) w.close()
    }
  }

  /**
   * The claim and volume workers, until `signal` aborts; `untilIdle`
   * (--once): until nothing is due now, what comes due later left alone.
   */
  async #work(signal: AbortSignal, untilIdle: boolean): Promise<void> {
    const pool = (queue: WorkQueue<string>, handle: (name: string) => Promise<void>): Promise<void>[] =>
      Array.from({ length: Math.max(1, this.#opts.threadiness) }, () => this.#worker(queue, handle, signal, untilIdle))
    await Promise.all([...pool(this.#claims, (name) => this.#syncClaim(name)), ...pool(this.#volumes, (name) => this.#syncVolume(name))])
  }

  async #worker(queue: WorkQueue<string>, handle: (name: string) => Promise<void>, signal: AbortSignal, untilIdle: boolean): Promise<void> {
    while (!signal.aborted) {
      const name = this.#mayWork() ? queue.next() : undefined
      if (name === undefined) {
        if (untilIdle && (queue.working === 0 || !this.#leading)) return
        await queue.wait(this.#leading ? Math.min(this.#opts.retryPeriod, queue.nextDueIn() ?? Infinity) : this.#opts.retryPeriod, signal)
        continue
      }
      try {
        await handle(name)
      } catch (er) {
        if (er instanceof NotOurs || (isPodctlError(er) && er.code === 'ENOVOLUME')) continue // not ours, or removed meanwhile
        if (er instanceof LockBusyError) {
          queue.addAfter(name, this.#opts.retryPeriod) // another process has it: look again later
          continue
        }
        this.#log(`${queue === this.#claims ? 'claim' : 'volume'} ${name}: ${(er as Error).message}`)
        queue.addAfter(name, 1000)
      } finally {
        queue.done(name)
      }
      // Let timers, the watch and a SIGTERM in between items.
      await new Promise((r) => setImmediate(r))
    }
  }

  async #syncClaim(name: string): Promise<void> {
    const r = await syncClaim(this.#dataDir, name, this.#binder)
    const cls = r.claim.class ?? ''
    const m = this.#opts.metrics
    if (r.outcome === 'provisioned' && r.provisionMs !== undefined) {
      m?.provisionTotal.inc({ class: cls, source: 'controller' })
      m?.provisionDuration.observe({ class: cls }, r.provisionMs / 1000)
      this.#log(`claim ${name}: provisioned volume ${r.claim.volume}`)
    } else if (r.outcome === 'failed') {
      m?.provisionFailed.inc({ class: cls })
      this.#log(`claim ${name}: provisioning failed (${r.claim.failures}): ${r.error?.message}`)
    } else if (r.outcome === 'given-up') {
      this.#log(`claim ${name}: given up after ${r.claim.failures} failures`)
    }
    if (r.claim.phase === 'pending' && r.claim.retry_at !== null) {
      this.#claims.addAfter(name, Math.max(0, Date.parse(r.claim.retry_at) - Date.now()))
    }
  }

  async #syncVolume(name: string): Promise<void> {
    const threshold = this.#opts.failedDeleteThreshold
    const failures = this.#deleteFailures.get(name) ?? 0
    if (threshold > 0 && failures >= threshold) return
    const started = performance.now()
    // Read before the delete removes the record, and only for the metrics.
    const cls = { class: this.#opts.metrics ? classOf(this.#dataDir, name) : '' }
    try {
      const outcome = await reclaimVolume(this.#dataDir, name, this.#binder)
      this.#deleteFailures.delete(name)
      if (outcome === 'not-released') return
      if (outcome === 'deleted') {
        this.#opts.metrics?.deleteTotal.inc(cls)
        this.#opts.metrics?.deleteDuration.observe(cls, (performance.now() - started) / 1000)
      }
      this.#log(`volume ${name}: ${outcome}`)
    } catch (er) {
      if (er instanceof NotOurs || er instanceof LockBusyError || (isPodctlError(er) && er.code === 'ENOVOLUME')) throw er
      this.#deleteFailures.set(name, failures + 1)
      this.#opts.metrics?.deleteFailed.inc(cls)
      this.#log(`volume ${name}: delete failed (${failures + 1}): ${(er as Error).message}`)
      const delay = this.#opts.exponentialBackoff ? Math.min(5 * 60_000, 1000 * 2 ** failures) : 1000
      this.#volumes.addAfter(name, delay)
    }
  }

  /** One gc pass, unless the last one is still running (a slow pass over many pods, or a child process). */
  async #gc(): Promise<void> {
    if (this.#gcRunning) return
    this.#gcRunning = true
    try {
      const r = await this.#gcRunner(this.#dataDir, { gracePeriodMs: this.#opts.gcGracePeriod, expirePreparedMs: this.#opts.gcExpirePrepared })
      this.#opts.metrics?.gcDeleted.inc(r.deleted)
      if (r.deleted + r.marked > 0) this.#log(`gc: marked ${r.marked}, deleted ${r.deleted}`)
    } catch (er) {
      this.#log(`gc: ${(er as Error).message}`)
    } finally {
      this.#gcRunning = false
    }
  }
}

/** The class a volume was provisioned through, for the delete metrics ("" for a static volume, or one gone). */
const classOf = (dataDir: string, volume: string): string => {
  try {
    return readVolume(dataDir, volume).provisioned?.class ?? ''
  } catch {
    return ''
  }
}

/** A class served by another controller (the library's name filter): left alone, no failure. */
class NotOurs extends Error {
  constructor(cls: string) {
    super(`class ${cls} is not served by this controller`)
  }
}
