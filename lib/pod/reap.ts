/**
 * The second line of defence against orphaned apps (the first is the
 * guardian): any podctl command that looks at a pod whose supervisor is
 * gone kills app processes that its record still shows running, after
 * checking from /proc that each pid is still the process that was started
 * (so a reused pid is never killed).
 */
import { killMarked } from '../proc/escaped.js'
import { signalRecorded } from '../proc/signal.js'
import { dataDirTrusted } from './layout.js'
import type { Pod } from './pod.js'

/** The environment mark every process of a pod carries (the supervisor sets it for each app). */
export const podEnvMark = (uuid: string): string => `PODCTL_POD_UUID=${uuid}`

export interface ReapOptions {
  /**
   * Also look through /proc for processes that escaped the apps' groups
   * (lib/proc/escaped.ts). Costs a read of every process's environment, so
   * commands that end a pod (stop, rm, gc) ask for it and list does not.
   */
  escaped?: boolean
}

/** Kills surviving apps of a pod whose supervisor is gone; returns how many. */
export const reapOrphans = (pod: Pod, opts: ReapOptions = {}): number => {
  if (pod.locked) return 0 // a live supervisor looks after its own apps
  // A record someone else could have written may name any process.
  if (!dataDirTrusted(pod.dataDir)) return 0
  const running = pod.record().apps.filter((a) => a.state === 'running' && a.pid !== null)
  if (running.length === 0) return 0
  let killed = signalRecorded(running.map((a) => ({ pid: a.pid!, start: a.pid_start })), 'SIGKILL')
  // A supervisor that ended cleanly recorded every app as exited and
  // killed their escaped processes itself; only a dead one leaves work.
  if (opts.escaped) {
    // Descendants of the apps started after the first of them.
    const first = Math.min(...running.map((a) => (a.pid_start ? Number(a.pid_start) : Infinity)))
    killed += killMarked([podEnvMark(pod.uuid)], { startedSince: Number.isFinite(first) ? String(first) : null })
  }
  return killed
}
