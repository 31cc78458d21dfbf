// Timing of child processes: wall time of one spawnSync, measured with
// process.hrtime.bigint() around the call, and medians of repetitions.
import { spawnSync } from 'node:child_process'

/** The environment every timed child gets: ours, without NODE_OPTIONS (npm may inject some). */
export const childEnv = (() => {
  const env = { ...process.env }
  delete env.NODE_OPTIONS
  return env
})()

/**
 * Runs `cmd args` once and returns { ms, status, signal, stdout, stderr }.
 * `stdio` defaults to pipes for stdout and stderr; pass an fd as
 * `stdin` or 'ignore' for stdout to send it to /dev/null.
 */
export const timeSpawn = (cmd, args, { stdin = 'ignore', stdout = 'pipe', stderr = 'pipe', maxBuffer = 256 * 1024 * 1024 } = {}) => {
  const t0 = process.hrtime.bigint()
  const r = spawnSync(cmd, args, { stdio: [stdin, stdout, stderr], env: childEnv, maxBuffer, encoding: 'utf8' })
  const t1 = process.hrtime.bigint()
  if (r.error) throw r.error
  return {
    ms: Number(t1 - t0) / 1e6,
    status: r.status,
    signal: r.signal,
    stdout: r.stdout ?? '',
    stderr: r.stderr ?? '',
  }
}

/** `sync(1)`: flush dirty data so that every timed run starts from the same state. */
export const syncFs = () => {
  const r = spawnSync('sync', [], { stdio: 'ignore' })
  if (r.error) throw r.error
}

export const median = (xs) => {
  if (xs.length === 0) return NaN
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}

/** Collects samples under names: add('list', 10000, ms). */
export class Samples {
  #m = new Map()
  add(op, n, ms) {
    const k = `${op}\u0000${n}`
    if (!this.#m.has(k)) this.#m.set(k, { op, n, samples: [] })
    this.#m.get(k).samples.push(ms)
  }
  get(op, n) {
    return this.#m.get(`${op}\u0000${n}`)?.samples ?? []
  }
  median(op, n) {
    return median(this.get(op, n))
  }
  toJSON() {
    return [...this.#m.values()].map(({ op, n, samples }) => ({
      op,
      n,
      reps: samples.length,
      median_ms: round(median(samples)),
      min_ms: round(Math.min(...samples)),
      max_ms: round(Math.max(...samples)),
      samples_ms: samples.map((x) => round(x)),
    }))
  }
}

export const round = (x, d = 1) => (Number.isFinite(x) ? Math.round(x * 10 ** d) / 10 ** d : x)
