/**
 * Waiting for something another process does: the one retry loop of
 * podctl. Lock acquisition is synchronous throughout (a command holds no
 * event loop work while it waits for a lock), so there is a synchronous
 * form with a doubling delay; waiting on a pod's state is asynchronous and
 * polls at a fixed interval.
 */

/** Sleeps without yielding to the event loop. */
export const sleepSync = (ms: number): void => {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

export interface RetrySyncOptions {
  /** Give up after this long (ms). */
  timeoutMs: number
  /** First delay between tries (ms); doubles up to maxDelayMs. */
  firstDelayMs?: number
  maxDelayMs?: number
  /** Called once, after the first failed try, before the first sleep. */
  onWait?: () => void
}

/**
 * Calls `attempt` until it returns something other than undefined, sleeping
 * between tries; returns undefined once `timeoutMs` has passed. The first
 * try is made at once.
 */
export const retrySync = <T>(attempt: () => T | undefined, opts: RetrySyncOptions): T | undefined => {
  const deadline = Date.now() + opts.timeoutMs
  const max = opts.maxDelayMs ?? 50
  for (let wait = opts.firstDelayMs ?? 2, tries = 0; ; wait = Math.min(wait * 2, max), tries++) {
    const got = attempt()
    if (got !== undefined) return got
    const left = deadline - Date.now()
    if (left <= 0) return undefined
    if (tries === 0) opts.onWait?.()
    sleepSync(Math.min(wait, left))
  }
}

/**
 * Resolves after `ms`, or as soon as `signal` aborts. The global timers,
 * not node:timers/promises, which every command that takes a lock would
 * load at start-up for this.
 */
export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve()
    const done = (): void => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done)
  })

/** Pod state is looked at this often while waiting on it. */
export const POLL_INTERVAL_MS = 100

export interface PollOptions {
  /** Between looks (ms); default POLL_INTERVAL_MS. */
  intervalMs?: number
  /** Give up after this long (ms). */
  timeoutMs?: number
  /** Give up when it aborts. */
  signal?: AbortSignal
}

/**
 * Calls `check` until it returns something other than undefined and
 * resolves with that; resolves undefined once the time is up or the signal
 * has aborted (after one last look). Errors thrown by `check` end the wait.
 */
export const poll = async <T>(check: () => T | undefined, opts: PollOptions = {}): Promise<T | undefined> => {
  const interval = opts.intervalMs ?? POLL_INTERVAL_MS
  const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs
  for (;;) {
    const got = check()
    if (got !== undefined) return got
    const left = deadline - Date.now()
    if (left <= 0 || opts.signal?.aborted) return undefined
    // Aborted: one last look above, then undefined.
    await sleep(Math.min(interval, left), opts.signal)
  }
}
