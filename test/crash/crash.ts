// Crash consistency: SIGKILL podctl processes at random
// moments during prepare, run, run --detach, run-prepared, stop, rm and gc,
// and check after every trial that
//   - no UUID is in two state dirs,
//   - every entry of a state dir is a pod that gc can handle,
//   - no app process outlives its pod (the guardian, or reaping, kills it),
//   - gc --grace-period 0s twice leaves nothing but running pods.
// Seeded and reproducible: CRASH_SEED picks the schedule, CRASH_TRIALS the
// number of trials (default 105, 15 per operation).
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { gc } from '../../lib/pod/gc.js'
import { POD_DIRS, ensureDataDir, isPodUUID } from '../../lib/pod/layout.js'
import { Include, listPods } from '../../lib/pod/walk.js'
import { preparePod } from '../../lib/pod/prepare.js'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { alive, allPids, lockHolder, processesOfPods } from '../helpers/run-util.js'
import { seededRandom } from '../helpers/common.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

const bin = fileURLToPath(new URL('../../bin/podctl', import.meta.url))
const seed = Number(process.env.CRASH_SEED ?? 20261122)
const trials = Number(process.env.CRASH_TRIALS ?? 105)

// Seeded, so that a failing schedule can be replayed.
const rng = seededRandom(seed)

const OPS = ['prepare', 'run', 'run-detach', 'run-prepared', 'stop', 'rm', 'gc'] as const
type Op = (typeof OPS)[number]

const manifest = (cmd: string[]) => ({ apiVersion: 'podctl/v1' as const, apps: [{ name: 'app', exec: cmd }] })

const podctl = (dir: string, args: string[]) =>
  spawnSync(process.execPath, [bin, '--dir', dir, ...args], { encoding: 'utf8' })

/** Marks the processes of one trial (detached supervisors inherit it), so that settle() can find them. */
const TRIAL_ENV = 'PODCTL_CRASH_TRIAL'

/** Runs `args` and SIGKILLs it after `delayMs` (if it is still running). */
const killAfter = (dir: string, args: string[], delayMs: number, trial = -1): Promise<{ code: number | null; signal: string | null }> =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, [bin, '--dir', dir, ...args], { stdio: 'ignore', env: { ...process.env, [TRIAL_ENV]: String(trial) } })
    const timer = setTimeout(() => child.kill('SIGKILL'), delayMs)
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal })
    })
  })

const allUuidsSeen = new Set<string>()

/** Live detached supervisors started by the podctl of trial `trial`. */
const trialSupervisors = (trial: number): number[] =>
  allPids().filter((pid) => {
    try {
      return (
        fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes('supervisor-main') &&
        fs.readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`${TRIAL_ENV}=${trial}`) &&
        alive(pid)
      )
    } catch {
      return false // gone
    }
  })

/**
 * A detached supervisor outlives the `run --detach` that started it (killed
 * after the spawn): waits (up to 10 s) until each one of trial `trial` has
 * either exited or holds a pod in run/, so that the checks do not catch it
 * half-way (its pod "preparing", or not made yet).
 */
const settle = async (dir: string, trial: number): Promise<void> => {
  for (let i = 0; i < 200; i++) {
    const sups = trialSupervisors(trial)
    if (sups.length === 0) return
    const runners = new Set(listPods(dir, Include.all).filter((p) => p.state === 'running').map((p) => lockHolder(dir, p.uuid)))
    if (sups.every((pid) => runners.has(pid))) return
    await new Promise((r) => setTimeout(r, 50))
  }
}

const checkInvariants = async (t: Test, dir: string, label: string): Promise<void> => {
  // 1. No UUID in two state dirs; every entry is a pod directory.
  const where = new Map<string, string>()
  for (const d of POD_DIRS) {
    for (const e of fs.readdirSync(path.join(dir, 'pods', d), { withFileTypes: true })) {
      if (e.name.startsWith('.')) continue
      t.ok(isPodUUID(e.name) && e.isDirectory(), `${label}: ${d}/${e.name} is a pod directory`)
      t.notOk(where.has(e.name), `${label}: ${e.name} is in ${where.get(e.name)} and ${d}`)
      where.set(e.name, d)
      allUuidsSeen.add(e.name)
    }
  }
  // 2. No app outlives its pod: every app process belongs to a running
  // pod. The guardian kills orphans within moments; poll for that.
  let orphans: [number, string][] = []
  for (let i = 0; i < 100; i++) {
    const running = new Set(listPods(dir, Include.all).filter((p) => p.state === 'running').map((p) => p.uuid))
    orphans = [...processesOfPods(allUuidsSeen)].filter(([, u]) => !running.has(u))
    if (orphans.length === 0) break
    await new Promise((r) => setTimeout(r, 50))
  }
  t.same(orphans, [], `${label}: no app outlives its pod`)
  // 3. gc twice leaves nothing but running pods; no pod is beyond its reach.
  for (let i = 0; i < 2; i++) {
    const r = await gc(dir, { gracePeriodMs: 0, expirePreparedMs: 0 })
    t.same(r.failed, [], `${label}: gc pass ${i + 1} fails on nothing`)
  }
  const left = listPods(dir, Include.all).filter((p) => p.state !== 'running')
  t.same(left.map((p) => `${p.uuid} ${p.state}${heldBy(dir, p.uuid)}`), [], `${label}: only running pods are left after gc twice`)
}

/** Who holds a pod's lock, for the failure message: " (held by PID: CMDLINE)", or "". */
const heldBy = (dir: string, uuid: string): string => {
  const pid = lockHolder(dir, uuid)
  if (pid === undefined) return ''
  try {
    return ` (held by ${pid}: ${fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ').trim()})`
  } catch {
    return ` (held by ${pid})`
  }
}

/** Sets up what `op` needs and returns its command line. */
const setUp = async (dir: string, op: Op): Promise<string[]> => {
  switch (op) {
    case 'prepare':
      return ['prepare', '--', 'true']
    case 'run':
      return ['run', '--', 'sh', '-c', 'sleep 0.2']
    case 'run-detach':
      return ['run', '--detach', '--', 'sh', '-c', 'sleep 0.3 & sleep 0.3']
    case 'run-prepared': {
      const pod = await preparePod(dir, manifest(['sleep', '0.2']), { sync: false })
      return ['run-prepared', pod.uuid]
    }
    case 'stop': {
      const r = podctl(dir, ['run', '--detach', '--', 'sleep', '30'])
      return ['stop', '--timeout', '100ms', r.stdout.trim()]
    }
    case 'rm': {
      const pod = await preparePod(dir, manifest(['true']), { sync: false })
      if (rng() < 0.5) {
        const p = podFromUUIDString(dir, pod.uuid)
        p.toRun({ sync: false })
        p.unlock() // exited
      }
      return ['rm', pod.uuid]
    }
    case 'gc': {
      for (let i = 0; i < 5; i++) {
        const pod = await preparePod(dir, manifest(['true']), { sync: false })
        const p = podFromUUIDString(dir, pod.uuid)
        p.toRun({ sync: false })
        p.unlock()
      }
      return ['gc', '--grace-period', '0s']
    }
  }
}

t.test(`${trials} SIGKILLs at random moments (seed ${seed})`, async (t) => {
  const dir = t.testdir({})
  ensureDataDir(dir)
  t.teardown(() => {
    // Whatever still runs (detached pods) is stopped.
    for (const p of listPods(dir, Include.all)) if (p.state === 'running') podctl(dir, ['stop', '--force', p.uuid])
  })
  // How long each operation takes here, unkilled, so that kill moments
  // cover the operation (on a fast machine or a slow one) and a little after.
  // The median of three: one slow run (a busy machine) must not stretch
  // the schedule so far that most kills come after the end.
  const spans: Partial<Record<Op, number>> = {}
  for (const op of OPS) {
    const took: number[] = []
    for (let i = 0; i < 3; i++) {
      const args = await setUp(dir, op)
      const started = performance.now()
      await killAfter(dir, args, 60_000)
      took.push(performance.now() - started)
      for (const p of listPods(dir, Include.all)) if (p.state === 'running') podctl(dir, ['stop', '--force', p.uuid])
    }
    spans[op] = took.sort((a, b) => a - b)[1]!
  }
  t.comment(`unkilled durations (ms): ${JSON.stringify(spans, (_k, v: unknown) => (typeof v === 'number' ? Math.round(v) : v))}`)
  const counts: Record<string, number> = {}
  for (let i = 0; i < trials; i++) {
    const op = OPS[i % OPS.length]!
    const args = await setUp(dir, op)
    // Anywhere from before Node has started to a little after the operation
    // would have finished.
    const delay = Math.floor(rng() * spans[op]! * 1.2)
    const r = await killAfter(dir, args, delay, i)
    counts[`${op} ${r.signal === 'SIGKILL' ? 'killed' : 'finished'}`] = (counts[`${op} ${r.signal === 'SIGKILL' ? 'killed' : 'finished'}`] ?? 0) + 1
    // Let a detached supervisor that outlived its podctl get its pod
    // running, then stop what is legitimately running so that the checks
    // see a quiet dir.
    await settle(dir, i)
    for (const p of listPods(dir, Include.all)) if (p.state === 'running') podctl(dir, ['stop', '--force', p.uuid])
    await checkInvariants(t, dir, `trial ${i} (${op}, kill at ${delay} ms)`)
  }
  t.comment(JSON.stringify(counts))
  const killed = Object.entries(counts).filter(([k]) => k.endsWith('killed')).reduce((n, [, v]) => n + v, 0)
  t.ok(killed >= trials / 2, `most trials were killed mid-way (${killed} of ${trials})`)
})
