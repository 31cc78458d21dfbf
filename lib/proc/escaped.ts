/**
 * Processes that left their app's process group (setsid, a daemon's double
 * fork) escape the group kills of the supervisor and the guardians. Without
 * cgroups (podctl runs unprivileged) the one mark they still carry is the
 * environment the supervisor gave every app, which their descendants
 * inherit (PODCTL_POD_UUID, PODCTL_APP_NAME). A process that rewrote its
 * environment is out of reach; Documentation/devel/supervisor.md says so.
 */
import fs from 'node:fs'
import { procStart, sameProcess } from './identity.js'

/**
 * Where process creation stood when an app was spawned: its pid, and the
 * machine's fork count read just before the spawn (so every pid handed
 * out since, the app's included, is counted in `forksBefore` + later).
 */
export interface SpawnMark {
  pid: number
  forksBefore: number
}

/** The machine's fork count since boot (`processes` in /proc/stat), if readable. */
export const forkCount = (): number | undefined => {
  try {
    const m = /^processes (\d+)$/m.exec(fs.readFileSync('/proc/stat', 'latin1'))
    return m ? Number(m[1]) : undefined
  } catch {
    return undefined
  }
}

const readNumber = (file: string): number | undefined => {
  try {
    const n = Number(fs.readFileSync(file, 'latin1').trim())
    return Number.isInteger(n) && n > 0 ? n : undefined
  } catch {
    return undefined
  }
}

let pidMax: number | undefined
/**
 * Whether every process started since `mark` has a larger pid than the
 * app's, so that a scan can skip the smaller ones (most of a machine's
 * processes). Linux hands out pids in increasing order until it reaches
 * pid_max, then wraps to the bottom; a wrap since the spawn needs at least
 * pid_max − pid more pids handed out. Fewer forks than that since the
 * mark, and the newest pid not below the app's, rule it out. (Forks that
 * fail after taking a pid are not counted; missing a wrap would take
 * pid_max − pid of them within one app's life.)
 */
const noPidWrapSince = (mark: SpawnMark): boolean => {
  pidMax ??= readNumber('/proc/sys/kernel/pid_max') ?? 0
  const forks = forkCount()
  const lastPid = readNumber('/proc/sys/kernel/ns_last_pid')
  return forks !== undefined && lastPid !== undefined && lastPid >= mark.pid && forks - mark.forksBefore < pidMax - mark.pid
}

export interface ScanOptions {
  /** Only processes started since this /proc start time. */
  startedSince?: string | null
  /** The app's spawn: only larger pids are read when the pid counter cannot have wrapped since. */
  spawnedAt?: SpawnMark | undefined
}

/**
 * Live processes whose environment holds every one of `marks`
 * ("NAME=value"), with their start times. Never this process or its
 * parent: a podctl command run from inside an app carries the same
 * environment.
 */
export const processesWithEnv = (marks: readonly string[], opts: ScanOptions = {}): { pid: number; start: string }[] => {
  const since = opts.startedSince ? Number(opts.startedSince) : 0
  let names: string[]
  try {
    names = fs.readdirSync('/proc')
  } catch {
    return [] // no /proc: nothing to find
  }
  const minPid = opts.spawnedAt !== undefined && noPidWrapSince(opts.spawnedAt) ? opts.spawnedAt.pid : 0
  const found: { pid: number; start: string }[] = []
  const self = process.pid
  const parent = process.ppid
  for (const name of names) {
    const pid = Number(name)
    if (!Number.isInteger(pid) || pid <= minPid || pid <= 1 || pid === self || pid === parent) continue
    const start = procStart(pid)
    // A descendant of the app started after it: the environment of older
    // processes (most of a machine's) need not be read.
    if (start === undefined || Number(start) < since) continue
    let env: string[]
    try {
      env = fs.readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0')
    } catch {
      continue // gone, or not ours to read
    }
    if (marks.every((m) => env.includes(m))) found.push({ pid, start })
  }
  return found
}

/** SIGKILLs the live processes whose environment holds every one of `marks`; returns how many. */
export const killMarked = (marks: readonly string[], opts: ScanOptions = {}): number => {
  let killed = 0
  for (const p of processesWithEnv(marks, opts)) {
    if (!sameProcess(p.pid, p.start)) continue // the pid was reused meanwhile
    try {
      process.kill(p.pid, 'SIGKILL')
      killed++
    } catch {
      // gone, or not ours
    }
  }
  return killed
}
