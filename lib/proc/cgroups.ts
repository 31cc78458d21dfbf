/**
 * Reading cgroups, v1 and v2, as the kernel shows them in this process's
 * mount namespace. The runtime creates, limits and removes the cgroups of
 * containers; podctl reads them (usage for `stats`, and the OOM counters
 * that tell an app killed for its memory limit from one killed by a
 * signal), and removes the empty ones a runtime killed midway left.
 */
import fs from 'node:fs'
import path from 'node:path'

/** How this host mounts cgroups: v1 only, v1 controllers beside an empty v2 tree ("hybrid"), or v2 only. */
export type CgroupMode = 'v1' | 'hybrid' | 'v2'

interface CgroupMount {
  /** Where it is mounted here. */
  mountPoint: string
  /** Which cgroup of the hierarchy that mount point shows (mountinfo's root field). */
  root: string
}

export interface CgroupLayout {
  mode: CgroupMode
  /** v1 hierarchies by controller (memory, cpuacct, pids, ...). */
  v1: Map<string, CgroupMount>
  v2: CgroupMount | undefined
  /** On a hybrid host, the v2 tree beside the v1 controllers: no controller, but runtimes make their cgroups in it too. */
  unifiedTree?: CgroupMount
}

const unescape = (s: string): string => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)))

/** The cgroup mounts of this mount namespace, from mountinfo text. */
export const cgroupLayout = (mountinfo = readText('/proc/self/mountinfo') ?? ''): CgroupLayout => {
  const v1 = new Map<string, CgroupMount>()
  let v2: CgroupMount | undefined
  for (const line of mountinfo.split('\n')) {
    const f = line.split(' ')
    const dash = f.indexOf('-')
    if (dash < 0) continue
    const type = f[dash + 1]
    const m = { root: unescape(f[3] ?? '/'), mountPoint: unescape(f[4] ?? '') }
    if (type === 'cgroup2') v2 ??= m
    else if (type === 'cgroup') for (const opt of (f[dash + 3] ?? '').split(',')) if (!v1.has(opt)) v1.set(opt, m)
  }
  const hasControllers = ['memory', 'cpu', 'pids'].some((c) => v1.has(c))
  const mode: CgroupMode = !hasControllers ? 'v2' : v2 ? 'hybrid' : 'v1'
  return { mode, v1, v2: mode === 'v2' ? v2 : undefined, ...(mode === 'hybrid' && v2 ? { unifiedTree: v2 } : {}) }
}

let cached: CgroupLayout | undefined
const layout = (): CgroupLayout => (cached ??= cgroupLayout())

/** The directory of cgroup `cgroupPath` (absolute, as a runtime's cgroupsPath) in a hierarchy, if it is mounted here. */
const dirOf = (m: CgroupMount | undefined, cgroupPath: string): string | undefined => {
  if (!m) return undefined
  const rel = path.posix.relative(m.root, cgroupPath)
  // A cgroup above what this namespace shows cannot be reached from here.
  if (rel.startsWith('..')) return undefined
  return path.join(m.mountPoint, rel)
}

const readText = (p: string | undefined): string | undefined => {
  if (p === undefined) return undefined
  try {
    return fs.readFileSync(p, 'utf8')
  } catch {
    return undefined
  }
}

const ctimeMs = (p: string | undefined): number | undefined => (p === undefined ? undefined : fs.statSync(p, { throwIfNoEntry: false })?.ctimeMs)

const readNumber = (p: string | undefined): number | undefined => {
  const t = readText(p)?.trim()
  return t !== undefined && /^\d+$/.test(t) ? Number(t) : undefined
}

/** `key value` lines (memory.stat, memory.events, cpu.stat, memory.oom_control) as a map. */
const keyed = (text: string | undefined): Map<string, number> =>
  new Map(
    (text ?? '')
      .split('\n')
      .map((l) => l.split(/\s+/))
      .filter((p) => p.length >= 2 && /^\d+$/.test(p[1]!))
      .map((p) => [p[0]!, Number(p[1])] as [string, number]),
  )

/** v1 writes "no limit" as the largest page-aligned 64-bit count; anything past 2^62 is that. */
const V1_UNLIMITED = 2 ** 62

export interface CgroupUsage {
  /** CPU time used so far, in nanoseconds. */
  cpuNanos: number
  /** When the cgroup was made (its directory's ctime, which nothing changes later), in ms: all of cpuNanos was used since. */
  createdMs: number | undefined
  /** Memory in use, less the inactive file cache (what docker and podman show). */
  memoryBytes: number
  /** The memory limit, or null for none. */
  memoryLimitBytes: number | null
  pids: number
  pidsLimit: number | null
}

/** What the cgroup at `cgroupPath` uses now; undefined when it is not there (gone, or not mounted here). */
export const cgroupUsage = (cgroupPath: string, l: CgroupLayout = layout()): CgroupUsage | undefined => {
  if (l.mode === 'v2') {
    const dir = dirOf(l.v2, cgroupPath)
    const current = readNumber(dir && path.join(dir, 'memory.current'))
    if (dir === undefined || current === undefined) return undefined
    const stat = keyed(readText(path.join(dir, 'memory.stat')))
    return {
      cpuNanos: (keyed(readText(path.join(dir, 'cpu.stat'))).get('usage_usec') ?? 0) * 1000,
      createdMs: ctimeMs(dir),
      memoryBytes: Math.max(0, current - (stat.get('inactive_file') ?? 0)),
      memoryLimitBytes: readNumber(path.join(dir, 'memory.max')) ?? null,
      pids: readNumber(path.join(dir, 'pids.current')) ?? 0,
      pidsLimit: readNumber(path.join(dir, 'pids.max')) ?? null,
    }
  }
  const mem = dirOf(l.v1.get('memory'), cgroupPath)
  const usage = readNumber(mem && path.join(mem, 'memory.usage_in_bytes'))
  if (mem === undefined || usage === undefined) return undefined
  const stat = keyed(readText(path.join(mem, 'memory.stat')))
  const limit = readNumber(path.join(mem, 'memory.limit_in_bytes'))
  const cpu = dirOf(l.v1.get('cpuacct'), cgroupPath)
  const pids = dirOf(l.v1.get('pids'), cgroupPath)
  return {
    cpuNanos: readNumber(cpu && path.join(cpu, 'cpuacct.usage')) ?? 0,
    createdMs: ctimeMs(cpu),
    memoryBytes: Math.max(0, usage - (stat.get('total_inactive_file') ?? 0)),
    memoryLimitBytes: limit === undefined || limit >= V1_UNLIMITED ? null : limit,
    pids: readNumber(pids && path.join(pids, 'pids.current')) ?? 0,
    pidsLimit: readNumber(pids && path.join(pids, 'pids.max')) ?? null,
  }
}

/**
 * How many processes the kernel's OOM killer has killed in the cgroup at
 * `cgroupPath` for its memory limit (v1 memory.oom_control, v2
 * memory.events, both `oom_kill`); undefined when it cannot be read.
 */
export const oomKills = (cgroupPath: string, l: CgroupLayout = layout()): number | undefined => {
  const dir = l.mode === 'v2' ? dirOf(l.v2, cgroupPath) : dirOf(l.v1.get('memory'), cgroupPath)
  if (dir === undefined) return undefined
  const text = readText(path.join(dir, l.mode === 'v2' ? 'memory.events' : 'memory.oom_control'))
  return text === undefined ? undefined : keyed(text).get('oom_kill') ?? 0
}

/** Whether this process can make cgroups (root with a writable hierarchy): rootless runtimes cannot on v1. */
export const canMakeCgroups = (l: CgroupLayout = layout()): boolean => {
  const dir = l.mode === 'v2' ? l.v2?.mountPoint : l.v1.get('memory')?.mountPoint
  if (dir === undefined) return false
  try {
    fs.accessSync(dir, fs.constants.W_OK)
    return true
  } catch {
    return false
  }
}

/** Limits podctl writes itself: only where a runtime cannot (a pod's own cgroup on cgroup v2, above its containers'). */
export interface CgroupLimits {
  memoryBytes?: number
  cpuQuotaUs?: number
  cpuPeriodUs?: number
  pids?: number
}

/**
 * Writes `limits` into the v2 cgroup at `cgroupPath`, which a runtime made
 * (with its controllers enabled) as the parent of a container's. Memory
 * gets no swap beyond it, as the runtime's limits do.
 */
export const writeUnifiedLimits = (cgroupPath: string, limits: CgroupLimits, l: CgroupLayout = layout()): void => {
  const dir = dirOf(l.v2, cgroupPath)
  if (dir === undefined) throw new Error(`cgroup ${cgroupPath} is not reachable here`)
  const write = (file: string, value: string): void => fs.writeFileSync(path.join(dir, file), value)
  if (limits.memoryBytes !== undefined) {
    write('memory.max', String(limits.memoryBytes))
    write('memory.swap.max', '0')
  }
  if (limits.cpuQuotaUs !== undefined) write('cpu.max', `${limits.cpuQuotaUs} ${limits.cpuPeriodUs ?? 100000}`)
  if (limits.pids !== undefined) write('pids.max', String(limits.pids))
}

/** Every cgroup hierarchy mounted here, once each: the v1 controllers (one mount may hold several) and named hierarchies, and the v2 tree, a hybrid host's included. */
export const cgroupMounts = (l: CgroupLayout = layout()): CgroupMount[] => [...new Set([...l.v1.values(), ...[l.v2, l.unifiedTree].filter((m) => m !== undefined)])]

/** Removes `dir` and the cgroups below it, deepest first; one that still holds a process (EBUSY) stays, with those above it. */
const removeCgroupTree = (dir: string): void => {
  let entries: fs.Dirent[]
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true })
  } catch {
    return // not there, or not ours to read
  }
  // A cgroup's children are its only directories (cgroupfs has no links or other directories).
  for (const e of entries) if (e.isDirectory()) removeCgroupTree(path.join(dir, e.name))
  try {
    fs.rmdirSync(dir)
  } catch {
    // busy (a process is still in it) or gone: nothing more podctl should do here
  }
}

/**
 * Removes cgroup `cgroupPath` and those below it from every hierarchy
 * where they are empty. A runtime removes a container's cgroup when it
 * deletes the container; one killed while it created the container (its
 * supervisor SIGKILLed with it) left the cgroups made so far and no state
 * to delete, in some hierarchies and not others. rmdir of a cgroup that
 * holds a process fails, so this never takes one from a live process.
 */
export const removeEmptyCgroups = (cgroupPath: string, l: CgroupLayout = layout()): void => {
  for (const m of cgroupMounts(l)) {
    const dir = dirOf(m, cgroupPath)
    if (dir !== undefined) removeCgroupTree(dir)
  }
}
