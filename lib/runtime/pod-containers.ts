/**
 * A running isolated pod's containers (CONTRACT §12), as podman and CRI-O
 * run theirs: podctl writes a bundle per container in the pod directory
 * (`bundles/.infra`, `bundles/<app>`: config.json, the pid file, the
 * runtime's JSON log) and the runtime runs each in the foreground, as the
 * child the supervisor waits on (lib/runtime/driver.ts). The infra comes
 * first and holds the pod's namespaces; each app joins them by path.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, shortId } from '../errors.js'
import { writeFileAtomic } from '../fs/atomic.js'
import { DIR_MODE } from '../fs/modes.js'
import { oomKills } from '../proc/cgroups.js'
import { procStart } from '../proc/identity.js'
import { notFound, runtimeError, type RuntimeDriver } from './driver.js'
import { appCgroup } from './generate/resources.js'
import { infraSpawnArgs } from './infra.js'
import type { Spec } from './oci-spec.js'
import { appId, infraId } from './runtime.js'

/** Where the bundles are, in the pod dir. */
export const BUNDLES_DIR = 'bundles'
const INFRA_BUNDLE = '.infra'

/** How long the infra may take to start. */
const INFRA_READY_MS = 10_000
/** How long the infra gets to end after its guardian's socket closes before it is deleted by force. */
const INFRA_END_MS = 5_000
/** How often the pid file is looked for besides its directory's events. */
const PID_POLL_MS = 20

/**
 * The spawn-like error of an app whose container could not start: ENOENT
 * (127) for a missing program, EACCES (126) for one that cannot be run,
 * else the runtime's own failure (126 too, with its words).
 */
const startError = (message: string): NodeJS.ErrnoException => {
  const exec = /exec: "[^"]*": (.*)$/.exec(message)?.[1]
  const code = exec === undefined ? 'ERUNTIME' : notFound(exec) ? 'ENOENT' : 'EACCES'
  return Object.assign(new Error(message), { code })
}

/** Resolves with the pid in `file` once the runtime has written it, or undefined once `child` has exited without. */
const pidFromFile = (file: string, child: ChildProcess): Promise<number | undefined> =>
  new Promise((resolve) => {
    const read = (): number | undefined => {
      try {
        const n = Number(fs.readFileSync(file, 'utf8').trim())
        return Number.isSafeInteger(n) && n > 0 ? n : undefined
      } catch {
        return undefined
      }
    }
    let watcher: fs.FSWatcher | undefined
    let timer: NodeJS.Timeout | undefined
    const done = (pid: number | undefined): void => {
      watcher?.close()
      clearInterval(timer)
      child.removeListener('exit', onExit)
      resolve(pid)
    }
    const check = (): void => {
      const pid = read()
      if (pid !== undefined) done(pid)
    }
    const onExit = (): void => done(read())
    child.once('exit', onExit)
    try {
      // The runtime writes the file by a rename in its directory.
      watcher = fs.watch(path.dirname(file), check)
      watcher.on('error', () => {})
    } catch {
      // no file events here: the poll does it
    }
    timer = setInterval(check, PID_POLL_MS)
    check()
  })

/** A bundle's directory, its config written afresh, and the files the runtime writes there cleared. */
const writeBundle = (podDir: string, name: string, spec: Spec): { bundle: string; log: string; pidFile: string } => {
  const bundle = path.join(podDir, BUNDLES_DIR, name)
  fs.mkdirSync(bundle, { recursive: true, mode: DIR_MODE })
  writeFileAtomic(bundle, 'config.json', JSON.stringify(spec))
  const log = path.join(bundle, 'runtime.log')
  const pidFile = path.join(bundle, 'pid')
  fs.rmSync(log, { force: true })
  fs.rmSync(pidFile, { force: true })
  return { bundle, log, pidFile }
}

/** One app's container, started: the runtime process the supervisor waits on, and the app inside it. */
export interface ContainerApp {
  child: ChildProcess
  /** The app's host pid once its container runs; rejects with a spawn-like error when it could not start. */
  running: Promise<number>
  signal(signal: NodeJS.Signals): void
  /** After `child` exits with `exitCode`: whether the kernel killed the app for its memory limit. Deletes a kept container. */
  ended(exitCode: number): Promise<{ exitCode: number; reason?: 'oom-killed' }>
}

export class PodContainers {
  readonly driver: RuntimeDriver
  readonly uuid: string
  readonly podDir: string
  readonly #infra: ChildProcess
  /** The infra's host pid: the namespaces' holder, pid 1 of the pod. */
  readonly infraPid: number
  readonly infraStart: string | null
  readonly #infraClosed: Promise<void>

  private constructor(driver: RuntimeDriver, uuid: string, podDir: string, infra: ChildProcess, infraPid: number, closed: Promise<void>) {
    this.driver = driver
    this.uuid = uuid
    this.podDir = podDir
    this.#infra = infra
    this.infraPid = infraPid
    this.infraStart = procStart(infraPid) ?? null
    this.#infraClosed = closed
  }

  /**
   * Starts the pod's infra from `spec`, under its guardian (fd 3: a socket
   * only this process holds the other end of); resolves once it runs.
   * EFAILED with the runtime's own words when it cannot.
   */
  static async start(driver: RuntimeDriver, uuid: string, podDir: string, spec: Spec): Promise<PodContainers> {
    const id = infraId(uuid)
    driver.delete(id)
    const { bundle, log, pidFile } = writeBundle(podDir, INFRA_BUNDLE, spec)
    fs.mkdirSync(driver.root, { recursive: true, mode: 0o700 })
    const [sh, args] = infraSpawnArgs([driver.runtime.path, ...driver.runArgs(bundle, id, { pidFile, log })], { runtime: driver.runtime.path, root: driver.root, id, pidFile })
    const child = spawn(sh, args, { cwd: bundle, detached: true, stdio: ['ignore', 'ignore', 'pipe', 'pipe'] })
    child.stdio[3]?.on('error', () => {})
    let stderr = ''
    child.stderr?.setEncoding('utf8').on('data', (s: string) => {
      if (stderr.length < 4000) stderr += s
    })
    const closed = new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve()
      else child.once('close', () => resolve())
    })
    const failed = (why: string): PodctlError => {
      child.kill('SIGKILL')
      // The guardian ends with its socket, after a last try to end the infra.
      ;(child.stdio[3] as { destroy?: () => void } | null)?.destroy?.()
      const said = runtimeError(log) ?? stderr.trim().split('\n').pop()
      return new PodctlError('EFAILED', `the infra container of pod ${shortId(uuid)} could not start: ${said || why}`, `see the runtime's log: ${log}`)
    }
    const spawnError = new Promise<never>((_, reject) => child.once('error', (er) => reject(failed(`${sh}: ${er.message}`))))
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(failed(`it did not run within ${INFRA_READY_MS / 1000}s`)), INFRA_READY_MS)
    })
    try {
      const pid = await Promise.race([pidFromFile(pidFile, child), spawnError, timeout])
      if (pid === undefined) throw failed(`${driver.runtime.name} exited (${child.exitCode ?? child.signalCode})`)
      return new PodContainers(driver, uuid, podDir, child, pid, closed)
    } finally {
      clearTimeout(timer)
    }
  }

  /**
   * Starts one app's container from `spec` (written afresh: a mutable
   * pod's app may have changed), its output on `child`'s stdout and
   * stderr. `keep` leaves the container in place when it exits, so that
   * its cgroup's OOM counter can be read before it is deleted.
   */
  startApp(name: string, spec: Spec, opts: { keep: boolean; stdio: StdioOptions }): ContainerApp {
    const id = appId(this.uuid, name)
    this.driver.delete(id)
    const { bundle, log, pidFile } = writeBundle(this.podDir, name, spec)
    const child = this.driver.run(bundle, id, { pidFile, log, keep: opts.keep, stdio: opts.stdio })
    let pid: number | undefined
    const running = new Promise<number>((resolve, reject) => {
      child.once('error', (er) => reject(er))
      child.once('spawn', () => {
        void pidFromFile(pidFile, child).then((p) => {
          pid = p
          if (p !== undefined) resolve(p)
          else reject(startError(runtimeError(log) ?? `${this.driver.runtime.name} exited (${child.exitCode ?? child.signalCode}) before the app ran`))
        })
      })
    })
    running.catch(() => {})
    return {
      child,
      running,
      signal: (signal) => {
        // The app itself once it runs (as podman stop does); before that, the
        // runtime, which forwards what it gets to the container it is making.
        try {
          process.kill(pid ?? child.pid ?? 0, signal)
        } catch {
          // gone
        }
      },
      ended: async (exitCode) => {
        const oom = opts.keep && exitCode === 137 && (oomKills(appCgroup(this.uuid, name)) ?? 0) > 0
        if (opts.keep) await this.driver.deleteAsync(id)
        return { exitCode, ...(oom ? { reason: 'oom-killed' as const } : {}) }
      },
    }
  }

  /** Ends the pod: its guardian's socket closes, the guardian kills pid 1, and the kernel ends every process of the pod. Resolves once the infra is gone. */
  async close(): Promise<void> {
    ;(this.#infra.stdio[3] as { destroy?: () => void } | null)?.destroy?.()
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), INFRA_END_MS)
    })
    const how = await Promise.race([this.#infraClosed, late])
    clearTimeout(timer)
    if (how === 'late') {
      await this.driver.deleteAsync(infraId(this.uuid))
      this.#infra.kill('SIGKILL')
      await this.#infraClosed
    }
  }
}
