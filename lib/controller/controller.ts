/**
 * `podctl controller`: the external-provisioner's ProvisionController over a
 * ClaimStore and a LeaderElection (Documentation/devel/controller.md). The
 * leader works through the binder the commands use inline, so exactly-once
 * rests on the claim and volume locks, not on who runs.
 */
import { setMaxListeners } from 'node:events'
import type { LeaderElection } from '../election/election.js'
import { fileElection } from '../election/file.js'
import { isPodctlError } from '../errors.js'
import { gc } from '../pod/gc.js'
import { isoTime } from '../pod/record.js'
import { LockBusyError } from '../lock/lock.js'
import { backoffMs, DEFAULT_FAILED_THRESHOLD, givenUp, reclaimVolume, syncClaim, type BinderOptions } from '../storage/binder.js'
import { LocalStore } from '../storage/local/store.js'
import type { Provisioner } from '../storage/provisioner.js'
import type { ClaimStore } from '../storage/store.js'
import { podTeardown } from '../runtime/pod-runtime.js'
import { releaseDeadNetworks } from '../runtime/pod-network.js'
import type { ControllerMetrics } from './metrics.js'
import { WorkQueue } from './queue.js'

/** The external-provisioner's option functions as fields (times in ms), and their defaults. */
const DEFAULTS = {
  /** Full relist period. */
  resyncPeriod: 15 * 60_000,
  /** Claim workers, and as many volume workers. */
  threadiness: 4,
  exponentialBackoff: true,
  failedProvisionThreshold: DEFAULT_FAILED_THRESHOLD,
  failedDeleteThreshold: DEFAULT_FAILED_THRESHOLD,
  leaderElection: true,
  leaseDuration: 15_000,
  renewDeadline: 10_000,
  retryPeriod: 2_000,
  /** gc every this long (0: off), with these grace and expiry periods. */
  gcInterval: 60_000,
  gcGracePeriod: 30 * 60_000,
  gcExpirePrepared: 24 * 3_600_000,
  /** One pass over everything (a gc pass too, with gcInterval), then return. */
  once: false,
}

export type ControllerOptions = Partial<typeof DEFAULTS> & {
  identity?: string
  /** Runs one gc pass; in this process by default (the CLI's runs `podctl gc` in a child, so that its heap does not stay large). */
  gcRunner?: GcRunner
  metrics?: ControllerMetrics
  /** What the controller does, one line each (the CLI prints them on stderr). */
  log?: (line: string, time: string) => void
  /** Where claims and volumes are: the data dir's (default), or the fleet's (lib/storage/fleet/store.ts: openFleet). */
  store?: ClaimStore
  /** Where this node's exec provisioners are (default /etc/podctl/provisioners). */
  provisionersDir?: string
  /** How the leader is chosen: the data dir's lease file (default) or the fleet's etcd lease (lib/election/etcd.ts). */
  election?: LeaderElection
}

/** After SIGTERM: how long the items in hand may take, then killed ones, then the store to take the lease back; well inside CONTRACT §8's 2 s. */
const WORK_GRACE_MS = 700
const KILLED_GRACE_MS = 100
const RELEASE_MS = 300

const aborted = (signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })))

/** Resolves after `ms`, without keeping the process alive for it. */
const timeout = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref())

/** `work`'s outcome, or `instead()`'s once `cutOff` resolves first; `work` is left to finish (or not) on its own. */
const within = <T>(work: Promise<T>, cutOff: Promise<unknown>, instead: () => T): Promise<T> => Promise.race([work, cutOff.then(instead)])

/** One gc pass over `dataDir` with these periods; how many pods it marked and deleted. */
export type GcRunner = (dataDir: string, periods: { gracePeriodMs: number; expirePreparedMs: number }) => Promise<{ marked: number; deleted: number }>

const gcInProcess: GcRunner = async (dataDir, periods) => {
  await releaseDeadNetworks(dataDir).catch(() => undefined)
  const r = await gc(dataDir, { ...periods, markOnly: false, beforeDelete: podTeardown(dataDir) })
  return { marked: r.marked.length, deleted: r.deleted.length }
}

type Settings = typeof DEFAULTS & Pick<ControllerOptions, 'metrics' | 'log'> & { gcRunner: GcRunner }

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
  /** The try to take or renew the lead in flight, if any. */
  #electing: Promise<boolean> | undefined
  /** Set once run() winds down: no new try for the lead. */
  #stopping = false
  readonly #store: ClaimStore
  readonly #election: LeaderElection
  /** Aborted when a stop has waited long enough for the items in hand: their provisioner calls are killed. */
  readonly #inFlight = new AbortController()

  /** `name`: serve only the classes of this provisioner, through `provisioner` if given; null for both: every class (the CLI). */
  constructor(dataDir: string, name: string | null, provisioner: Provisioner | null, options: ControllerOptions = {}) {
    this.#dataDir = dataDir
    // Each item in hand listens to it: as many as there are workers.
    setMaxListeners(0, this.#inFlight.signal)
    this.#store = options.store ?? new LocalStore(dataDir, options.identity)
    this.identity = options.identity ?? this.#store.identity
    this.#opts = {
      ...DEFAULTS,
      gcRunner: gcInProcess,
      ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)),
    } as Settings
    this.#election = options.election ?? fileElection(dataDir, this.identity, this.#opts.leaseDuration, this.#opts.retryPeriod)
    this.#binder = {
      identity: this.identity,
      exponentialBackoff: this.#opts.exponentialBackoff,
      failedProvisionThreshold: this.#opts.failedProvisionThreshold,
      provisionersDir: options.provisionersDir,
      // A library user's controller may serve only its own classes, through its own provisioner.
      provisionerFor: (cls) => {
        if (name !== null && cls.provisioner !== name) throw new NotOurs(cls.name)
        return provisioner ?? undefined
      },
      lockWaitMs: 0,
      signal: this.#inFlight.signal,
    }
  }

  /** gc whether leading or not: in a fleet each node collects its own pods, and only claims have one leader. */
  get #gcOnEveryNode(): boolean {
    return this.#store.node !== undefined
  }

  #log(line: string): void {
    this.#opts.log?.(line, isoTime())
  }

  /**
   * Runs until `signal` aborts (SIGTERM), then stops within about a second
   * whatever its store does (#work); the lease is given up if the store
   * answers in time, and expires by itself if not.
   */
  async run(signal: AbortSignal): Promise<void> {
    const timers: NodeJS.Timeout[] = []
    const stops: (() => void)[] = []
    const stopped = aborted(signal)
    try {
      if (this.#opts.once) {
        const lead = await within(this.#elect(), stopped, () => false)
        // The gc pass beside the claims' (a child process, with the CLI's runner).
        const collected = this.#opts.gcInterval > 0 && (lead || this.#gcOnEveryNode) ? this.#gc() : undefined
        if (lead) {
          await within(this.#relist(), stopped, () => undefined)
          await this.#work(signal, true)
        }
        await within(collected ?? Promise.resolve(), stopped, () => undefined)
        return
      }
      // The watch reacts at once; the resync catches what it misses.
      stops.push(await this.#store.watch((name) => this.#claims.add(name), (name) => this.#volumes.add(name), (line) => this.#log(line)))
      // Not awaited: a store that does not answer must not keep the workers (and SIGTERM) waiting.
      void this.#elect().then(() => this.#relist())
      if (this.#election.watchVacancy) stops.push(this.#election.watchVacancy(() => void this.#elect()))
      timers.push(setInterval(() => void this.#elect(), this.#opts.retryPeriod))
      timers.push(setInterval(() => void this.#relist(), this.#opts.resyncPeriod))
      // A safety net beside the watch: pending claims are few and cheap to list, and a command may be waiting on one.
      timers.push(setInterval(() => this.#leading && void this.#relist(true), Math.min(this.#opts.resyncPeriod, 10 * this.#opts.retryPeriod)))
      if (this.#opts.gcInterval > 0) timers.push(setInterval(() => (this.#leading || this.#gcOnEveryNode) && void this.#gc(), this.#opts.gcInterval))
      await this.#work(signal, false)
    } finally {
      this.#stopping = true
      for (const t of timers) clearInterval(t)
      for (const stop of stops) stop()
      // A try in flight may be about to take the lead, a standby's first one too: give up what it takes.
      if (this.#opts.leaderElection && this.#electing) await within(this.#electing, timeout(RELEASE_MS / 2), () => false)
      if (this.#leading && this.#opts.leaderElection) {
        const released = await within(
          this.#election.release().then(
            () => `released ${this.#election.what} (${this.identity})`,
            (er: unknown) => `could not release ${this.#election.what}: ${(er as Error).message}`,
          ),
          timeout(RELEASE_MS),
          () => `could not release ${this.#election.what} within ${RELEASE_MS} ms: it expires by itself`,
        )
        this.#log(released)
      }
      this.#setLeading(false)
    }
  }

  /**
   * Takes or renews the lead; a leader that could not renew within the renew
   * deadline stops working. A renewal counts from when it was asked for: the
   * store's lease began no later.
   */
  #elect(): Promise<boolean> {
    // A stopping controller tries no more: its own release empties the lead (a vacancy its watch may still report) as it closes the store.
    if (this.#stopping && this.#electing === undefined) return Promise.resolve(this.#leading)
    // One try at a time: a slow store must not stack up tries behind the timer.
    this.#electing ??= this.#electOnce().finally(() => (this.#electing = undefined))
    return this.#electing
  }

  async #electOnce(): Promise<boolean> {
    if (!this.#opts.leaderElection) return this.#setLeading(true)
    const asked = Date.now()
    try {
      const lead = await this.#election.tryAcquireOrRenew()
      if (lead) this.#renewedAt = asked
      const gained = lead && !this.#leading
      this.#setLeading(lead)
      if (gained) {
        this.#log(`leading (${this.identity})`)
        await this.#relist()
      }
      return lead
    } catch (er) {
      this.#log(`${this.#election.what}: ${(er as Error).message}`)
      if (this.#leading && Date.now() - this.#renewedAt > this.#opts.renewDeadline) {
        this.#log(`could not renew ${this.#election.what} within the renew deadline: stopped working`)
        this.#election.stepDown()
        return this.#setLeading(false)
      }
      return this.#leading
    }
  }

  #setLeading(lead: boolean): boolean {
    // Without an election this controller works until it stops: never "not leading".
    if (this.#leading && !lead && this.#opts.leaderElection) this.#log('not leading')
    this.#leading = lead
    this.#opts.metrics?.leader.set({ name: 'podctl-controller' }, lead ? 1 : 0)
    return lead
  }

  /** Still the leader with a lead renewed recently enough to act on. */
  async #mayWork(): Promise<boolean> {
    if (!this.#opts.leaderElection || !this.#leading) return this.#leading
    if (Date.now() - this.#renewedAt > this.#opts.renewDeadline / 2) await this.#elect()
    return this.#leading
  }

  /** Every claim not bound and every released volume into the queues, and a node's own housekeeping; `pendingOnly`: the pending claims that are due. */
  async #relist(pendingOnly = false): Promise<void> {
    try {
      for (const c of await this.#store.listClaims()) {
        if (pendingOnly ? c.phase === 'pending' && (c.retry_at === null || Date.parse(c.retry_at) <= Date.now()) : c.phase !== 'bound') this.#claims.add(c.name)
      }
      if (pendingOnly) return
      for (const v of await this.#store.releasedVolumes()) this.#volumes.add(v)
      this.#opts.metrics?.observePods(this.#dataDir)
      const done = await this.#store.housekeeping?.()
      if (done) this.#log(done)
    } catch (er) {
      this.#log(`relist: ${(er as Error).message}`)
    }
  }

  /**
   * The claim and volume workers, until `signal` aborts; `untilIdle` (--once):
   * until nothing is due now. After the abort, the items in hand get
   * WORK_GRACE_MS, then their provisioners are killed (the next leader calls
   * them again for the same volumes, as after a crash) and they are left behind.
   */
  async #work(signal: AbortSignal, untilIdle: boolean): Promise<void> {
    const pool = (queue: WorkQueue<string>, handle: (name: string) => Promise<void>): Promise<void>[] =>
      Array.from({ length: Math.max(1, this.#opts.threadiness) }, () => this.#worker(queue, handle, signal, untilIdle))
    const all = Promise.all([...pool(this.#claims, (name) => this.#syncClaim(name)), ...pool(this.#volumes, (name) => this.#syncVolume(name))])
    const late = await within(all.then(() => false), aborted(signal).then(() => timeout(WORK_GRACE_MS)), () => true)
    if (!late) return
    this.#inFlight.abort()
    await within(all, timeout(KILLED_GRACE_MS), () => undefined)
    this.#log('stopped with work in hand: it is taken up again by the next leader')
  }

  async #worker(queue: WorkQueue<string>, handle: (name: string) => Promise<void>, signal: AbortSignal, untilIdle: boolean): Promise<void> {
    while (!signal.aborted) {
      const name = (await this.#mayWork()) ? queue.next() : undefined
      if (name === undefined) {
        if (untilIdle && (queue.working === 0 || !this.#leading)) return
        await queue.wait(this.#leading ? Math.min(this.#opts.retryPeriod, queue.nextDueIn()) : this.#opts.retryPeriod, signal)
        continue
      }
      try {
        await handle(name)
      } catch (er) {
        if (er instanceof LockBusyError) queue.addAfter(name, this.#opts.retryPeriod) // another process has it: look again later
        else if (!leftAlone(er)) {
          this.#log(`${queue === this.#claims ? 'claim' : 'volume'} ${name}: ${(er as Error).message}`)
          queue.addAfter(name, 1000)
        }
      } finally {
        queue.done(name)
      }
      // Let timers, the watch and a SIGTERM in between items.
      await new Promise((r) => setImmediate(r))
    }
  }

  async #syncClaim(name: string): Promise<void> {
    const r = await syncClaim(this.#store, name, this.#binder)
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
    const failures = this.#deleteFailures.get(name) ?? 0
    if (givenUp(failures, this.#opts.failedDeleteThreshold)) return
    const started = performance.now()
    const m = this.#opts.metrics
    // Read before the delete removes the record, and only for the metrics.
    const cls = { class: m ? ((await this.#store.findVolume(name).catch(() => undefined))?.value.provisioned?.class ?? '') : '' }
    try {
      const outcome = await reclaimVolume(this.#store, name, this.#binder)
      this.#deleteFailures.delete(name)
      if (outcome === 'not-released') return
      if (outcome === 'deleted') {
        m?.deleteTotal.inc(cls)
        m?.deleteDuration.observe(cls, (performance.now() - started) / 1000)
      }
      this.#log(`volume ${name}: ${outcome}`)
    } catch (er) {
      if (leftAlone(er) || er instanceof LockBusyError) throw er
      this.#deleteFailures.set(name, failures + 1)
      m?.deleteFailed.inc(cls)
      this.#log(`volume ${name}: delete failed (${failures + 1}): ${(er as Error).message}`)
      this.#volumes.addAfter(name, backoffMs(failures + 1, { exponential: this.#opts.exponentialBackoff }))
    }
  }

  /** One gc pass, unless the last one is still running (a slow pass over many pods, or a child process). */
  async #gc(): Promise<void> {
    if (this.#gcRunning) return
    this.#gcRunning = true
    try {
      const r = await this.#opts.gcRunner(this.#dataDir, { gracePeriodMs: this.#opts.gcGracePeriod, expirePreparedMs: this.#opts.gcExpirePrepared })
      this.#opts.metrics?.gcDeleted.inc(r.deleted)
      if (r.deleted + r.marked > 0) this.#log(`gc: marked ${r.marked}, deleted ${r.deleted}`)
    } catch (er) {
      this.#log(`gc: ${(er as Error).message}`)
    } finally {
      this.#gcRunning = false
    }
  }
}

/** A class served by another controller (the library's name filter): left alone, no failure. */
class NotOurs extends Error {
  constructor(cls: string) {
    super(`class ${cls} is not served by this controller`)
  }
}

/** Not ours, or removed meanwhile: no failure. */
const leftAlone = (er: unknown): boolean => er instanceof NotOurs || (isPodctlError(er) && er.code === 'ENOVOLUME')
