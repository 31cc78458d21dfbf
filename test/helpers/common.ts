/**
 * What every kind of test shares: the test object's type, where podctl is,
 * the shapes of UUIDs and times, a valid manifest, polling, and looking at
 * a data dir on disk without going through the library. Not a test file
 * (test/helpers/ is excluded from discovery).
 */
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import type t from 'tap'
import { POD_DIRS, type PodDir } from '../../lib/pod/layout.js'
import type { PodManifest } from '../../lib/pod/manifest.js'
import { parseRecordText } from '../../lib/pod/record.js'

/** tap's subtest object (the `t` of a `t.test` callback). */
export type Test = Parameters<Parameters<typeof t.test>[0]>[0]

/** The part of a test object that helpers which clean up after themselves need. */
export interface Teardown {
  teardown(fn: () => void | Promise<void>): void
}

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))
export const BIN = path.join(ROOT, 'bin', 'podctl')

/** RFC 4122 v4, lower case. */
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
/** RFC 3339 UTC with milliseconds. */
export const TIME_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
/** A stack frame line, which must not appear without --debug. */
export const STACK_RE = /^\s+at /m

/** A valid one-app manifest whose program exists everywhere. */
export const manifest = (over: Partial<PodManifest> = {}): PodManifest => ({
  apiVersion: 'podctl/v1',
  apps: [{ name: 'main', exec: ['/bin/sh', '-c', 'exit 0'] }],
  ...over,
})

/** Writes a manifest file into `dir` and returns its path. */
export const manifestFile = (dir: string, m: unknown, name = 'manifest.json'): string => {
  const p = path.join(dir, name)
  fs.writeFileSync(p, JSON.stringify(m))
  return p
}

/**
 * Polls `cond` until it returns a value other than undefined/false.
 * Counts polls (at most `polls`, 25 ms apart by default) rather than
 * measuring time; throws, naming `what`, when they run out.
 */
/** mulberry32: a small seeded PRNG, uniform in [0, 1), for schedules a failing test can replay from its seed. */
export const seededRandom = (seed: number): (() => number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let x = a
    x = Math.imul(x ^ (x >>> 15), x | 1)
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61)
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

export const pollUntil = async <T>(
  what: string,
  cond: () => T | undefined | false | Promise<T | undefined | false>,
  opts: { polls?: number; intervalMs?: number } = {},
): Promise<T> => {
  const polls = opts.polls ?? 2_000
  for (let i = 0; i < polls; i++) {
    const v = await cond()
    if (v !== undefined && v !== false) return v
    await delay(opts.intervalMs ?? 25)
  }
  throw new Error(`gave up waiting for ${what} after ${polls} polls`)
}

// ---- a data dir on disk ------------------------------------------------

/** The state dir that holds pod `uuid`, or undefined; a pod in two state dirs is a bug, and throws. */
export const whereIs = (dir: string, uuid: string): PodDir | undefined => {
  const found = POD_DIRS.filter((d) => fs.existsSync(path.join(dir, 'pods', d, uuid)))
  if (found.length > 1) throw new Error(`pod ${uuid} is in ${found.join(' and ')} at once`)
  return found[0]
}

/** The pod's directory, wherever it is now, or undefined. */
export const podDir = (dir: string, uuid: string): string | undefined => {
  const state = whereIs(dir, uuid)
  return state === undefined ? undefined : path.join(dir, 'pods', state, uuid)
}

/** The pod UUIDs currently in one state dir. */
export const podsIn = (dir: string, stateDir: string): string[] => {
  try {
    return fs.readdirSync(path.join(dir, 'pods', stateDir)).sort()
  } catch {
    return []
  }
}

/** All pod UUIDs in a data dir. */
export const allPods = (dir: string): string[] => [...new Set(POD_DIRS.flatMap((d) => podsIn(dir, d).filter((n) => UUID_RE.test(n))))]

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

/**
 * Makes a pod directory directly in a state dir (no record, no manifest
 * unless `files` says so) and returns its UUID.
 */
export const mkPod = (dataDir: string, state: PodDir, files: Record<string, string> = {}, uuid: string = randomUUID()): string => {
  const p = path.join(dataDir, 'pods', state, uuid)
  fs.mkdirSync(p, { recursive: true })
  for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(p, name), content)
  return uuid
}

/** The path of a pod's lock. */
export const lockOf = (dataDir: string, uuid: string): string => path.join(dataDir, 'locks', uuid)

/** Whether a lock exists (a lock is a symlink whose target is not a file: never follow it). */
export const lockExists = (p: string): boolean => fs.lstatSync(p, { throwIfNoEntry: false }) !== undefined

/**
 * Every entry under `root` as "rel" (file), "rel/" (dir) or "rel -> target"
 * (link), sorted; null when `root` is missing. Never follows a link.
 */
export const listTree = (root: string): string[] | null => {
  if (!fs.existsSync(root)) return null
  const out: string[] = []
  const walk = (dir: string, rel: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name
      if (e.isSymbolicLink()) out.push(`${r} -> ${fs.readlinkSync(path.join(dir, e.name))}`)
      else if (e.isDirectory()) {
        out.push(`${r}/`)
        walk(path.join(dir, e.name), r)
      } else out.push(r)
    }
  }
  walk(root, '')
  return out.sort()
}

/** A snapshot of a tree with file contents, to prove nothing in it changed. */
export const snapshot = (root: string): string =>
  (listTree(root) ?? [])
    .map((e) => (e.endsWith('/') || e.includes(' -> ') ? e : `${e}=${fs.readFileSync(path.join(root, e), 'utf8')}`))
    .join('\n')

/**
 * `npm run test:stress` (PODCTL_STRESS=1) runs the fuzzers at full size;
 * `npm test`, what a developer runs before each commit, at a fifth of it.
 */
export const STRESS = process.env.PODCTL_STRESS === '1'
export const runsOf = (full: number): number => (STRESS ? full : Math.max(10, Math.ceil(full / 5)))
/**
 * Trials of a race run again and again against real processes (a racer
 * swapping what root removes, in a busy loop of renames; a SIGKILL at a
 * random moment): all of them under test:stress, a quarter (at least 3)
 * in `npm test`.
 */
export const trialsOf = (full: number): number => (STRESS ? full : Math.max(3, Math.ceil(full / 4)))
/** A count a full-size run of `full` cases reaches (`count`), scaled to the runs this one makes. */
export const scaled = (count: number, full: number): number => Math.floor((count * runsOf(full)) / full)
