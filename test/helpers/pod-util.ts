/**
 * Real child processes that run the built library beside a test: lock
 * holders (also of "running" pods), race contenders and movers. Not a test
 * file (test/helpers/ is excluded from discovery).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import readline from 'node:readline'
import { fileURLToPath } from 'node:url'
import type { Teardown } from './common.js'
import { nodeCommand } from './launcher.js'

export const HOLD_LOCK = fileURLToPath(new URL('./hold-lock.mjs', import.meta.url))
export const TRANSITION = fileURLToPath(new URL('./transition.mjs', import.meta.url))
export const CONTENDER = fileURLToPath(new URL('./contender.mjs', import.meta.url))
export const MOVER = fileURLToPath(new URL('./mover.mjs', import.meta.url))
export const GC_ONCE = fileURLToPath(new URL('./gc-once.mjs', import.meta.url))

export interface Exit {
  code: number | null
  signal: NodeJS.Signals | null
}

/** A child process whose stdout is read line by line. */
export interface Child {
  proc: ChildProcess
  pid: number
  /** The next stdout line; rejects if the child exits first. */
  nextLine(): Promise<string>
  /** Resolves once the child has exited and been reaped (its 'exit' event). */
  exited: Promise<Exit>
  /** Everything the child wrote to stderr so far. */
  stderr(): string
  /** Writes a line to the child's stdin. */
  send(line: string): void
  /** SIGKILLs the child (if still alive) and waits for its exit. */
  kill(): Promise<Exit>
}

const alive = (p: ChildProcess): boolean => p.exitCode === null && p.signalCode === null

/**
 * Spawns `node script args...` (test/helpers/launcher.ts says how),
 * tracks its stdout lines, and registers a teardown that SIGKILLs it
 * (after a SIGCONT, should it be stopped) so that no process outlives
 * the test.
 */
export const spawnNode = (t: Teardown, script: string, args: string[], opts: { stdin?: 'pipe' | 'ignore' } = {}): Child => {
  const [cmd, argv] = nodeCommand([script, ...args])
  const proc = spawn(cmd, argv, { stdio: [opts.stdin ?? 'pipe', 'pipe', 'pipe'] })
  if (proc.pid === undefined) throw new Error(`could not spawn ${script}`)
  let err = ''
  proc.stderr!.setEncoding('utf8').on('data', (s: string) => (err += s))
  proc.stdin?.on('error', () => {}) // EPIPE when the child is gone
  const lines: string[] = []
  const waiters: Array<{ resolve: (l: string) => void; reject: (e: Error) => void }> = []
  let closed = false
  const rl = readline.createInterface({ input: proc.stdout! })
  rl.on('line', (l) => {
    const w = waiters.shift()
    if (w) w.resolve(l)
    else lines.push(l)
  })
  const exited = new Promise<Exit>((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })))
  // The 'close' of stdout comes after every line: only then is a waiter
  // sure that no line will ever come.
  rl.on('close', () => {
    closed = true
    for (const w of waiters.splice(0)) {
      w.reject(new Error(`${path.basename(script)} ${args.join(' ')} ended its output (stderr: ${err.trim()})`))
    }
  })
  const child: Child = {
    proc,
    pid: proc.pid,
    nextLine: () =>
      new Promise<string>((resolve, reject) => {
        const l = lines.shift()
        if (l !== undefined) resolve(l)
        else if (closed) reject(new Error(`${path.basename(script)} ended its output (stderr: ${err.trim()})`))
        else waiters.push({ resolve, reject })
      }),
    exited,
    stderr: () => err,
    send: (line: string) => {
      if (alive(proc)) proc.stdin?.write(`${line}\n`)
    },
    kill: async () => {
      if (alive(proc)) {
        proc.kill('SIGCONT')
        proc.kill('SIGKILL')
      }
      return exited
    },
  }
  t.teardown(async () => {
    await child.kill()
  })
  return child
}

/** A real process holding the pod locks of `uuids` (test/helpers/hold-lock.mjs). */
export interface Holder extends Child {
  /** Asks the holder to release its locks; resolves once it has exited. */
  release(): Promise<Exit>
}

/** Starts a holder of the locks of `uuids` and waits until it holds them all. */
export const holdLocks = async (t: Teardown, dataDir: string, uuids: string[], opts: { toRun?: boolean } = {}): Promise<Holder> => {
  const child = spawnNode(t, HOLD_LOCK, [dataDir, ...uuids, ...(opts.toRun ? ['--to-run'] : [])])
  const first = await child.nextLine()
  if (!first.startsWith('locked ')) throw new Error(`lock holder said ${JSON.stringify(first)}: ${child.stderr()}`)
  return {
    ...child,
    release: async () => {
      child.send('release')
      const l = await child.nextLine()
      if (l !== 'released') throw new Error(`lock holder said ${JSON.stringify(l)}`)
      return child.exited
    },
  }
}

/** Makes prepared pods "running": a holder moves them to run/ and holds their locks until release(). */
export const holdRunning = (t: Teardown, dataDir: string, ...uuids: string[]): Promise<Holder> => holdLocks(t, dataDir, uuids, { toRun: true })

/**
 * Asks another process whether it can take the lock of `uuid` right now:
 * "busy" if a live process holds it; "free" if it could (the probe then
 * releases it again).
 */
export const probeLock = async (t: Teardown, dataDir: string, uuid: string): Promise<'busy' | 'free'> => {
  const child = spawnNode(t, HOLD_LOCK, [dataDir, uuid])
  const first = await child.nextLine()
  if (first.startsWith('busy ')) {
    await child.exited
    return 'busy'
  }
  if (!first.startsWith('locked ')) throw new Error(`probe said ${JSON.stringify(first)}: ${child.stderr()}`)
  child.send('release')
  await child.exited
  return 'free'
}

/** The outcome line of a race contender (test/helpers/transition.mjs). */
export interface Outcome {
  pid: number
  ok: boolean
  code?: string
  name?: string
  message?: string
  hint?: string | null
  crash?: boolean
  stack?: string
  state?: string
  dir?: string
  removed?: boolean
}

/**
 * Races `n` processes doing `op` on `uuid`: every contender loads the pod,
 * and only when all of them have said "ready" are they all told "go" at
 * once. Resolves with every outcome and the contenders (still alive when
 * `after` is 'hold': the caller ends them with `send('exit')`).
 */
export const race = async (
  t: Teardown,
  dataDir: string,
  uuid: string,
  op: string,
  n: number,
  after: 'hold' | 'exit' = 'exit',
): Promise<{ outcomes: Outcome[]; children: Child[] }> => {
  const children = Array.from({ length: n }, () => spawnNode(t, TRANSITION, [dataDir, uuid, op, after]))
  const ready = await Promise.all(children.map(async (c) => JSON.parse(await c.nextLine()) as { ready?: boolean; message?: string }))
  for (const r of ready) if (!r.ready) throw new Error(`a contender could not load the pod: ${r.message}`)
  for (const c of children) c.send('go')
  const outcomes = await Promise.all(children.map(async (c) => JSON.parse(await c.nextLine()) as Outcome))
  return { outcomes, children }
}

/**
 * A pool of reusable contender processes (test/helpers/contender.mjs):
 * the same `n` processes race round after round, each round on a freshly
 * loaded pod, which keeps many-round races cheap.
 */
export interface Pool {
  children: Child[]
  /**
   * One round: every contender loads the pod; once all are ready, all are
   * told "go" at once. 'hold': each keeps what it took until release();
   * 'release': each releases its locks right after its attempt.
   */
  race(dataDir: string, uuid: string, op: string, after: 'hold' | 'release'): Promise<Outcome[]>
  /** Makes every contender release what it holds. */
  release(): Promise<void>
  /** Ends the contenders; resolves with their exits. */
  end(): Promise<Exit[]>
}

export const pool = (t: Teardown, n: number): Pool => {
  const children = Array.from({ length: n }, () => spawnNode(t, CONTENDER, []))
  const ask = (c: Child, o: object): void => c.send(JSON.stringify(o))
  return {
    children,
    race: async (dir, uuid, op, after) => {
      for (const c of children) ask(c, { cmd: 'load', dir, uuid, op, after })
      const ready = await Promise.all(children.map(async (c) => JSON.parse(await c.nextLine()) as { ready?: boolean; message?: string }))
      for (const r of ready) if (!r.ready) throw new Error(`a contender could not load the pod: ${r.message}`)
      for (const c of children) ask(c, { cmd: 'go' })
      return Promise.all(children.map(async (c) => JSON.parse(await c.nextLine()) as Outcome))
    },
    release: async () => {
      for (const c of children) ask(c, { cmd: 'release' })
      await Promise.all(children.map((c) => c.nextLine()))
    },
    end: () => {
      for (const c of children) c.proc.stdin?.end()
      return Promise.all(children.map((c) => c.exited))
    },
  }
}

/** Ends the contenders of a race (held or not) and returns their exits. */
export const endAll = async (children: Child[]): Promise<Exit[]> => {
  for (const c of children) c.send('exit')
  return Promise.all(children.map((c) => c.exited))
}
