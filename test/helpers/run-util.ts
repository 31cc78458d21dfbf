/**
 * Helpers of the run tests (test/run/, test/bin/{run,run-prepared,stop,
 * logs,app}.ts): run the real bin/podctl, wait for output lines and for
 * conditions (by counting polls, never by the clock), look at processes in
 * /proc, and make sure every process a test started is dead at its end.
 * Not a test file (test/helpers/ is excluded from discovery).
 */
import { parseRecordText } from '../../lib/pod/record.js'
import { GUARDIAN_NAME } from '../../lib/run/guardian.js'
import { spawnSync, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import type t from 'tap'
import { finished, spawnTracked, type Result } from './cli-util.js'

/** tap's subtest object (the `t` of a `t.test` callback). */
export type Test = Parameters<Parameters<typeof t.test>[0]>[0]

export interface Teardown {
  teardown(fn: () => void | Promise<void>): void
}

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))
export const BIN = path.join(ROOT, 'bin', 'podctl')

/** RFC 4122 v4, lower case (CONTRACT §1). */
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
/** RFC 3339 UTC with milliseconds (CONTRACT §5). */
export const TIME_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

export type { Result }

/**
 * podctl is `process.execPath bin/podctl ...`, started through
 * `env -u NODE_OPTIONS`: tap's processinfo puts its `--import` into
 * NODE_OPTIONS of every child it sees spawned (deleting it from `env` is
 * not enough), and under that hook Node 20 cannot load the extensionless
 * ESM bin/podctl (ERR_REQUIRE_CYCLE_MODULE).
 */
const launch = (dir: string, args: string[]): [string, string[]] => [
  '/usr/bin/env',
  ['-u', 'NODE_OPTIONS', process.execPath, BIN, '--dir', dir, ...args],
]

/** A running podctl: its process, its output so far, and its end. */
export interface Running {
  child: ChildProcess
  done: Promise<Result>
  /** Resolves with the first stdout line matching `re` (lines already seen count). */
  line(re: RegExp): Promise<string>
}

/** Starts `podctl --dir dir args...` (killed at teardown if still alive). */
export const startPodctl = (t: Teardown, dir: string, args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv } = {}): Running => {
  const [cmd, argv] = launch(dir, args)
  const child = spawnTracked(t, cmd, argv, opts.env ? { env: opts.env } : {})
  const done = finished(child)
  child.stdin?.end(opts.input ?? '')
  const lines: string[] = []
  const waiters: { re: RegExp; resolve: (l: string) => void }[] = []
  let partial = ''
  child.stdout?.on('data', (s: string | Buffer) => {
    const text = partial + String(s)
    const parts = text.split('\n')
    partial = parts.pop()!
    for (const l of parts) {
      lines.push(l)
      for (const w of [...waiters]) {
        if (w.re.test(l)) {
          waiters.splice(waiters.indexOf(w), 1)
          w.resolve(l)
        }
      }
    }
  })
  const line = (re: RegExp): Promise<string> => {
    const seen = lines.find((l) => re.test(l))
    if (seen !== undefined) return Promise.resolve(seen)
    return new Promise((resolve, reject) => {
      waiters.push({ re, resolve })
      void done.then((r) => reject(new Error(`podctl ${args.join(' ')} ended (${r.status ?? r.signal}) before a line matching ${re}; stdout=${JSON.stringify(r.stdout)} stderr=${JSON.stringify(r.stderr)}`)))
    })
  }
  return { child, done, line }
}

/** Runs `podctl --dir dir args...` to its end. */
export const podctl = (t: Teardown, dir: string, args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Result> =>
  startPodctl(t, dir, args, opts).done

/** Runs podctl and parses its stdout as JSON (asserting exit 0 first). */
export const podctlJson = async <T = any>(t: Test, dir: string, args: string[]): Promise<T> => {
  const r = await podctl(t, dir, args)
  t.equal(r.status, 0, `podctl ${args.join(' ')} exits 0`, { stderr: r.stderr })
  return JSON.parse(r.stdout) as T
}

/**
 * Polls `cond` until it returns a value other than undefined/false.
 * Counts polls (at most `polls`, 25 ms apart by default) rather than
 * measuring time; throws, naming `what`, when they run out.
 */
export const pollUntil = async <T>(what: string, cond: () => T | undefined | false | Promise<T | undefined | false>, opts: { polls?: number; intervalMs?: number } = {}): Promise<T> => {
  const polls = opts.polls ?? 2_000
  for (let i = 0; i < polls; i++) {
    const v = await cond()
    if (v !== undefined && v !== false) return v
    await delay(opts.intervalMs ?? 25)
  }
  throw new Error(`gave up waiting for ${what} after ${polls} polls`)
}

// ---- /proc ------------------------------------------------------------

interface ProcStat {
  state: string
  ppid: number
  pgrp: number
  session: number
  ttyNr: number
  start: string
}

/** Fields of /proc/<pid>/stat, or undefined when the process is gone. */
export const procStat = (pid: number): ProcStat | undefined => {
  let text: string
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'latin1')
  } catch {
    return undefined
  }
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ')
  // f[0] is field 3 (state); field N is f[N - 3].
  return { state: f[0]!, ppid: Number(f[1]), pgrp: Number(f[2]), session: Number(f[3]), ttyNr: Number(f[4]), start: f[19]! }
}

/** Whether `pid` is a live process (a zombie is dead: it only waits to be reaped). */
export const alive = (pid: number | null | undefined): boolean => {
  if (pid === null || pid === undefined) return false
  const st = procStat(pid)
  return st !== undefined && st.state !== 'Z' && st.state !== 'X'
}

/** Every pid in /proc. */
export const allPids = (): number[] =>
  fs
    .readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map(Number)

/** The live members of process group `pgid`. */
export const groupMembers = (pgid: number): number[] => allPids().filter((p) => procStat(p)?.pgrp === pgid && alive(p))

/** Whether `pid` is an app's guardian (lib/run/guardian.ts): `sh -c SCRIPT podctl-guardian …`. */
export const isGuardian = (pid: number): boolean => {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0')[3] === GUARDIAN_NAME
  } catch {
    return false
  }
}

/** The live members of app group `pgid` but its guardian: the app and its children. */
export const appMembers = (pgid: number): number[] => groupMembers(pgid).filter((p) => p === pgid || !isGuardian(p))

/** The live guardian in app group `pgid`, if any. */
export const guardianOf = (pgid: number): number | undefined => groupMembers(pgid).find((p) => p !== pgid && isGuardian(p))

/** Live processes whose environment names one of `uuids` (PODCTL_POD_UUID): pods' apps, their children and guardians. */
export const processesOfPods = (uuids: ReadonlySet<string>): Map<number, string> => {
  const found = new Map<number, string>()
  for (const p of allPids()) {
    let env: string
    try {
      env = fs.readFileSync(`/proc/${p}/environ`, 'latin1')
    } catch {
      continue
    }
    const m = /(?:^|\0)PODCTL_POD_UUID=([0-9a-f-]{36})/.exec(env)
    if (m && uuids.has(m[1]!) && alive(p)) found.set(p, m[1]!)
  }
  return found
}

/** Live processes whose working directory is `dir` or under it (apps of pods in a data dir). */
export const processesUnder = (dir: string): number[] => {
  let real = dir
  try {
    real = fs.realpathSync.native(dir)
  } catch {
    // removed already: its processes still show the path (with " (deleted)")
  }
  const out: number[] = []
  for (const p of allPids()) {
    if (p === process.pid) continue
    let cwd: string
    try {
      cwd = fs.readlinkSync(`/proc/${p}/cwd`).replace(/ \(deleted\)$/, '')
    } catch {
      continue
    }
    if ((cwd === real || cwd.startsWith(`${real}/`) || cwd === dir || cwd.startsWith(`${dir}/`)) && alive(p)) out.push(p)
  }
  return out
}

/** The target of /proc/<pid>/fd/<fd>. */
export const fdTarget = (pid: number, fd: number): string => fs.readlinkSync(`/proc/${pid}/fd/${fd}`)

// ---- pods on disk -------------------------------------------------------

const STATE_DIRS = ['embryo', 'prepare', 'prepared', 'run', 'exited-garbage', 'garbage']

/** The pod's directory, wherever it is now, or undefined. */
export const podDir = (dir: string, uuid: string): string | undefined =>
  STATE_DIRS.map((d) => path.join(dir, 'pods', d, uuid)).find((p) => fs.existsSync(p))

/** The pod record (pod.json) as it is on disk now, wherever the pod is. */
export const podRecord = (dir: string, uuid: string): any => {
  for (let i = 0; i < 5; i++) {
    const p = podDir(dir, uuid)
    if (p === undefined) continue
    try {
      // As the library reads it: private fields (guardian_pid, ready_at,
      // pid_start) are stored apart and lifted back into the record.
      const r = parseRecordText(fs.readFileSync(path.join(p, 'pod.json'), 'utf8'))
      if (r) return r
    } catch {
      // moved meanwhile: look again
    }
  }
  throw new Error(`no record for pod ${uuid}`)
}

/** All pod UUIDs in a data dir. */
export const allPods = (dir: string): string[] => {
  const out = new Set<string>()
  for (const d of STATE_DIRS) {
    try {
      for (const n of fs.readdirSync(path.join(dir, 'pods', d))) if (UUID_RE.test(n)) out.add(n)
    } catch {
      // no such state dir
    }
  }
  return [...out]
}

/** The live process that holds the pod's lock (its supervisor), if any. */
export const lockHolder = (dir: string, uuid: string): number | undefined => {
  let target: string
  try {
    target = fs.readlinkSync(path.join(dir, 'locks', uuid))
  } catch {
    return undefined
  }
  const m = /^podctl2 (\d+) (\d+)/.exec(target)
  if (!m) return undefined
  const pid = Number(m[1])
  const st = procStat(pid)
  return st && st.start === m[2] && alive(pid) ? pid : undefined
}

/**
 * At teardown, stops every pod of data dir `dir` that still runs
 * (`podctl stop --force`), then SIGKILLs whatever is left: supervisors
 * (the holders of the pods' locks) and every process whose working
 * directory is inside `dir` (apps, their guardians and children, also ones
 * that left their group); then waits until those are dead.
 */
export const killPodsAtTeardown = (t: Teardown, dir: string): void => {
  t.teardown(async () => {
    // First the polite way: podctl stop --force on every pod still running.
    // (A pod run in process by a library test is this process's business, never a victim.)
    const running = allPods(dir).filter((uuid) => {
      const holder = lockHolder(dir, uuid)
      return holder !== undefined && holder !== process.pid
    })
    if (running.length > 0) {
      const [cmd, argv] = launch(dir, ['stop', '--force', ...running])
      spawnSync(cmd, argv, { stdio: 'ignore' })
    }
    // Then whatever is left, however it got there.
    const victims = new Set<number>()
    for (const uuid of allPods(dir)) {
      const holder = lockHolder(dir, uuid)
      if (holder !== undefined && holder !== process.pid) victims.add(holder)
    }
    for (const p of processesUnder(dir)) victims.add(p)
    for (const p of victims) {
      try {
        process.kill(p, 'SIGKILL')
      } catch {
        // gone
      }
    }
    await pollUntil('the processes of the pods to die', () => [...victims].every((p) => !alive(p)) && processesUnder(dir).length === 0, { polls: 400 })
  })
}

/**
 * A fresh data dir for one test (its t.testdir()), whose pods' processes
 * are all killed at its end. The teardown is registered before the test
 * dir is made: tap runs the teardowns of the first registration before
 * removing a test dir made after it, and they need the pods' lock and
 * record files.
 */
export const dataDir = (t: Test): string => {
  killPodsAtTeardown(t, path.resolve(t.testdirName))
  return t.testdir({})
}

/** Writes a manifest file into `dir` and returns its path. */
export const manifestFile = (dir: string, m: unknown, name = 'manifest.json'): string => {
  const p = path.join(dir, name)
  fs.writeFileSync(p, JSON.stringify(m))
  return p
}

/** Runs `run --detach` and returns the UUID it printed (asserting the contract). */
export const runDetached = async (t: Test, dir: string, args: string[]): Promise<string> => {
  const r = await podctl(t, dir, ['run', '--detach', ...args])
  t.equal(r.status, 0, 'run --detach exits 0', { stderr: r.stderr })
  t.match(r.stdout, /^[0-9a-f-]{36}\n$/, 'run --detach prints only the UUID')
  return r.stdout.trim()
}
