/**
 * The second line of defence against orphaned apps (the first is the
 * guardian): any podctl command that looks at a pod whose supervisor is
 * gone kills app processes that its record still shows running, after
 * checking from /proc that each pid is still the process that was started
 * (so a reused pid is never killed).
 */
import { sameProcess } from './owner.js'
import type { Pod } from './pod.js'

/** Kills surviving apps of a pod whose supervisor is gone; returns how many. */
export const reapOrphans = (pod: Pod): number => {
  if (pod.locked) return 0 // a live supervisor looks after its own apps
  let killed = 0
  for (const a of pod.record().apps) {
    if (a.state !== 'running' || a.pid === null) continue
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
  return killed
}
