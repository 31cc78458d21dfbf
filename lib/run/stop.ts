/**
 * Stopping a running pod: SIGTERM to the supervisor, which forwards it to
 * every app; SIGKILL to the apps after the timeout (or at once with
 * force), and to the supervisor only if it does not then exit by itself.
 * Returns once the pod has exited.
 */
import { PodctlError, isPodctlError, shortId } from '../errors.js'
import { lockOwner } from '../pod/locks.js'
import type { Pod } from '../pod/pod.js'
import { reapOrphans } from '../pod/reap.js'
import { poll } from '../poll.js'
import { sameProcess } from '../proc/identity.js'
import { signalRecorded } from '../proc/signal.js'

export interface StopOptions {
  force?: boolean
  /** How long apps get between SIGTERM and SIGKILL (ms). */
  timeoutMs: number
  /** How long to wait for the pod to read exited after SIGKILL (ms). */
  killGraceMs?: number
  /** Told each signal as it is sent, in words (for a terminal's status line). */
  onStep?: (what: string) => void
}

export type StopOutcome = 'stopped' | 'already exited'

const signalApps = (pod: Pod, signal: NodeJS.Signals): void => {
  const running = pod.record().apps.filter((a) => a.state === 'running' && a.pid !== null)
  signalRecorded(running.map((a) => ({ pid: a.pid!, start: a.pid_start })), signal)
}

/** Signals the supervisor alone: it leads no group of its apps, and forwards the signal to them. */
const signalSupervisor = (pod: Pod, signal: NodeJS.Signals): void => {
  const owner = lockOwner(pod.dataDir, pod.uuid)
  if (!owner || !sameProcess(owner.pid, owner.start)) return
  try {
    process.kill(owner.pid, signal)
  } catch {
    // gone
  }
}

/**
 * Waits until the pod is no longer running, or `ms` pass: 'exited', 'gone'
 * (it exited and its supervisor removed it: `run --rm`), or undefined.
 */
const waitNotRunning = (pod: Pod, ms: number): Promise<'exited' | 'gone' | undefined> =>
  poll(
    () => {
      try {
        pod.refresh()
      } catch (er) {
        if (isPodctlError(er) && er.code === 'ENOPOD') return 'gone'
        throw er
      }
      return pod.state !== 'running' ? 'exited' : undefined
    },
    { timeoutMs: ms },
  )

/** A pod that stopped: its escaped processes killed, unless its supervisor removed it (it killed them itself). */
const stopped = (pod: Pod, how: 'exited' | 'gone'): StopOutcome => {
  if (how === 'exited') reapOrphans(pod, { escaped: true })
  return 'stopped'
}

/** Stops one pod; throws EBADSTATE for a pod that never ran, ETIMEOUT if it will not die. */
export const stopPod = async (pod: Pod, opts: StopOptions): Promise<StopOutcome> => {
  const short = shortId(pod.uuid)
  const s = pod.state
  if (s === 'embryo' || s === 'preparing' || s === 'aborted prepare' || s === 'prepared' || s === 'garbage' || s === 'deleting') {
    throw new PodctlError('EBADSTATE', `pod ${short} is ${s}; it never ran`, s === 'prepared' ? `run it: podctl run-prepared ${short}, or remove it: podctl rm ${short}` : undefined)
  }
  if (s !== 'running') {
    reapOrphans(pod, { escaped: true })
    return 'already exited'
  }
  if (!opts.force) {
    signalSupervisor(pod, 'SIGTERM')
    opts.onStep?.(`stopping pod ${short}: SIGTERM sent, SIGKILL after ${Math.round(opts.timeoutMs / 1000)}s`)
    const how = await waitNotRunning(pod, opts.timeoutMs)
    if (how !== undefined) return stopped(pod, how)
  }
  // SIGKILL the apps, not yet the supervisor: it sees them die, records
  // 137 for each and exits by itself. Only a supervisor that does not (it
  // is stuck) is SIGKILLed too; the apps' guardians then kill what is left.
  const now = await waitNotRunning(pod, 0)
  if (now !== undefined) return stopped(pod, now)
  signalApps(pod, 'SIGKILL')
  opts.onStep?.(`stopping pod ${short}: SIGKILL sent to its apps`)
  const grace = opts.killGraceMs ?? 5_000
  const killed = await waitNotRunning(pod, grace)
  if (killed !== undefined) return stopped(pod, killed)
  signalSupervisor(pod, 'SIGKILL')
  opts.onStep?.(`stopping pod ${short}: its supervisor did not exit; SIGKILL sent to it`)
  const gone = await waitNotRunning(pod, grace)
  if (gone === undefined) throw new PodctlError('ETIMEOUT', `pod ${short} is still running after SIGKILL`, `look at its supervisor: podctl status ${short}`)
  return stopped(pod, gone)
}
