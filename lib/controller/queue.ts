/**
 * The controller's work queue (client-go's, reduced): a key is queued once
 * however often it is added, waits for its time when added for later, and
 * goes to one worker at a time (added meanwhile, it comes back after).
 */
export class WorkQueue<K> {
  readonly #ready = new Set<K>()
  readonly #later = new Map<K, number>()
  readonly #working = new Set<K>()
  /** Added while being worked on: queued again by done(). */
  readonly #dirty = new Set<K>()
  readonly #waiters = new Set<() => void>()

  /** Queues `key` now (a key already waiting for later comes now). */
  add(key: K): void {
    this.#later.delete(key)
    if (this.#working.has(key)) {
      this.#dirty.add(key)
      return
    }
    this.#ready.add(key)
    this.#notify()
  }

  /** Queues `key` in `ms` ms, unless it is queued sooner already. */
  addAfter(key: K, ms: number): void {
    if (this.#ready.has(key) || this.#dirty.has(key)) return
    const due = Date.now() + ms
    const current = this.#later.get(key)
    if (current === undefined || due < current) this.#later.set(key, due)
    this.#notify()
  }

  /** The next key to work on, oldest first, or undefined when none is due; call done(key) after. */
  next(): K | undefined {
    const now = Date.now()
    for (const [key, due] of this.#later) {
      if (due <= now && !this.#working.has(key)) {
        this.#later.delete(key)
        this.#ready.add(key)
      }
    }
    const first = this.#ready.values().next()
    if (first.done) return undefined
    this.#ready.delete(first.value)
    this.#working.add(first.value)
    return first.value
  }

  /** A worker is done with `key`: added meanwhile, it is queued again. */
  done(key: K): void {
    this.#working.delete(key)
    if (this.#dirty.delete(key)) this.add(key)
    else this.#notify() // a worker waiting for the others to finish (--once) looks again
  }

  /** Ms until the next key is due: 0 when one is ready, Infinity when none waits. */
  nextDueIn(): number {
    if (this.#ready.size > 0) return 0
    let min = Infinity
    for (const due of this.#later.values()) min = Math.min(min, due)
    return Math.max(0, min - Date.now())
  }

  /** Resolves when a key is added, after `ms`, or when `signal` aborts: how idle workers wait. */
  wait(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve()
      const done = (): void => {
        clearTimeout(timer)
        signal.removeEventListener('abort', done)
        this.#waiters.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      signal.addEventListener('abort', done)
      this.#waiters.add(done)
    })
  }

  /** Wakes every waiting worker; those that find nothing wait again. */
  #notify(): void {
    for (const wake of [...this.#waiters]) wake()
  }

  /** Keys being worked on now. */
  get working(): number {
    return this.#working.size
  }
}
