/**
 * Waiting for a pod (rkt's WaitFinished and WaitReady): poll, refreshing
 * the pod, until the condition holds or the signal aborts.
 */
import { PodctlError } from '../errors.js'
import { POLL_INTERVAL_MS, poll } from '../poll.js'
import type { Pod } from './pod.js'

export interface WaitOptions {
  signal?: AbortSignal
  /** Poll interval; never below POLL_INTERVAL_MS. */
  intervalMs?: number
}

const waitFor = async (pod: Pod, done: () => boolean, what: string, opts: WaitOptions): Promise<void> => {
  const ok = await poll(
    () => {
      pod.refresh()
      return done() || undefined
    },
    { intervalMs: Math.max(POLL_INTERVAL_MS, opts.intervalMs ?? POLL_INTERVAL_MS), ...(opts.signal ? { signal: opts.signal } : {}) },
  )
  if (!ok) throw new PodctlError('ETIMEOUT', `timed out waiting for pod ${pod.uuid} to be ${what} (it is ${pod.state})`)
}

/**
 * Resolves once the pod is finished (exited, aborted, garbage); throws
 * ETIMEOUT when the signal aborts first. The caller decides what the
 * terminal state means.
 */
export const waitFinished = (pod: Pod, opts: WaitOptions = {}): Promise<void> =>
  waitFor(pod, () => pod.isFinished(), 'finished', opts)

/**
 * Resolves once the pod's supervisor is ready; throws ETIMEOUT when the
 * signal aborts first, EBADSTATE when the pod finished without being ready.
 */
export const waitReady = (pod: Pod, opts: WaitOptions = {}): Promise<void> =>
  waitFor(
    pod,
    () => {
      if (pod.isSupervisorReady()) return true
      if (pod.isFinished()) {
        throw new PodctlError('EBADSTATE', `pod ${pod.uuid} is ${pod.state}; it will never be ready`)
      }
      return false
    },
    'ready',
    opts,
  )
