/**
 * The lock's owner record: who holds a pod lock, precisely enough that a
 * reader on the same host can tell at once whether that holder still
 * lives. A pid alone is not enough (pids are reused), so the record also
 * has the process's start time (field 22 of /proc/<pid>/stat, in clock
 * ticks since boot) and the boot id; the host name tells a record written
 * on another host, which only the lock's mtime can judge.
 *
 * The record is the target of the lock symlink itself (lib/pod/lock.ts):
 * one syscall writes the lock and its owner together, and one reads both.
 * It is kept under 60 bytes so that ext4 stores it inside the inode (a
 * "fast" symlink: no data block to allocate, and none to discard):
 * `podctl2 <pid> <start> <boot> <host>`, where boot is the first 8 hex
 * digits of the boot id and host an 8-hex-digit hash of the host name.
 * The first format, `podctl-owner/1 pid=… start=… boot=… host=…` (full boot
 * id and host name), is still read, so locks taken by an older podctl
 * keep working across an upgrade.
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

const PREFIX = 'podctl2'

export const formatOwner = (o: Owner): string => `${PREFIX} ${o.pid} ${o.start || '-'} ${o.boot} ${o.host}`

export const parseOwner = (s: string): Owner | undefined => {
  const m = /^podctl2 (\d+) (\d+|-) (\S+) (\S+)$/.exec(s)
  if (m) return { pid: Number(m[1]), start: m[2] === '-' ? '' : m[2]!, boot: m[3]!, host: m[4]! }
  const v1 = /^podctl-owner\/1 pid=(\d+) start=(\d*) boot=(\S*) host=(\S*)$/.exec(s)
  if (v1) return { pid: Number(v1[1]), start: v1[2]!, boot: shortBoot(v1[3]!), host: hostHash(v1[4]!) }
  return undefined
}

/** The boot id, shortened: 32 random bits tell two boots apart well enough. */
export const shortBoot = (bootId: string): string => bootId.replace(/-/g, '').slice(0, 8) || '-'

/** FNV-1a, 32 bits, as 8 hex digits: short, stable, and no crypto import at start-up. */
export const hostHash = (host: string): string => {
  let h = 0x811c9dc5
  for (let i = 0; i < host.length; i++) {
    h ^= host.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h.toString(16).padStart(8, '0')
}

// /proc/<pid>/stat is under 1 KiB: one open, one read into a reused buffer
// and one close (readFileSync adds an fstat and a second read). Lock
// checks and the scans of lib/pod/escaped.ts read it for many processes.
const procBuffer = Buffer.allocUnsafe(4096)
const readProcFile = (file: string): string => {
  const fd = fs.openSync(file, 'r')
  try {
    const n = fs.readSync(fd, procBuffer, 0, procBuffer.length, 0)
    return procBuffer.toString('latin1', 0, n)
  } finally {
    fs.closeSync(fd)
  }
}

/** Start time and run state of a process from /proc, or undefined if it is gone. */
const procStat = (pid: number | 'self'): { start: string; state: string } | undefined => {
  let text: string
  try {
    text = readProcFile(`/proc/${pid}/stat`)
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
    boot: shortBoot(readBootId()),
    host: hostHash(os.hostname() || 'localhost'),
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
