/**
 * A running isolated pod on an OCI runtime (CONTRACT §12), as podman and
 * CRI-O run theirs: podctl writes a bundle per container in the pod
 * directory and the runtime (`runc run`, in the foreground, as the child
 * the supervisor waits on) makes and enforces the container. The infra
 * container comes first and holds the pod's namespaces; each app's
 * container joins them by path.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, shortId } from '../errors.js'
import { writeFileAtomic } from '../fs/atomic.js'
import { DIR_MODE } from '../fs/modes.js'
import { procStart } from '../proc/identity.js'
import { oomKills } from '../proc/cgroups.js'
import { appCgroup, appConfig, infraConfig, type AppSpec, type PodSpec } from './spec.js'
import { infraSpawnArgs } from './infra.js'
import { appId, infraId, runtimeRoot, type RuntimeRef } from './runtime.js'

/** The pod's own root, and where the bundles are, in the pod dir. */
export const ROOTFS_DIR = 'rootfs'
export const BUNDLES_DIR = 'bundles'
const INFRA_BUNDLE = '.infra'

/** How long the infra may take to start. */
const INFRA_READY_MS = 10_000
/** How long the infra gets to end after its pipe closes before it is killed. */
const INFRA_END_MS = 5_000

/** A runtime's errors, from its JSON log: what it said last at level error. */
export const runtimeError = (logFile: string): string | undefined => {
  let text: string
  try {
    text = fs.readFileSync(logFile, 'utf8')
  } catch {
    return undefined
  }
  let said: string | undefined
  for (const line of text.split('\n')) {
    try {
      const e = JSON.parse(line) as { level?: string; msg?: string }
      if ((e.level === 'error' || e.level === 'fatal') && e.msg) said = e.msg
    } catch {
      // not a JSON line (a runtime that ignores --log-format)
      if (line.trim() !== '') said = line.trim()
    }
  }
  return said
}

/**
 * The spawn-like error of an app whose container could not start: ENOENT
 * (127) for a missing program, EACCES (126) for one that cannot be run,
 * else the runtime's own failure (126 too, with its words).
 */
const startError = (message: string): NodeJS.ErrnoException => {
  const exec = /exec: "[^"]*": (.*)$/.exec(message)?.[1]
  const code = exec === undefined ? 'ERUNTIME' : /executable file not found|no such file or directory/.test(exec) ? 'ENOENT' : 'EACCES'
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
    timer = setInterval(check, 20)
    check()
  })

/** Where a pod's containers live: its runtime, that runtime's root for this data dir, and the pod's dirs. */
export interface OciPodPlace {
  dataDir: string
  podDir: string
  uuid: string
  runtime: RuntimeRef
}

/** One app's container, started: the runtime process the supervisor waits on, and the app inside it. */
export interface OciApp {
  child: ChildProcess
  /** Whether the runtime ends all of the app's processes with it (it has a cgroup to find them by). */
  contained: boolean
  /** The app's host pid once its container runs; rejects with a spawn-like error when it could not start. */
  running: Promise<number>
  signal(signal: NodeJS.Signals): void
  /** After `child` exits with `exitCode`: whether the kernel killed the app for its memory limit. Deletes a kept container. */
  ended(exitCode: number): Promise<{ exitCode: number; reason?: 'oom-killed' }>
}

/** The runtime's command line: its state root and JSON log first, as every runtime takes them. */
const runtimeArgs = (p: OciPodPlace, log: string | undefined, args: string[]): string[] => [
  '--root',
  runtimeRoot(p.dataDir, p.runtime),
  ...(log ? ['--log', log, '--log-format', 'json'] : []),
  ...args,
]

export class OciPod {
  readonly place: OciPodPlace
  readonly spec: PodSpec
  readonly #infra: ChildProcess
  /** The infra's host pid: the namespaces' holder, pid 1 of the pod. */
  readonly infraPid: number
  readonly infraStart: string | null
  readonly #infraClosed: Promise<void>

  private constructor(place: OciPodPlace, spec: PodSpec, infra: ChildProcess, infraPid: number, closed: Promise<void>) {
    this.place = place
    this.spec = spec
    this.#infra = infra
    this.infraPid = infraPid
    this.infraStart = procStart(infraPid) ?? null
    this.#infraClosed = closed
  }

  /**
   * Makes the pod's root and starts its infra container; resolves once it
   * runs. EFAILED with the runtime's own words when it cannot.
   */
  static async start(place: OciPodPlace, spec: PodSpec, resources: Parameters<typeof infraConfig>[1]): Promise<OciPod> {
    makeRootfs(spec)
    fs.mkdirSync(runtimeRoot(place.dataDir, place.runtime), { recursive: true, mode: 0o700 })
    deleteContainer(place, infraId(place.uuid))
    const bundle = bundleDir(place, INFRA_BUNDLE)
    writeFileAtomic(bundle, 'config.json', JSON.stringify(infraConfig(spec, resources)))
    const log = path.join(bundle, 'runtime.log')
    const pidFile = path.join(bundle, 'pid')
    fs.rmSync(log, { force: true })
    fs.rmSync(pidFile, { force: true })
    // fd 3 is the guardian's end of a socket pair only this process holds
    // the other end of (lib/runtime/infra.ts); its own process group keeps
    // the terminal's Ctrl-C away.
    const id = infraId(place.uuid)
    const [sh, args] = infraSpawnArgs(
      [place.runtime.path, ...runtimeArgs(place, log, ['run', '--pid-file', pidFile, '--bundle', bundle, id])],
      pidFile,
      [place.runtime.path, ...runtimeArgs(place, undefined, ['kill', id, 'KILL'])],
    )
    const child = spawn(sh, args, {
      cwd: bundle,
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    })
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
      return new PodctlError('EFAILED', `the infra container of pod ${shortId(place.uuid)} could not start: ${said || why}`, `see the runtime's log: ${log}`)
    }
    const spawnError = new Promise<never>((_, reject) => child.once('error', (er) => reject(failed(`${place.runtime.path}: ${er.message}`))))
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(failed(`it did not run within ${INFRA_READY_MS / 1000}s`)), INFRA_READY_MS)
    })
    try {
      const pid = await Promise.race([pidFromFile(pidFile, child), spawnError, timeout])
      if (pid === undefined) throw failed(`${place.runtime.name} exited (${child.exitCode ?? child.signalCode})`)
      return new OciPod(place, spec, child, pid, closed)
    } finally {
      clearTimeout(timer)
    }
  }

  /**
   * Starts one app's container (its config written afresh: a mutable pod's
   * app may have changed), with its output on `child`'s stdout and stderr.
   * `keep` leaves the container in place when it exits, so that its
   * cgroup's OOM counter can be read before it is deleted.
   */
  startApp(app: AppSpec, keep: boolean): OciApp {
    const id = appId(this.place.uuid, app.name)
    deleteContainer(this.place, id)
    const bundle = bundleDir(this.place, app.name)
    writeFileAtomic(bundle, 'config.json', JSON.stringify(appConfig(this.spec, app, this.infraPid)))
    const log = path.join(bundle, 'runtime.log')
    const pidFile = path.join(bundle, 'pid')
    fs.rmSync(log, { force: true })
    fs.rmSync(pidFile, { force: true })
    const child = spawn(this.place.runtime.path, runtimeArgs(this.place, log, ['run', '--pid-file', pidFile, ...(keep ? ['--keep'] : []), '--bundle', bundle, id]), {
      cwd: bundle,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let pid: number | undefined
    const running = new Promise<number>((resolve, reject) => {
      child.once('error', (er) => reject(er))
      child.once('spawn', () => {
        void pidFromFile(pidFile, child).then((p) => {
          pid = p
          if (p !== undefined) resolve(p)
          else reject(startError(runtimeError(log) ?? `${this.place.runtime.name} exited (${child.exitCode ?? child.signalCode}) before the app ran`))
        })
      })
    })
    running.catch(() => {})
    const place = this.place
    return {
      child,
      running,
      contained: this.spec.cgroups,
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
        const oom = keep && exitCode === 137 && (oomKills(appCgroup(place.uuid, app.name)) ?? 0) > 0
        if (keep) await deleteContainerAsync(place, id)
        return { exitCode, ...(oom ? { reason: 'oom-killed' as const } : {}) }
      },
    }
  }

  /** Ends the pod: its guardian's socket closes, the guardian kills pid 1 and the kernel ends every process of the pod. Resolves once the infra is gone. */
  async close(): Promise<void> {
    ;(this.#infra.stdio[3] as { destroy?: () => void } | null)?.destroy?.()
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), INFRA_END_MS)
    })
    const how = await Promise.race([this.#infraClosed, late])
    clearTimeout(timer)
    if (how === 'late') {
      await deleteContainerAsync(this.place, infraId(this.place.uuid))
      this.#infra.kill('SIGKILL')
      await this.#infraClosed
    }
  }
}

const bundleDir = (p: OciPodPlace, name: string): string => {
  const dir = path.join(p.podDir, BUNDLES_DIR, name)
  fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE })
  return dir
}

/**
 * The pod's root: an empty directory where the runtime makes the mount
 * points (so nothing is ever made on the host), with the host's links
 * (/bin → usr/bin) as links.
 */
const makeRootfs = (spec: PodSpec): void => {
  fs.mkdirSync(spec.rootfs, { recursive: true, mode: 0o755 })
  fs.chmodSync(spec.rootfs, 0o755)
  if (spec.idMap) fs.lchownSync(spec.rootfs, spec.idMap.uid[0]!.hostID, spec.idMap.gid[0]!.hostID)
  for (const d of spec.hostDirs) {
    if (d.link === undefined) continue
    const at = path.join(spec.rootfs, d.path)
    if (fs.lstatSync(at, { throwIfNoEntry: false })) continue
    fs.symlinkSync(d.link, at)
  }
}

/** Whether the runtime keeps state for container `id` (its directory under the runtime's root). */
const hasState = (p: Pick<OciPodPlace, 'dataDir' | 'runtime'>, id: string): boolean => fs.existsSync(path.join(runtimeRoot(p.dataDir, p.runtime), id))

/** Deletes container `id` if the runtime still has it, whatever its state (its processes killed, its cgroup removed). */
export const deleteContainer = (p: Pick<OciPodPlace, 'dataDir' | 'runtime'>, id: string): void => {
  if (!hasState(p, id)) return
  const r = spawnSync(p.runtime.path, runtimeArgs({ ...p, podDir: '', uuid: '' }, undefined, ['delete', '--force', id]), { encoding: 'utf8', timeout: 30_000 })
  if (r.status !== 0 && hasState(p, id)) {
    throw new PodctlError('EFAILED', `${p.runtime.name} could not delete container ${id}: ${(r.stderr ?? '').trim() || r.error?.message || `exit ${r.status}`}`)
  }
}

const deleteContainerAsync = (p: Pick<OciPodPlace, 'dataDir' | 'runtime'>, id: string): Promise<void> =>
  new Promise((resolve) => {
    if (!hasState(p, id)) return resolve()
    const c = spawn(p.runtime.path, runtimeArgs({ ...p, podDir: '', uuid: '' }, undefined, ['delete', '--force', id]), { stdio: 'ignore' })
    c.once('error', () => resolve())
    c.once('close', () => resolve())
  })

/**
 * Deletes every container the runtime still has for pod `uuid`: what a
 * SIGKILLed supervisor (or runtime) left. rm and gc run it before a pod's
 * directory goes; cheap for a pod that has none (one readdir).
 */
export const deletePodContainers = (p: Pick<OciPodPlace, 'dataDir' | 'runtime'>, uuid: string): void => {
  let ids: string[]
  try {
    ids = fs.readdirSync(runtimeRoot(p.dataDir, p.runtime))
  } catch {
    return
  }
  // Apps before the infra: their cgroups are below its.
  const mine = ids.filter((id) => id.startsWith(`${uuid}.`))
  if (ids.includes(uuid)) mine.push(uuid)
  for (const id of mine) deleteContainer(p, id)
}
