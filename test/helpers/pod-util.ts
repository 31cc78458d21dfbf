/**
 * Shared helpers of the lifecycle-core tests in test/pod/: real child
 * processes (lock holders, race contenders) that run the built library,
 * and pods made directly on disk in any state dir. Not a test file
 * (test/helpers/ is excluded from discovery).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import readline from 'node:readline'
import { fileURLToPath } from 'node:url'
import { POD_DIRS, ensureDataDir, type PodDir } from '../../lib/pod/layout.js'

export const HOLD_LOCK = fileURLToPath(new URL('./hold-lock.mjs', import.meta.url))
export const TRANSITION = fileURLToPath(new URL('./transition.mjs', import.meta.url))
export const CONTENDER = fileURLToPath(new URL('./contender.mjs', import.meta.url))
export const MOVER = fileURLToPath(new URL('./mover.mjs', import.meta.url))
export const GC_ONCE = fileURLToPath(new URL('./gc-once.mjs', import.meta.url))

/** The minimal test object the helpers need (tap's Test). */
export interface Teardown {
  teardown(fn: () => void | Promise<void>): void
}

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

/**
 * The environment of child processes. Under tap, NODE_OPTIONS loads its
 * coverage hook into every child, which triples a child's start-up; the
 * races start dozens of children, so PODCTL_TEST_CHILD_COVERAGE=1 is
 * needed to measure the children's coverage too.
 */
export const childEnv = (): NodeJS.ProcessEnv => {
  if (process.env.PODCTL_TEST_CHILD_COVERAGE === '1') return process.env
  const env = { ...process.env }
  delete env.NODE_OPTIONS
  for (const k of Object.keys(env)) if (k.startsWith('_TAPJS_PROCESSINFO')) delete env[k]
  return env
}

const alive = (p: ChildProcess): boolean => p.exitCode === null && p.signalCode === null

/**
 * Spawns `node script args...`, tracks its stdout lines, and registers a
 * teardown that SIGKILLs it (after a SIGCONT, should it be stopped) so
 * that no process outlives the test.
 */
export const spawnNode = (t: Teardown, script: string, args: string[], opts: { stdin?: 'pipe' | 'ignore' } = {}): Child => {
  const proc = spawn(process.execPath, [script, ...args], { stdio: [opts.stdin ?? 'pipe', 'pipe', 'pipe'], env: childEnv() })
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
export const holdLocks = async (t: Teardown, dataDir: string, uuids: string[]): Promise<Holder> => {
  const child = spawnNode(t, HOLD_LOCK, [dataDir, ...uuids])
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

const testdirs = new WeakMap<object, { base: string; n: number }>()
/**
 * A fresh data dir (layout created) inside a test's own testdir. A test
 * may ask for several: t.testdir() is called once per test (a second
 * call would wipe the first), and each data dir is a new subdir of it.
 */
export const dataDir = (t: { testdir(): string }): string => {
  let td = testdirs.get(t)
  if (!td) testdirs.set(t, (td = { base: t.testdir(), n: 0 }))
  const dir = path.join(td.base, `data${td.n++ || ''}`)
  ensureDataDir(dir)
  return dir
}

/**
 * Makes a pod directory directly in a state dir (no record, no manifest
 * unless `files` says so) and returns its UUID.
 */
export const mkPod = (dataDir: string, dir: PodDir, files: Record<string, string> = {}, uuid: string = randomUUID()): string => {
  const p = path.join(dataDir, 'pods', dir, uuid)
  fs.mkdirSync(p, { recursive: true })
  for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(p, name), content)
  return uuid
}

/** Every state dir that holds `uuid` (normally exactly one, or none). */
export const whereIs = (dataDir: string, uuid: string): PodDir[] =>
  POD_DIRS.filter((d) => fs.existsSync(path.join(dataDir, 'pods', d, uuid)))

/** The path of a pod's lock directory. */
export const lockDirOf = (dataDir: string, uuid: string): string => path.join(dataDir, 'locks', uuid)

/** The state field of /proc/<pid>/stat ('R', 'S', 'T', 'Z'...), or undefined if gone. */
export const procState = (pid: number): string | undefined => {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'latin1')
    return s.slice(s.lastIndexOf(')') + 2).split(' ')[0]
  } catch {
    return undefined
  }
}

/** Polls (every few ms, no fixed sleep) until `cond` holds. */
export const until = async (cond: () => boolean): Promise<void> => {
  while (!cond()) await new Promise((r) => setTimeout(r, 5))
}

/** A valid one-app manifest. */
export const manifest = (over: Record<string, unknown> = {}) => ({
  apiVersion: 'podctl/v1' as const,
  apps: [{ name: 'main', exec: ['/bin/sh', '-c', 'exit 0'] }],
  ...over,
})

/** Whether a lock exists (a lock is a symlink whose target is not a file: never follow it). */
export const lockExists = (p: string): boolean => fs.lstatSync(p, { throwIfNoEntry: false }) !== undefined
