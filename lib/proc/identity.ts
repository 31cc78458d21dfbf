/**
 * Which process is which: a pid alone names a process only until it is
 * reused, so podctl pairs every pid it keeps with the process's start time
 * (field 22 of /proc/<pid>/stat, in clock ticks since boot). A recorded
 * (pid, start) pair still names the same process if /proc shows that pid
 * with that start time and not as a zombie.
 */
import fs from 'node:fs'
import os from 'node:os'

// /proc/<pid>/stat is under 1 KiB: one open, one read into a reused buffer
// and one close (readFileSync adds an fstat and a second read). Lock checks
// and the escaped-process scans read it for many processes.
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

/** Start time and run state (R, S, Z, ...) of a process, or undefined if it is gone. */
export const procStat = (pid: number | 'self'): { start: string; state: string } | undefined => {
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

/** A process's start time, or undefined if it is gone. */
export const procStart = (pid: number): string | undefined => procStat(pid)?.start

const dead = (state: string): boolean => state === 'Z' || state === 'X' || state === 'x'

/**
 * Whether `pid` is still the process that had start time `start`, and not
 * a zombie (a zombie holds nothing any more). Guards every kill of a
 * recorded pid against pid reuse.
 */
export const sameProcess = (pid: number, start: string | null | undefined): boolean => {
  if (!start) return false
  const st = procStat(pid)
  return st !== undefined && st.start === start && !dead(st.state)
}

const hasProc = (): boolean => fs.existsSync('/proc/self/stat')

/**
 * Whether the process (`pid`, `start`) of this boot still runs. Without a
 * start time or without /proc, only whether some process has that pid.
 */
export const processAlive = (pid: number, start: string): boolean => {
  if (start === '' || !hasProc()) {
    try {
      process.kill(pid, 0)
      return true
    } catch (er) {
      return (er as NodeJS.ErrnoException).code === 'EPERM'
    }
  }
  return sameProcess(pid, start)
}

let bootId: string | undefined
/** This boot's id (/proc/sys/kernel/random/boot_id), or the boot time to the minute where there is none. */
export const readBootId = (): string => {
  if (bootId !== undefined) return bootId
  try {
    bootId = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim()
  } catch {
    bootId = `t${Math.round((Date.now() / 1000 - os.uptime()) / 60)}`
  }
  return bootId
}
