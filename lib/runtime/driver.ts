/**
 * The one driver of an OCI runtime's command line (runc and crun take the
 * same), as podman talks to either through one type: `run` in the
 * foreground, `exec`, `kill`, `delete`, and what its state root holds.
 * Every call names the data dir's own state root (`--root`), so that two
 * data dirs never share a container id, and, where a log is wanted, a
 * JSON log whose last error is the runtime's own words. Starting an app,
 * starting the infra, `enter` and the tear-down of rm and gc all go
 * through it.
 */
import { spawn, spawnSync, type ChildProcess, type StdioOptions } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { appId, infraId, runtimeRoot, type RuntimeRef } from './runtime.js'

/** How long a `delete` may take before podctl gives up on it. */
const DELETE_TIMEOUT_MS = 30_000

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

/** Whether the runtime's words say a program could not be found (127, as a shell gives it) rather than not run (126). */
export const notFound = (said: string | undefined): boolean => said !== undefined && /executable file not found|no such file or directory/.test(said)

export interface RunOptions {
  pidFile: string
  /** Leave the container in place when its process exits (its cgroup's OOM counter is read first). */
  keep?: boolean
  log: string
  stdio: StdioOptions
}

export class RuntimeDriver {
  readonly runtime: RuntimeRef
  /** The runtime's state root for this data dir. */
  readonly root: string

  constructor(dataDir: string, runtime: RuntimeRef) {
    this.runtime = runtime
    this.root = runtimeRoot(dataDir, runtime)
  }

  /** The runtime's command line: its state root and, when given, its JSON log first, as every runtime takes them. */
  args(log: string | undefined, rest: readonly string[]): string[] {
    return ['--root', this.root, ...(log ? ['--log', log, '--log-format', 'json'] : []), ...rest]
  }

  /** `run` in the foreground, as podctl's child, in a process group of its own (the terminal's Ctrl-C is the supervisor's to forward). */
  run(bundle: string, id: string, opts: RunOptions): ChildProcess {
    fs.mkdirSync(this.root, { recursive: true, mode: 0o700 })
    return spawn(this.runtime.path, this.runArgs(bundle, id, opts), { cwd: bundle, detached: true, stdio: opts.stdio })
  }

  /** The arguments of `run` (the infra's goes through its guardian, which execs them). */
  runArgs(bundle: string, id: string, opts: Pick<RunOptions, 'pidFile' | 'keep' | 'log'>): string[] {
    return this.args(opts.log, ['run', '--pid-file', opts.pidFile, ...(opts.keep ? ['--keep'] : []), '--bundle', bundle, id])
  }

  /** `exec` of the process in `processFile` in container `id`, with `stdio` (enter's own, inherited). */
  exec(id: string, processFile: string, opts: { tty: boolean; log: string; stdio: StdioOptions }): ChildProcess {
    return spawn(this.runtime.path, this.args(opts.log, ['exec', ...(opts.tty ? ['--tty'] : []), '--process', processFile, id]), { stdio: opts.stdio })
  }

  /** Whether the runtime keeps state for container `id` (its directory under the state root). */
  hasState(id: string): boolean {
    return fs.existsSync(path.join(this.root, id))
  }

  /** Deletes container `id` if the runtime still has it, whatever its state (its processes killed, its cgroup removed). EFAILED when it cannot. */
  delete(id: string): void {
    if (!this.hasState(id)) return
    const r = spawnSync(this.runtime.path, this.args(undefined, ['delete', '--force', id]), { encoding: 'utf8', timeout: DELETE_TIMEOUT_MS })
    if (r.status !== 0 && this.hasState(id)) {
      throw new PodctlError('EFAILED', `${this.runtime.name} could not delete container ${id}: ${(r.stderr ?? '').trim() || r.error?.message || `exit ${r.status}`}`)
    }
  }

  /** delete, without waiting in the event loop's thread; never throws (what is left is deleted with the pod). */
  deleteAsync(id: string): Promise<void> {
    return new Promise((resolve) => {
      if (!this.hasState(id)) return resolve()
      const c = spawn(this.runtime.path, this.args(undefined, ['delete', '--force', id]), { stdio: 'ignore' })
      c.once('error', () => resolve())
      c.once('close', () => resolve())
    })
  }

  /**
   * Deletes every container the runtime still has for pod `uuid`: what a
   * SIGKILLed supervisor (or runtime) left. Apps before the infra: their
   * cgroups are below its. Cheap for a pod that has none (one readdir).
   */
  deletePod(uuid: string): void {
    let ids: string[]
    try {
      ids = fs.readdirSync(this.root)
    } catch {
      return
    }
    const mine = ids.filter((id) => id.startsWith(appId(uuid, '')))
    if (ids.includes(infraId(uuid))) mine.push(infraId(uuid))
    for (const id of mine) this.delete(id)
  }
}
