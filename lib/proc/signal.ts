/**
 * Signalling processes that podctl recorded, never one that merely reuses
 * a recorded pid (lib/proc/identity.ts).
 */
import { sameProcess } from './identity.js'

/** Signals a process group, ignoring one that is gone. */
export const killGroup = (pgid: number | undefined, signal: NodeJS.Signals): void => {
  if (pgid === undefined || pgid <= 1) return
  try {
    process.kill(-pgid, signal)
  } catch {
    // ESRCH: the group is gone
  }
}

/** A process as podctl records it: its pid and its start time. */
export interface RecordedProcess {
  pid: number
  start: string | null | undefined
}

/**
 * Sends `signal` to each recorded process that still is that process: to
 * its group when it leads one (apps do), else to it alone. Returns how
 * many were signalled.
 */
export const signalRecorded = (procs: Iterable<RecordedProcess>, signal: NodeJS.Signals): number => {
  let sent = 0
  for (const p of procs) {
    if (!sameProcess(p.pid, p.start)) continue
    try {
      process.kill(-p.pid, signal)
      sent++
    } catch {
      try {
        process.kill(p.pid, signal)
        sent++
      } catch {
        // gone meanwhile
      }
    }
  }
  return sent
}
