/**
 * The lock's owner record: who holds a pod lock, precisely enough that a
 * reader on the same host can tell at once whether that holder still
 * lives. A pid alone is not enough (pids are reused), so the record also
 * has the process's start time (field 22 of /proc/<pid>/stat, in clock
 * ticks since boot) and the boot id; the host name tells a record written
 * on another host, which only the lock's mtime can judge.
 *
 * The record is the target of a symlink named `owner` inside the lock
 * directory: one syscall to write (before the directory is renamed into
 * place, so no reader ever sees a lock without its owner) and one to read.
 */
import fs from 'node:fs'
import os from 'node:os'

export interface Owner {
  pid: number
  /** Start time of the process, from /proc/<pid>/stat; '' where there is no /proc. */
  start: string
  boot: string
  host: string
}

const PREFIX = 'podctl-owner/1'

export const formatOwner = (o: Owner): string =>
  `${PREFIX} pid=${o.pid} start=${o.start} boot=${o.boot} host=${o.host}`

export const parseOwner = (s: string): Owner | undefined => {
  const m = /^podctl-owner\/1 pid=(\d+) start=(\d*) boot=(\S*) host=(\S*)$/.exec(s)
  if (!m) return undefined
  return { pid: Number(m[1]), start: m[2]!, boot: m[3]!, host: m[4]! }
}

/** Start time and run state of a process from /proc, or undefined if it is gone. */
const procStat = (pid: number | 'self'): { start: string; state: string } | undefined => {
  let text: string
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'latin1')
  } catch {
    return undefined
  }
  // The command name (field 2) is in parentheses and may hold spaces or
  // parentheses itself, so count fields from the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ')
  // rest[0] is field 3 (state); field 22 (starttime) is rest[19].
  const state = rest[0]
  const start = rest[19]
  if (state === undefined || start === undefined) return undefined
  return { start, state }
}

/** A process's start time (field 22 of /proc/<pid>/stat), or undefined if it is gone. */
export const procStart = (pid: number): string | undefined => procStat(pid)?.start

/**
 * Whether `pid` is still the process that had start time `start` (and is
 * not a zombie): guards every kill of a recorded pid against pid reuse.
 */
export const sameProcess = (pid: number, start: string | null | undefined): boolean => {
  if (!start) return false
  const st = procStat(pid)
  return st !== undefined && st.start === start && st.state !== 'Z' && st.state !== 'X'
}

const hasProc = (): boolean => fs.existsSync('/proc/self/stat')

let bootId: string | undefined
const readBootId = (): string => {
  if (bootId !== undefined) return bootId
  try {
    bootId = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim()
  } catch {
    // No /proc (not Linux): the boot time, to the minute, stands in for it.
    bootId = `t${Math.round((Date.now() / 1000 - os.uptime()) / 60)}`
  }
  return bootId
}

let self: Owner | undefined
/** This process's owner record. */
export const ownOwner = (): Owner => {
  if (self !== undefined && self.pid === process.pid) return self
  self = {
    pid: process.pid,
    start: procStat('self')?.start ?? '',
    boot: readBootId(),
    host: os.hostname().replace(/\s/g, '_') || 'localhost',
  }
  return self
}

/**
 * Whether the process named by a same-host, same-boot record still runs.
 * A zombie counts as dead: it can hold nothing any more.
 */
const processAlive = (o: Owner): boolean => {
  if (o.start === '' || !hasProc()) {
    try {
      process.kill(o.pid, 0)
      return true
    } catch (er) {
      return (er as NodeJS.ErrnoException).code === 'EPERM'
    }
  }
  const st = procStat(o.pid)
  if (!st) return false
  if (st.state === 'Z' || st.state === 'X' || st.state === 'x') return false
  return st.start === o.start
}

/** How long a lock from another host stays live without an mtime refresh. */
export const REMOTE_STALE_MS = 30_000

/**
 * Whether the holder named by `o` is alive. Same host and boot: decided
 * from /proc at once. Same host, other boot: dead (the machine rebooted).
 * Other host: alive while the lock's mtime is fresher than REMOTE_STALE_MS
 * (the holder refreshes it every few seconds).
 */
export const ownerAlive = (o: Owner, lockMtimeMs: () => number | undefined, now = Date.now()): boolean => {
  const me = ownOwner()
  if (o.host === me.host) {
    if (o.boot !== me.boot) return false
    return processAlive(o)
  }
  const mtime = lockMtimeMs()
  return mtime !== undefined && now - mtime < REMOTE_STALE_MS
}
