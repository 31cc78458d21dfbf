/**
 * The namespaces of a running pod with `"isolation": "namespaces"`
 * (CONTRACT §9): its supervisor starts the holder, the pod's first
 * process (lib/proc/namespaces.ts), before any app, and every app joins
 * it. The holder ends with the supervisor, and the kernel ends every
 * process of the pod with it.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { writeFileAtomic } from '../fs/atomic.js'
import { DIR_MODE } from '../fs/modes.js'
import { networkOf, type PodManifest } from '../pod/manifest.js'
import type { Pod } from '../pod/pod.js'
import { procStart, sameProcess } from '../proc/identity.js'
import {
  bindTargetProblem,
  holderArgs,
  joinArgs,
  namespaceSupport,
  podMountTable,
  type Bind,
  type NamespaceSupport,
} from '../proc/namespaces.js'
import { defaultRegistry } from '../volume/plugins/index.js'

/** Where the pod's root is assembled, and its mount table, in the pod dir. */
export const NS_ROOT_DIR = 'ns-root'
export const NS_MOUNTS_FILE = 'ns-mounts'

/** How long the holder may take to make the pod's namespaces. */
const HOLDER_READY_MS = 10_000

/** The machine's support, or EFAILED naming what it lacks (CONTRACT §9: prepare fails with exit 1). */
export const requireNamespaceSupport = (m: Pick<PodManifest, 'network'>): NamespaceSupport => {
  const s = namespaceSupport(networkOf(m))
  if (Array.isArray(s)) {
    throw new PodctlError(
      'EFAILED',
      `this machine cannot give a pod its own namespaces: missing ${s.join(', ')}`,
      'install what is missing (or run podctl as root), or use "isolation": "host"',
    )
  }
  return s
}

/**
 * The pod's volume mounts as binds: each mount path once (the manifest
 * checks that apps sharing a path agree), read-only when the mount or the
 * volume says so. Also each writable volume's data at its own host path,
 * where the links in the apps' roots point.
 */
export const podBinds = (pod: Pod, m: PodManifest): Bind[] => {
  const registry = defaultRegistry()
  const data = new Map<string, { source: string; readOnly: boolean }>()
  for (const v of m.volumes ?? []) {
    const spec = { name: v.name, volume: v }
    const readOnly = 'readOnly' in v && v.readOnly === true
    data.set(v.name, { source: registry.findPluginBySpec(spec).newMounter(spec, pod).path, readOnly })
  }
  const binds = new Map<string, Bind>()
  for (const a of m.apps) {
    for (const mt of a.mounts ?? []) {
      const d = data.get(mt.volume)
      if (!d) continue
      const target = path.posix.normalize(mt.path).replace(/(.)\/+$/, '$1')
      if (!binds.has(target)) binds.set(target, { source: d.source, target, readOnly: d.readOnly || mt.readOnly === true })
    }
  }
  const out = [...binds.values()]
  for (const b of [...out]) {
    if (!b.readOnly && !binds.has(b.source)) out.push({ source: b.source, target: b.source, readOnly: false })
  }
  return out
}

/** Why the pod's mounts cannot be made on this host, one message; undefined when they can. */
export const bindProblems = (m: PodManifest): string | undefined => {
  const problems: string[] = []
  const seen = new Set<string>()
  for (const a of m.apps) {
    for (const mt of a.mounts ?? []) {
      if (seen.has(mt.path)) continue
      seen.add(mt.path)
      const v = m.volumes?.find((x) => x.name === mt.volume)
      const sourceIsDir = v?.kind !== 'host' || (fs.statSync(v.source, { throwIfNoEntry: false })?.isDirectory() ?? true)
      const p = bindTargetProblem(mt.path, sourceIsDir)
      if (p) problems.push(p)
    }
  }
  return problems.length > 0 ? problems.join('; ') : undefined
}

/** The pod's own namespaces, held by its first process. */
export class PodNamespaces {
  readonly support: NamespaceSupport
  readonly network: 'host' | 'none'
  readonly child: ChildProcess
  /** The holder's pid on the host, and its start time. */
  readonly pid: number
  readonly start: string | null
  readonly #exited: Promise<void>

  private constructor(support: NamespaceSupport, network: 'host' | 'none', child: ChildProcess, pid: number, exited: Promise<void>) {
    this.support = support
    this.network = network
    this.child = child
    this.pid = pid
    this.start = procStart(pid) ?? null
    this.#exited = exited
  }

  /**
   * Starts the holder of `pod`'s namespaces and resolves once they are
   * made; EFAILED with the holder's own words if they cannot be.
   */
  static async start(pod: Pod, m: PodManifest): Promise<PodNamespaces> {
    const support = requireNamespaceSupport(m)
    const problem = bindProblems(m)
    if (problem) throw new PodctlError('EFAILED', `pod ${pod.uuid.slice(0, 8)} cannot be isolated: ${problem}`)
    const network = networkOf(m)
    const root = path.join(pod.path, NS_ROOT_DIR)
    fs.mkdirSync(root, { recursive: true, mode: DIR_MODE })
    fs.mkdirSync(path.join(pod.path, 'apps'), { recursive: true, mode: DIR_MODE })
    const binds: Bind[] = [{ source: path.join(pod.path, 'apps'), target: path.join(pod.path, 'apps'), readOnly: false }, ...podBinds(pod, m)]
    writeFileAtomic(pod.path, NS_MOUNTS_FILE, podMountTable({ root, binds }))
    const [file, args] = holderArgs(support, {
      hostname: m.name ?? pod.uuid.slice(0, 8),
      mountTable: path.join(pod.path, NS_MOUNTS_FILE),
      root,
      network,
      userns: support.userns,
    })
    // Its own process group, so that the terminal's Ctrl-C reaches podctl only.
    const child = spawn(file, args, { cwd: '/', detached: true, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] })
    child.stdio[3]?.on('error', () => {})
    const exited = new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve()
      else child.once('close', () => resolve())
    })
    let stderr = ''
    child.stderr?.setEncoding('utf8').on('data', (s: string) => {
      if (stderr.length < 4000) stderr += s
    })
    const pid = await new Promise<number>((resolve, reject) => {
      let out = ''
      const timer = setTimeout(() => fail(`it was not ready after ${HOLDER_READY_MS / 1000}s`), HOLDER_READY_MS)
      const fail = (why: string): void => {
        clearTimeout(timer)
        child.kill('SIGKILL')
        const said = stderr.trim().split('\n').filter((l) => l.trim() !== '' && !l.includes('dmesg(1)')).map((l) => l.trim()).join('; ')
        reject(new PodctlError('EFAILED', `the namespaces of pod ${pod.uuid.slice(0, 8)} could not be made: ${said || why}`))
      }
      child.once('error', (er) => fail(er.message))
      child.once('exit', (code, signal) => fail(`its first process exited (${signal ?? code})`))
      child.stdout?.setEncoding('utf8').on('data', (s: string) => {
        out += s
        const m = /^ready (\d+)\n/.exec(out)
        if (!m) return
        clearTimeout(timer)
        child.removeAllListeners('exit')
        resolve(Number(m[1]))
      })
    })
    // Nothing more is said on stdout; keep reading so that it never blocks.
    child.stdout?.resume()
    return new PodNamespaces(support, network, child, pid, exited)
  }

  /** The argv that runs an app in the pod, in `cwd` (a path inside the pod), as `uid`/`gid` if given. */
  joinArgs(file: string, args: readonly string[], opts: { cwd: string; uid?: number; gid?: number }): [string, string[]] {
    return joinArgs(this.support, { holderPid: this.pid, network: this.network, userns: this.support.userns, ...opts }, file, args)
  }

  /** Ends the pod's namespaces (and whatever still runs in them); resolves once the holder is gone. */
  async close(): Promise<void> {
    // End of file on fd 3 ends pid 1; SIGKILL to it too, should it be stuck.
    ;(this.child.stdio[3] as { destroy?: () => void } | null)?.destroy?.()
    // Only the holder itself: after a long run its pid may have been reused, if it died before.
    if (sameProcess(this.pid, this.start)) {
      try {
        process.kill(this.pid, 'SIGKILL')
      } catch {
        // gone already
      }
    }
    await this.#exited
  }
}
