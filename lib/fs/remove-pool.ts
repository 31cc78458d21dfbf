/**
 * Removes trees in worker threads, so that a gc over many pods deletes
 * one pod while it locks and moves the next (and, with more workers,
 * deletes several at once): the kernel's work of a removal is most of a
 * pod's cost, and it runs in parallel (Documentation/performance.md).
 * Each removal is the same safe removeTree (./remove-tree.ts).
 */
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { PodctlError, type ErrorCode } from '../errors.js'
import type { RemoveAnswer } from './remove-worker.js'

const WORKER_MAIN = fileURLToPath(new URL('./remove-worker.js', import.meta.url))

/** Removals sent to one worker before the next waits: enough to keep it busy between answers. */
const QUEUE_PER_WORKER = 16

interface Pending {
  resolve: () => void
  reject: (er: Error) => void
  worker: Worker
}

export class RemovePool {
  readonly #workers: Worker[] = []
  readonly #load = new Map<Worker, number>()
  readonly #pending = new Map<number, Pending>()
  #nextId = 0
  #slotFreed: (() => void) | undefined
  #dead: Set<Worker> | undefined
  #deadError: Error | undefined

  constructor(workers: number) {
    for (let i = 0; i < workers; i++) {
      const w = new Worker(WORKER_MAIN)
      w.on('message', (a: RemoveAnswer) => this.#answered(a))
      w.on('error', (er) => this.#failAll(w, er))
      w.on('exit', (code) => this.#failAll(w, new Error(`a removal worker exited with code ${code}`)))
      // Idle workers do not keep the process alive; pending removals do (see remove()).
      w.unref()
      this.#workers.push(w)
      this.#load.set(w, 0)
    }
  }

  /** Waits until some worker has room for another removal. */
  async ready(): Promise<void> {
    while (this.#leastLoaded() === undefined) {
      if (this.#dead !== undefined && this.#dead.size === this.#workers.length) throw this.#deadError!
      await new Promise<void>((r) => (this.#slotFreed = r))
    }
  }

  /** Removes the tree at `path` in a worker; resolves when it is gone. Call ready() first. */
  remove(path: string): Promise<void> {
    const w = this.#leastLoaded() ?? this.#workers[0]!
    const id = this.#nextId++
    this.#load.set(w, this.#load.get(w)! + 1)
    if (this.#pending.size === 0) for (const x of this.#workers) x.ref()
    return new Promise<void>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, worker: w })
      w.postMessage({ id, path })
    })
  }

  /** Ends the workers; removals still pending fail. */
  async close(): Promise<void> {
    await Promise.all(this.#workers.map((w) => w.terminate()))
  }

  #leastLoaded(): Worker | undefined {
    let best: Worker | undefined
    for (const w of this.#workers) {
      const n = this.#load.get(w)!
      if (n < QUEUE_PER_WORKER && (best === undefined || n < this.#load.get(best)!)) best = w
    }
    return best
  }

  #settled(id: number): Pending | undefined {
    const p = this.#pending.get(id)
    if (p === undefined) return undefined
    this.#pending.delete(id)
    this.#load.set(p.worker, this.#load.get(p.worker)! - 1)
    if (this.#pending.size === 0) for (const w of this.#workers) w.unref()
    const wake = this.#slotFreed
    this.#slotFreed = undefined
    wake?.()
    return p
  }

  #answered(a: RemoveAnswer): void {
    const p = this.#settled(a.id)
    if (p === undefined) return
    if (a.error === undefined) return p.resolve()
    const e = a.error
    if (e.podctl !== undefined) p.reject(new PodctlError(e.podctl.code as ErrorCode, e.message, e.podctl.hint))
    else p.reject(Object.assign(new Error(e.message), e.errno === undefined ? {} : { code: e.errno }))
  }

  #failAll(w: Worker, er: Error): void {
    this.#load.set(w, Number.POSITIVE_INFINITY) // never chosen again
    ;(this.#dead ??= new Set()).add(w)
    this.#deadError ??= er
    for (const [id, p] of [...this.#pending]) if (p.worker === w) this.#settled(id)?.reject(er)
    const wake = this.#slotFreed
    this.#slotFreed = undefined
    wake?.()
  }
}
