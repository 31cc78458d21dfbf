/**
 * The second line of defence against orphaned apps (the first is the
 * guardian): any podctl command that looks at a pod whose supervisor is
 * gone kills app processes that its record still shows running, after
 * checking from /proc that each pid is still the process that was started
 * (so a reused pid is never killed).
 */
import { killEscaped } from './escaped.js'
import { sameProcess } from './owner.js'
import type { Pod } from './pod.js'

export interface ReapOptions {
  /**
   * Also look through /proc for processes that escaped the apps' groups
   * (lib/pod/escaped.ts). Costs a read of every process's environment, so
   * commands that end a pod (stop, rm, gc) ask for it and list does not.
   */
  escaped?: boolean
}

/** Kills surviving apps of a pod whose supervisor is gone; returns how many. */
export const reapOrphans = (pod: Pod, opts: ReapOptions = {}): number => {
  if (pod.locked) return 0 // a live supervisor looks after its own apps
  let killed = 0
  let unfinished = false
  for (const a of pod.record().apps) {
    if (a.state !== 'running' || a.pid === null) continue
    unfinished = true
    if (!sameProcess(a.pid, a.pid_start)) continue
    try {
      process.kill(-a.pid, 'SIGKILL')
      killed++
    } catch {
      try {
        process.kill(a.pid, 'SIGKILL')
        killed++
      } catch {
        // gone meanwhile
      }
    }
  }
  // A supervisor that ended cleanly recorded every app as exited and
  // killed their escaped processes itself; only a dead one leaves work.
  if (unfinished && opts.escaped) {
    // Descendants of the apps started after the first of them.
    const starts = pod.record().apps.map((a) => (a.state === 'running' && a.pid_start ? Number(a.pid_start) : Infinity))
    const first = Math.min(...starts)
    killed += killEscaped(pod.uuid, undefined, Number.isFinite(first) ? String(first) : null)
  }
  return killed
}
