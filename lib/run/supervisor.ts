/**
 * The pod supervisor: the process that holds a running pod's lock for the
 * pod's whole life (CONTRACT §2: running while it lives, exited once it is
 * gone). It runs the init apps one after another, then the regular apps
 * together, records every app's pid, times and exit code in pod.json,
 * keeps their output in rotating logs, forwards SIGINT/SIGTERM/SIGHUP, and
 * ends with the pod's exit code (CONTRACT §4).
 */
import fs from 'node:fs'
import path from 'node:path'
import { resourceReason } from '../fs/errors.js'
import { DIR_MODE } from '../fs/modes.js'
import { MAX_MANIFEST_BYTES, readOwnText } from '../fs/read.js'
import { AppTypeMask, isolationOf, parseManifest, stopSignalName, visitApps, type App, type PodManifest } from '../pod/manifest.js'
import { removePod } from '../pod/gc.js'
import { podFromUUIDString, type Pod } from '../pod/pod.js'
import { podEnvMark } from '../pod/reap.js'
import { MANIFEST_FILE, isoTime, newAppRecord, writeRecord, type AppRecord, type PodRecord } from '../pod/record.js'
import { forkCount, killMarked } from '../proc/escaped.js'
import { procStart } from '../proc/identity.js'
import { HostRuntime } from '../runtime/host.js'
import { OciRuntime } from '../runtime/oci-runtime.js'
import { podTeardown, recordedRuntime } from '../runtime/pod-runtime.js'
import type { AppProcess, PodRuntime } from '../runtime/types.js'
import { LogWriter } from './log-writer.js'
import { REQUESTS_DIR, takeRequests, type AppRequest } from './requests.js'

/** Where app output goes besides its log (the terminal, in the foreground). */
export interface OutputSink {
  write(app: string, stream: 'stdout' | 'stderr', chunk: Buffer): void
  /** A message from podctl itself about the pod (an app that could not start). */
  notice(message: string): void
  /** Writes out what is held back (a last line without its newline). */
  flush?(): void
}

export interface SupervisorOptions {
  output?: OutputSink
  /** Install SIGINT/SIGTERM/SIGHUP handlers that forward to the apps (default true). */
  forwardSignals?: boolean
  /** This process's standard input and terminal may be its apps' (`stdin`, `tty`): a foreground run. */
  interactive?: boolean
  logMaxBytes?: number
  /**
   * Called once the pod's isolation is up (its infra on its networks, ports
   * published), before any app starts: where `run --detach` answers, so
   * that a port another holds fails the command, not only the pod.
   */
  onRuntimeStarted?: () => void
}

/** The apps of the types in `mask`, in manifest order. */
const appsOf = (m: PodManifest, mask: number): App[] => {
  const out: App[] = []
  visitApps(m, mask, (a) => void out.push(a))
  return out
}

/** The environment mark of one app's processes, beside the pod's (lib/pod/reap.ts). */
const appEnvMark = (name: string): string => `PODCTL_APP_NAME=${name}`

export { signalExitCode } from '../runtime/host.js'

interface AppStart {
  /** Resolves once the app's start (or failure to start) is recorded. */
  started: Promise<void>
  /** Resolves once its end is recorded and its output read. */
  done: Promise<void>
}

interface RunningApp extends AppStart {
  app: App
  proc: AppProcess
  /** Set once SIGTERM was sent (app stop, app rm). */
  stopping?: boolean
}

/** What stopping an app sends it first: its own stop signal (validated with the manifest), else SIGTERM. */
const stopSignalOf = (app: App): NodeJS.Signals => (app.stopSignal !== undefined ? stopSignalName(app.stopSignal) : undefined) ?? 'SIGTERM'

/** How a process ended: its exit code, or the signal that ended it. */
type Exit = [number | null, NodeJS.Signals | null]

/** How `child` ended, once it has: listened for at once, so that no 'exit' is missed. */
const exitOf = (child: AppProcess['child']): Promise<Exit> => new Promise((resolve) => child.once('exit', (code, signal) => resolve([code, signal])))

/** How often a mutable pod's supervisor looks for changes if no file event woke it. */
const MUTABLE_POLL_MS = 1_000
/** How long an exited app's output pipes may stay open before podctl stops reading them. */
const PIPE_DRAIN_MS = 250
/** Default time an app gets between SIGTERM and SIGKILL on `app stop` / `app rm`. */
const APP_STOP_TIMEOUT_MS = 10_000

export class Supervisor {
  readonly pod: Pod
  manifest: PodManifest
  readonly #opts: SupervisorOptions
  readonly #record: PodRecord
  readonly #running = new Map<string, RunningApp>()
  #stopping: NodeJS.Signals | undefined
  #stopWaiters: (() => void)[] = []
  /** How the pod's apps are isolated: host processes, or containers on an OCI runtime. */
  #runtime: PodRuntime | undefined

  /** `pod` must be locked in run/ by this process (pod.toRun()). */
  constructor(pod: Pod, manifest: PodManifest, opts: SupervisorOptions = {}) {
    this.pod = pod
    this.manifest = manifest
    this.#opts = opts
    const r = pod.record()
    this.#record = {
      ...r,
      started_at: isoTime(),
      pid: process.pid,
      exit_code: null,
      ready_at: null,
      apps: manifest.apps.map((a) => r.apps.find((x) => x.name === a.name) ?? newAppRecord(a)),
    }
  }

  /** Whether the last save of the record failed (a full disk): said once, retried at every save. */
  #saveFailing = false

  /**
   * Writes the record. A failed write (ENOSPC) is said once and does not
   * stop the pod: the record is kept here and written again at the next
   * change, and readers see the last one that was written.
   */
  #save(): void {
    try {
      writeRecord(this.pod.path, this.#record)
      this.pod.setCachedRecord(this.#record)
      if (this.#saveFailing) this.#opts.output?.notice(`pod ${this.pod.uuid} is recorded again`)
      this.#saveFailing = false
    } catch (er) {
      if (!this.#saveFailing) this.#opts.output?.notice(`${(er as Error).message}; the pod runs on, and its record is written again at its next change`)
      this.#saveFailing = true
    }
  }

  #appRecord(name: string): AppRecord {
    const rec = this.#record.apps.find((a) => a.name === name)
    if (!rec) throw new Error(`bug: no record for app ${name}`)
    return rec
  }

  /**
   * Forwards `signal` to every running app; no further app is started. A
   * SIGTERM (what `stop` sends) reaches each app as its own stop signal
   * (an image's StopSignal: nginx wants SIGQUIT, postgres SIGINT), as
   * podman stop sends it.
   */
  signal(signal: NodeJS.Signals): void {
    this.#stopping ??= signal
    for (const { app, proc } of this.#running.values()) proc.signal(signal === 'SIGTERM' ? stopSignalOf(app) : signal)
    for (const w of this.#stopWaiters.splice(0)) w()
  }

  /** Passes a signal on to every running app, and nothing more. */
  #pass(signal: NodeJS.Signals): void {
    for (const { proc } of this.#running.values()) proc.signal(signal)
  }

  /** Runs the pod to its end and returns its exit code; releases the lock. */
  async run(): Promise<number> {
    const stopForwarding = this.#forwardSignals()
    try {
      this.#save()
      await this.#startRuntime()
      this.#opts.onRuntimeStarted?.()
      const initOk = await this.#runInitApps()
      if (initOk && !this.#stopping) await this.#runRegularApps()
      else this.#record.ready_at = null
      return this.#finish()
    } catch (er) {
      this.#failed(er as Error)
      throw er
    } finally {
      stopForwarding()
      await this.#release()
      if (this.manifest.autoRemove === true) this.#remove()
    }
  }

  /**
   * `--rm`: the pod, exited and its lock released, is removed as `podctl
   * rm` removes it, in the foreground before `run` exits with the pod's
   * code, detached before the supervisor ends. A failure is said, and the
   * pod is left for rm or gc.
   */
  #remove(): void {
    try {
      removePod(podFromUUIDString(this.pod.dataDir, this.pod.uuid), podTeardown(this.pod.dataDir))
    } catch (er) {
      this.#opts.output?.notice(`pod ${this.pod.uuid} was not removed (--rm): ${(er as Error).message}`)
    }
  }

  /**
   * Forwards signals to the apps until the returned function is called
   * (unless told not to), as podman's --sig-proxy does: SIGINT, SIGTERM and
   * SIGHUP end the pod (no app starts after them); SIGQUIT, SIGUSR1 and
   * SIGUSR2 are only passed on, for the apps to do with as they do.
   */
  #forwardSignals(): () => void {
    if (this.#opts.forwardSignals === false) return () => {}
    const handlers = [
      ...(['SIGINT', 'SIGTERM', 'SIGHUP'] as const).map((s) => [s, () => this.signal(s)] as const),
      ...(['SIGQUIT', 'SIGUSR1', 'SIGUSR2'] as const).map((s) => [s, () => this.#pass(s)] as const),
    ]
    for (const [s, h] of handlers) process.on(s, h)
    return () => {
      for (const [s, h] of handlers) process.off(s, h)
    }
  }

  /**
   * The supervisor's own failure: every app is killed, and why is kept in
   * the record, so that `status` says why a detached pod ended (its stderr
   * goes nowhere).
   */
  #failed(er: Error): void {
    this.signal('SIGKILL')
    this.#record.failure = `the supervisor failed: ${er.message}`
    this.#record.ready_at = null
    this.#save()
  }

  /** Writes out what the output holds back, ends the runtime, then releases the pod's lock. */
  async #release(): Promise<void> {
    this.#opts.output?.flush?.()
    // Before the lock goes: a pod read as exited has no process left in its namespaces.
    await this.#runtime?.close()
    this.pod.close()
  }

  /** Starts the pod's isolation: nothing for host processes; an isolated pod's infra container, recorded. */
  async #startRuntime(): Promise<void> {
    if (isolationOf(this.manifest) !== 'namespaces') {
      this.#runtime = new HostRuntime(this.pod, { httpProxy: this.manifest.httpProxy !== false })
      return
    }
    const runtime = await OciRuntime.start(this.pod, () => this.manifest, recordedRuntime(this.#record))
    this.#runtime = runtime
    this.#record.holder_pid = runtime.holder.pid
    this.#record.holder_start = runtime.holder.start
    this.#record.networks = runtime.networks.length > 0 ? runtime.networks : null
    this.#save()
  }

  async #runInitApps(): Promise<boolean> {
    for (const app of appsOf(this.manifest, AppTypeMask.init)) {
      if (this.#stopping) return false
      const running = this.#start(app)
      await running.done
      if (this.#appRecord(app.name).exit_code !== 0) return false
    }
    return true
  }

  async #runRegularApps(): Promise<void> {
    const regular = appsOf(this.manifest, AppTypeMask.regular)
    // Ready once every regular app is recorded as running (or as failed to
    // start): a reader that sees ready_at sees their pids too. The last
    // app's record and ready_at go out in the same write.
    let unrecorded = regular.length
    const beforeStartSaved = (): void => {
      if (--unrecorded === 0) this.#record.ready_at = isoTime()
    }
    const started = regular.map((a) => this.#start(a, beforeStartSaved))
    await Promise.all(started.map((r) => r.started))
    if (regular.length === 0) {
      this.#record.ready_at = isoTime()
      this.#save()
    }
    if (this.manifest.mutable === true) await this.#serveMutable()
    await Promise.all(started.map((r) => r.done))
    await Promise.all([...this.#running.values()].map((r) => r.done))
  }

  /**
   * A mutable pod lives until it is stopped, apps or not. Meanwhile the
   * supervisor follows its manifest (apps added or removed by `app add` /
   * `app rm` under the manifest lock) and serves `app start` / `app stop`
   * requests. File events wake it; a slow poll covers file systems
   * without them.
   */
  async #serveMutable(): Promise<void> {
    let wake: (() => void) | undefined
    const poke = (): void => wake?.()
    const watchers: fs.FSWatcher[] = []
    const reqDir = path.join(this.pod.path, REQUESTS_DIR)
    fs.mkdirSync(reqDir, { recursive: true, mode: DIR_MODE })
    for (const dir of [this.pod.path, reqDir]) {
      try {
        watchers.push(fs.watch(dir, poke))
      } catch {
        // no file events here: the poll does it
      }
    }
    this.#stopWaiters.push(poke)
    try {
      while (!this.#stopping) {
        this.#reconcile()
        for (const req of takeRequests(this.pod.path)) this.#serve(req)
        if (this.#stopping) break
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, MUTABLE_POLL_MS)
          wake = () => {
            clearTimeout(timer)
            resolve()
          }
        })
        wake = undefined
      }
    } finally {
      for (const w of watchers) w.close()
    }
  }

  /** Brings the app records in line with the manifest as it is on disk now. */
  #reconcile(): void {
    let m: PodManifest
    try {
      m = parseManifest(readOwnText(path.join(this.pod.path, MANIFEST_FILE), MAX_MANIFEST_BYTES) ?? '', { allowEphemeral: true })
    } catch {
      return // mid-replace or damaged: the rename makes it whole; look again later
    }
    this.manifest = m
    let changed = false
    for (const a of m.apps) {
      if (!this.#record.apps.some((r) => r.name === a.name)) {
        this.#record.apps.push(newAppRecord(a))
        changed = true
      }
    }
    for (const r of [...this.#record.apps]) {
      if (m.apps.some((a) => a.name === r.name)) continue
      const running = this.#running.get(r.name)
      if (running) {
        // Removed while running: stop it; the record goes once it has exited.
        this.#stopApp(r.name, APP_STOP_TIMEOUT_MS)
        continue
      }
      this.#record.apps = this.#record.apps.filter((x) => x !== r)
      changed = true
    }
    if (changed) this.#save()
  }

  #serve(req: AppRequest): void {
    const app = this.manifest.apps.find((a) => a.name === req.app)
    if (!app) return
    if (req.op === 'start') {
      if (!this.#running.has(app.name)) {
        const r = this.#start(app)
        // When it ends, look again: a removed app's record can go then.
        void r.done.then(() => this.#reconcile())
      }
    } else {
      this.#stopApp(app.name, req.timeoutMs ?? APP_STOP_TIMEOUT_MS)
    }
  }

  /** Its stop signal to one app's group, SIGKILL after `timeoutMs` if it is still there. */
  #stopApp(name: string, timeoutMs: number): void {
    const running = this.#running.get(name)
    if (!running) return
    // Once is enough: reconcile passes (every second, and on every manifest
    // change) must not restart the SIGKILL clock of an app being stopped.
    if (running.stopping) return
    running.stopping = true
    running.proc.signal(stopSignalOf(running.app))
    const timer = setTimeout(() => running.proc.signal('SIGKILL'), timeoutMs)
    timer.unref()
    void running.done.then(() => clearTimeout(timer))
  }

  /**
   * Starts one app; `started` resolves once its start (or failure to
   * start) is recorded, `done` once its end is. `beforeStartSaved` may add
   * to the record that says the app started, just before it is written.
   */
  #start(app: App, beforeStartSaved?: () => void): AppStart {
    const rec = this.#appRecord(app.name)
    let log: LogWriter | undefined
    let proc: AppProcess
    const forksBefore = forkCount()
    try {
      log = this.#openLog(app)
      proc = this.#runtime!.startApp(app, { interactive: this.#opts.interactive === true })
    } catch (er) {
      this.#cannotStart(app, log, er as NodeJS.ErrnoException)
      beforeStartSaved?.()
      this.#save()
      log?.close()
      return { started: Promise.resolve(), done: Promise.resolve() }
    }
    const appLog = log
    const { child } = proc
    this.#forwardOutput(app, proc, appLog)
    const exited = exitOf(child)
    // Started is recorded once the app runs (a container: once its runtime has made it), or its failure to start.
    const ran = proc.running.then(
      (pid) => {
        this.#recordStarted(rec, proc, pid)
        beforeStartSaved?.()
        this.#save()
        return true
      },
      (er: NodeJS.ErrnoException) => {
        this.#cannotStart(app, appLog, er)
        beforeStartSaved?.()
        return false
      },
    )
    const spawnedAt = child.pid !== undefined && forksBefore !== undefined ? { pid: child.pid, forksBefore } : undefined
    const done = this.#awaitEnd(app, rec, proc, appLog, ran, exited, spawnedAt)
    const started = ran.then(() => {})
    this.#running.set(app.name, { app, proc, started, done })
    return { started, done }
  }

  /** The app's log, which says so itself when it cannot be written (a full disk). */
  #openLog(app: App): LogWriter {
    return new LogWriter(this.pod.path, app.name, {
      ...(this.#opts.logMaxBytes ? { maxBytes: this.#opts.logMaxBytes } : {}),
      onTrouble: (message) => this.#opts.output?.notice(`app ${app.name}: ${message}`),
    })
  }

  /**
   * The app's stdout and stderr, to its log and to the output (the
   * terminal, in the foreground). Until the app runs, what comes is held,
   * in its order: an app that could not start wrote nothing, and what its
   * runtime said on stderr (`runc run failed: …`) is dropped, since the
   * message that it could not start says it.
   */
  #forwardOutput(app: App, proc: AppProcess, log: LogWriter): void {
    const out = this.#opts.output
    const emit = (stream: 'stdout' | 'stderr', c: Buffer): void => {
      log.write(c)
      out?.write(app.name, stream, c)
    }
    let held: [stream: 'stdout' | 'stderr', chunk: Buffer][] | undefined = []
    let ran = true
    proc.running.then(
      () => held?.forEach(([stream, c]) => emit(stream, c)),
      () => (ran = false),
    ).finally(() => (held = undefined))
    const take = (stream: 'stdout' | 'stderr') => (c: Buffer) => {
      if (held !== undefined) held.push([stream, c])
      else if (ran || stream === 'stdout') emit(stream, c)
    }
    proc.child.stdout?.on('data', take('stdout'))
    proc.child.stderr?.on('data', take('stderr'))
  }

  /** Records that the app runs: its pid and the pid's start time, when, and how its root was made. */
  #recordStarted(rec: AppRecord, proc: AppProcess, pid: number): void {
    rec.state = 'running'
    rec.pid = pid
    rec.pid_start = procStart(pid) ?? null
    rec.started_at = isoTime()
    rec.finished_at = null
    rec.exit_code = null
    rec.reason = null
    if (proc.rootfs) rec.rootfs = proc.rootfs
  }

  /**
   * Waits for the app's end and records it (if it ran at all), ends what
   * escaped its group, then reads its output to the end and closes its log.
   */
  async #awaitEnd(
    app: App,
    rec: AppRecord,
    proc: AppProcess,
    log: LogWriter,
    ran: Promise<boolean>,
    exited: Promise<Exit>,
    spawnedAt: { pid: number; forksBefore: number } | undefined,
  ): Promise<void> {
    const { child } = proc
    const didRun = await ran
    // A process that never spawned (EMFILE, EAGAIN) may emit no 'exit'.
    const [code, signal] = didRun || child.pid !== undefined ? await exited : [null, null]
    const end = await proc.ended(code, signal)
    if (didRun) {
      rec.state = 'exited'
      rec.exit_code = end.exitCode
      rec.finished_at = isoTime()
      if (end.reason) rec.reason = end.reason
    }
    // What escaped the app's group (setsid, a daemon) goes too: found by its environment, unless the runtime's cgroup ended it already.
    if (!proc.contained) killMarked([podEnvMark(this.pod.uuid), appEnvMark(app.name)], { startedSince: rec.pid_start, spawnedAt })
    this.#running.delete(app.name)
    this.#save()
    await this.#drained(child)
    log.close()
  }

  /**
   * Resolves once `child`'s output is read to its end. Output still in the
   * pipes arrives within moments; a process that left the app's group (setsid,
   * a daemon) may hold them open for ever, and must not keep the pod running.
   */
  #drained(child: AppProcess['child']): Promise<void> {
    if ((child.stdout?.readableEnded ?? true) && (child.stderr?.readableEnded ?? true)) return Promise.resolve()
    return new Promise((resolve) => {
      const closed = (): void => {
        clearTimeout(drain)
        resolve()
      }
      child.once('close', closed)
      const drain = setTimeout(() => {
        child.stdout?.destroy()
        child.stderr?.destroy()
        child.removeListener('close', closed)
        resolve()
      }, PIPE_DRAIN_MS)
    })
  }

  /** Records that `app` could not be started (127 for a missing program, else 126), and says so. */
  #cannotStart(app: App, log: LogWriter | undefined, er: NodeJS.ErrnoException): void {
    // A program missing or not executable is the app's own (127, 126), not the data dir's: no hint about its owner.
    const reason = er.code !== undefined && er.code !== 'ENOENT' && er.code !== 'EACCES' ? resourceReason(er.code) : undefined
    const message = `app ${app.name} could not start: ${er.message}${reason ? ` (${reason.what}); ${reason.fix}` : ''}`
    this.#opts.output?.notice(message)
    log?.write(Buffer.from(`podctl: ${message}\n`))
    const rec = this.#appRecord(app.name)
    const now = isoTime()
    rec.state = 'exited'
    rec.exit_code = er.code === 'ENOENT' ? 127 : 126
    rec.started_at = now
    rec.finished_at = now
  }

  #finish(): number {
    // The first failure of an init or regular app, in manifest order (CONTRACT §4).
    let code = 0
    visitApps(this.manifest, AppTypeMask.init | AppTypeMask.regular, (a) => {
      const c = this.#appRecord(a.name).exit_code
      if (c === null || c === 0) return true
      code = c
      return false
    })
    this.#record.exit_code = code
    // What only a live supervisor needs goes: an ended pod's record is
    // exactly its CONTRACT §5 view, which list copies without parsing.
    this.#record.ready_at = null
    this.#record.holder_pid = null
    this.#record.holder_start = null
    // Off its networks once it has ended (the runtime's close detaches it).
    this.#record.networks = null
    for (const a of this.#record.apps) if (a.state !== 'running') a.pid_start = null
    this.#save()
    return code
  }
}
