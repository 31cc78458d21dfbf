/**
 * Processes of the run tests: look at them in /proc (states, process
 * groups, guardians, who holds a pod's lock), and make sure every process
 * a test started is dead at its end (dataDir). Not a test file
 * (test/helpers/ is excluded from discovery).
 */
import fs from 'node:fs'
import path from 'node:path'
import { ensureDataDir } from '../../lib/pod/layout.js'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { GUARDIAN_NAME } from '../../lib/proc/guardian.js'
import { podctl } from './cli-util.js'
import { allPods, pollUntil, type Teardown, type Test } from './common.js'

// ---- /proc ------------------------------------------------------------

interface ProcStat {
  state: string
  ppid: number
  pgrp: number
  session: number
  ttyNr: number
  /** The kernel's PF_ flags (field 9). */
  flags: number
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
  return { state: f[0]!, ppid: Number(f[1]), pgrp: Number(f[2]), session: Number(f[3]), ttyNr: Number(f[4]), flags: Number(f[6]), start: f[19]! }
}

/** PF_EXITING: the process is in its exit (a pid namespace's init waits there for every other process of its namespace). */
const PF_EXITING = 0x4

/** Whether `pid` has begun to exit and not finished (it is no zombie yet). */
export const exiting = (pid: number): boolean => ((procStat(pid)?.flags ?? 0) & PF_EXITING) !== 0

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

/** Whether `pid` is an app's guardian (lib/proc/guardian.ts): `sh -c SCRIPT podctl-guardian …`. */
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
 * How long after `since` pod `uuid` first read exited, polled in this
 * process as any reader of its lock decides (CONTRACT §2: within 1 second
 * of its holder's death). In-process, so that what is timed is the lock's
 * verdict, not the start-up of a `podctl status` on a busy machine.
 */
export const msUntilExited = (dir: string, uuid: string, since: number): Promise<number> =>
  pollUntil(`pod ${uuid} to read exited`, () => podFromUUIDString(dir, uuid).state === 'exited' && Date.now() - since, { polls: 2_000, intervalMs: 5 })

/**
 * At teardown, stops every pod of the data dirs `dirs()` that still runs
 * (`podctl stop --force`), then SIGKILLs whatever is left: supervisors
 * (the holders of the pods' locks) and every process whose working
 * directory is inside `base` (apps, their guardians and children, also ones
 * that left their group); then waits until those are dead.
 */
const killPodsAtTeardown = (t: Teardown, base: string, dirs: () => string[]): void => {
  t.teardown(async () => {
    // A pod run in process by a library test is this process's business, never a victim.
    const holders = (dir: string): Map<string, number> =>
      new Map(allPods(dir).flatMap((uuid) => {
        const holder = lockHolder(dir, uuid)
        return holder !== undefined && holder !== process.pid ? [[uuid, holder] as const] : []
      }))
    // First the polite way, then whatever is left, however it got there.
    for (const dir of dirs()) {
      const running = [...holders(dir).keys()]
      if (running.length > 0) podctl(dir, ['stop', '--force', ...running])
    }
    const victims = new Set<number>(processesUnder(base))
    for (const dir of dirs()) for (const pid of holders(dir).values()) victims.add(pid)
    for (const p of victims) {
      try {
        process.kill(p, 'SIGKILL')
      } catch {
        // gone
      }
    }
    await pollUntil('the processes of the pods to die', () => [...victims].every((p) => !alive(p)) && processesUnder(base).length === 0, { polls: 400 })
  })
}

const dataDirs = new WeakMap<object, { base: string; dirs: string[] }>()

/**
 * A fresh data dir inside the test's t.testdir(), with its layout made as
 * the library expects (`layout: false` leaves it empty, as a user's first
 * command finds it); a test may ask for several. Every process of their pods is killed at the test's
 * end. That teardown is registered before the test dir is made: tap runs
 * teardowns in order, and it needs the pods' lock and record files.
 */
export const dataDir = (t: Test, opts: { layout?: boolean } = {}): string => {
  let td = dataDirs.get(t)
  if (!td) {
    const dirs: string[] = []
    killPodsAtTeardown(t, path.resolve(t.testdirName), () => dirs)
    td = { base: t.testdir({}), dirs }
    dataDirs.set(t, td)
  }
  const dir = path.join(td.base, `data${td.dirs.length || ''}`)
  if (opts.layout === false) fs.mkdirSync(dir)
  else ensureDataDir(dir)
  td.dirs.push(dir)
  return dir
}
