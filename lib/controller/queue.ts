/**
 * The controller's work queue (client-go's rate-limited queue, reduced to
 * what one process needs): a key is queued once however often it is
 * added, and a key added for later waits for its time.
 */
export class WorkQueue<K> {
  readonly #ready = new Set<K>()
  readonly #later = new Map<K, number>()

  /** Queues `key` now (a key already waiting for later comes now). */
  add(key: K): void {
    this.#later.delete(key)
    this.#ready.add(key)
  }

  /** Queues `key` in `ms` ms, unless it is queued sooner already. */
  addAfter(key: K, ms: number): void {
    if (this.#ready.has(key)) return
    const due = Date.now() + ms
    const current = this.#later.get(key)
    if (current === undefined || due < current) this.#later.set(key, due)
  }

  /** The next key to work on, oldest first, or undefined when none is due. */
  next(): K | undefined {
    const now = Date.now()
    for (const [key, due] of this.#later) {
      if (due <= now) {
        this.#later.delete(key)
        this.#ready.add(key)
      }
    }
    const first = this.#ready.values().next()
    if (first.done) return undefined
    this.#ready.delete(first.value)
    return first.value
  }

  /** Ms until the next key waiting for later is due; undefined when none waits. */
  nextDueIn(): number | undefined {
    if (this.#ready.size > 0) return 0
    let min: number | undefined
    for (const due of this.#later.values()) min = min === undefined ? due : Math.min(min, due)
    return min === undefined ? undefined : Math.max(0, min - Date.now())
  }

  get size(): number {
    return this.#ready.size + this.#later.size
  }
}
