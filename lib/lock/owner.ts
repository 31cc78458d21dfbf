/**
 * The lock's owner record: who holds a lock, precisely enough that a
 * reader on the same host can tell at once whether that holder still
 * lives. A pid alone is not enough (pids are reused), so the record also
 * has the process's start time and the boot id (lib/proc/identity.ts); a
 * hash of the host name tells a record written on another host, which only
 * the lock's mtime can judge.
 *
 * The record is the target of the lock symlink itself (lib/lock/lock.ts):
 * one syscall writes the lock and its owner together, and one reads both.
 * It is kept under 60 bytes so that ext4 stores it inside the inode (a
 * "fast" symlink: no data block to allocate, and none to discard):
 * `podctl2 <pid> <start> <boot> <host>`, where boot is the first 8 hex
 * digits of the boot id and host an 8-hex-digit hash of the host name.
 */
import os from 'node:os'
import { procStat, processAlive, readBootId } from '../proc/identity.js'

export interface Owner {
  pid: number
  /** Start time of the process, from /proc/<pid>/stat; '' where there is no /proc. */
  start: string
  boot: string
  host: string
}

export const formatOwner = (o: Owner): string => `podctl2 ${o.pid} ${o.start || '-'} ${o.boot} ${o.host}`

export const parseOwner = (s: string): Owner | undefined => {
  const m = /^podctl2 (\d+) (\d+|-) (\S+) (\S+)$/.exec(s)
  return m ? { pid: Number(m[1]), start: m[2] === '-' ? '' : m[2]!, boot: m[3]!, host: m[4]! } : undefined
}

/** Whether two records name the same process. */
export const sameOwner = (a: Owner, b: Owner): boolean => a.pid === b.pid && a.start === b.start && a.boot === b.boot && a.host === b.host

/** The boot id, shortened: 32 random bits tell two boots apart well enough. */
const shortBoot = (bootId: string): string => bootId.replace(/-/g, '').slice(0, 8) || '-'

/** FNV-1a, 32 bits, as 8 hex digits: short, stable, and no crypto import at start-up. */
export const hostHash = (host: string): string => {
  let h = 0x811c9dc5
  for (let i = 0; i < host.length; i++) {
    h ^= host.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h.toString(16).padStart(8, '0')
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
  if (o.host === me.host) return o.boot === me.boot && processAlive(o.pid, o.start)
  const mtime = lockMtimeMs()
  return mtime !== undefined && now - mtime < REMOTE_STALE_MS
}
