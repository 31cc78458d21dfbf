/**
 * Waiting for a pod (rkt's WaitFinished and WaitReady): poll every 100 ms,
 * refreshing the pod, until the condition holds or the signal aborts.
 */
import { setTimeout as delay } from 'node:timers/promises'
import { PodctlError } from '../errors.js'
import type { Pod } from './pod.js'

export const POLL_INTERVAL_MS = 100

export interface WaitOptions {
  signal?: AbortSignal
  /** Poll interval; never below 100 ms. */
  intervalMs?: number
}

const waitFor = async (pod: Pod, done: () => boolean, what: string, opts: WaitOptions): Promise<void> => {
  const interval = Math.max(POLL_INTERVAL_MS, opts.intervalMs ?? POLL_INTERVAL_MS)
  for (;;) {
    pod.refresh()
    if (done()) return
    if (opts.signal?.aborted) {
      throw new PodctlError('ETIMEOUT', `timed out waiting for pod ${pod.uuid} to be ${what} (it is ${pod.state})`)
    }
    try {
      await delay(interval, undefined, { signal: opts.signal })
    } catch {
      // aborted: look once more, then report
    }
  }
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
