// Isolated pods under SIGKILL (CONTRACT §9, §12): start a pod of
// containers whose apps fork, escape their group (setsid) and ignore
// SIGTERM, SIGKILL its supervisor at a seeded random moment (while its
// containers are being made, or once it runs), and check from the host
// that within a second the pod reads exited and none of its processes is
// left; that the runtime's own processes end too; and that after `gc` the
// runtime keeps no container of the data dir and no cgroup of its pods.
// Seeded and reproducible: ISO_CRASH_SEED picks the schedule,
// ISO_CRASH_TRIALS the number (default 50).
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { findRuntime } from '../../lib/runtime/runtime.js'
import { argvFor, launcher, podctl } from '../helpers/cli-util.js'
import { containersMissing, podCgroupsLeft } from '../helpers/containers.js'
import { pollUntil, seededRandom, type Test } from '../helpers/common.js'
import { alive, allPids, dataDir, msUntilExited } from '../helpers/run-util.js'

const seed = Number(process.env.ISO_CRASH_SEED ?? 20261125)
const trials = Number(process.env.ISO_CRASH_TRIALS ?? 50)
const rng = seededRandom(seed)

const cmdline = (p: number): string => fs.readFileSync(`/proc/${p}/cmdline`, 'latin1')

/** Live processes inside pod `uuid`: its apps and what they started (their environment says so). */
const appProcessesOf = (uuid: string): number[] =>
  allPids().filter((p) => {
    try {
      return !cmdline(p).includes('supervisor-main') && fs.readFileSync(`/proc/${p}/environ`, 'latin1').includes(`PODCTL_POD_UUID=${uuid}`) && alive(p)
    } catch {
      return false
    }
  })

/** Live processes of the runtime for pod `uuid` (their arguments name its containers), and its infra. */
const runtimeProcessesOf = (uuid: string): number[] =>
  allPids().filter((p) => {
    try {
      const cmd = cmdline(p)
      return cmd.includes(uuid) && !cmd.includes('supervisor-main') && !cmd.includes('podctl') && alive(p)
    } catch {
      return false
    }
  })

const APP = 'sleep 300 & setsid sleep 301 & (trap "" TERM HUP INT; sleep 302) & i=0; while :; do i=$((i+1)); echo $i > /tmp/n; done'

/** The containers the runtime keeps for data dir `dir`. */
const runtimeList = (dir: string): string[] => {
  const rt = findRuntime()
  const r = spawnSync(rt.path, ['--root', path.join(dir, 'runtime', rt.name), 'list', '-q'], { encoding: 'utf8' })
  return r.stdout.split('\n').filter((l) => l !== '')
}

const manifestOf = (apps: number, network: string): string =>
  JSON.stringify({ apiVersion: 'podctl/v1', isolation: 'namespaces', network, apps: Array.from({ length: apps }, (_, k) => ({ name: `a${k}`, exec: ['sh', '-c', APP] })) })

/** After a SIGKILL: the pod reads exited within a second, its processes go, then the runtime's. */
const checkGone = async (t: Test, dir: string, uuid: string, what: string, killedAt: number): Promise<void> => {
  const exitedIn = await msUntilExited(dir, uuid, killedAt)
  if (exitedIn > 1_000) t.fail(`${what}: the pod read exited only after ${exitedIn} ms`)
  try {
    await pollUntil(`${what}: no process in pod ${uuid}`, () => appProcessesOf(uuid).length === 0, { polls: 100, intervalMs: 10 })
  } catch {
    t.fail(`${what}: processes of the pod left: ${appProcessesOf(uuid).join(' ')}`)
  }
  try {
    // The runtime's processes clean up after the kernel has ended the pod: a little later.
    await pollUntil(`${what}: no runtime process of pod ${uuid}`, () => runtimeProcessesOf(uuid).length === 0, { polls: 100, intervalMs: 100 })
  } catch {
    t.fail(`${what}: runtime processes left: ${runtimeProcessesOf(uuid).map((p) => `${p} ${cmdline(p).replaceAll('\0', ' ')}`).join('; ')}`)
  }
}

t.test(`SIGKILL of an isolated pod's supervisor leaves nothing of the pod (${trials} trials, seed ${seed})`, async (t) => {
  const missing = containersMissing()
  if (missing !== undefined) {
    t.plan(0, `this machine cannot isolate pods: ${missing}`)
    return
  }
  const dir = dataDir(t)
  for (let i = 0; i < trials; i++) {
    const apps = 1 + Math.floor(rng() * 3)
    const network = rng() < 0.5 ? 'host' : 'none'
    const what = `trial ${i} (${apps} apps, network ${network}, running)`
    const up = podctl(dir, ['run', '--detach', '--manifest', '-'], { input: manifestOf(apps, network) })
    if (up.status !== 0) {
      t.fail(`${what}: run --detach exited ${up.status}: ${up.stderr}`)
      continue
    }
    const uuid = up.stdout.trim()
    const pid = JSON.parse(podctl(dir, ['status', uuid, '--format', 'json']).stdout).pid as number
    await new Promise((r) => setTimeout(r, Math.floor(rng() * 300)))
    process.kill(pid, 'SIGKILL')
    await checkGone(t, dir, uuid, what, Date.now())
  }
  const gc = podctl(dir, ['gc', '--grace-period', '0s'])
  t.equal(gc.status, 0, gc.stderr)
  t.same(runtimeList(dir), [], 'after gc the runtime keeps no container of the data dir')
  t.pass(`${trials} trials done`)
})

t.test(`SIGKILL while the containers are being made (${trials} trials, seed ${seed})`, async (t) => {
  const missing = containersMissing()
  if (missing !== undefined) {
    t.plan(0, `this machine cannot isolate pods: ${missing}`)
    return
  }
  const dir = dataDir(t)
  const uuids: string[] = []
  for (let i = 0; i < trials; i++) {
    const apps = 1 + Math.floor(rng() * 3)
    const network = rng() < 0.5 ? 'host' : 'none'
    const what = `trial ${i} (${apps} apps, network ${network}, starting)`
    const file = path.join(dir, '..', `uuid-${i}`)
    // In the foreground, the supervisor is the podctl process itself: killed anywhere in its start.
    const [cmd, argv] = launcher(argvFor(dir, ['run', '--uuid-file-save', file, '--manifest', '-']), true)
    const child = spawn(cmd, argv, { stdio: ['pipe', 'ignore', 'ignore'] })
    const closed = new Promise((r) => child.once('close', r))
    let ended = false
    void closed.then(() => (ended = true))
    child.stdin.end(manifestOf(apps, network))
    // Killed at a random moment after the pod is made (its UUID file is saved just before the
    // containers are), not a random time after the spawn: on a loaded machine that one fell
    // mostly before the pod existed.
    await pollUntil(`${what}: the pod made`, () => fs.existsSync(file) || ended)
    await new Promise((r) => setTimeout(r, Math.floor(rng() * 400)))
    child.kill('SIGKILL')
    const killedAt = Date.now()
    await closed
    const uuid = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim() : ''
    if (uuid === '') continue // ended before it made a pod: counted below
    uuids.push(uuid)
    // Before it ran: its UUID is saved while it is still being prepared, so a kill there leaves an aborted prepare.
    if (['preparing', 'prepared', 'aborted prepare', 'embryo'].includes(podFromUUIDString(dir, uuid).state)) continue
    await checkGone(t, dir, uuid, what, killedAt)
  }
  t.equal(uuids.length, trials, 'every trial made a pod before the kill')
  const gc = podctl(dir, ['gc', '--grace-period', '0s', '--expire-prepared', '0s'])
  t.equal(gc.status, 0, gc.stderr)
  t.same(runtimeList(dir), [], 'after gc the runtime keeps no container of the data dir')
  t.same(fs.readdirSync(path.join(dir, 'pods', 'run')), [], 'and no pod is left running')
  // A runtime killed while it made a container's cgroups leaves them with no state to delete them by: gc's teardown removes them.
  t.same(uuids.flatMap((u) => podCgroupsLeft(u).map((m) => `${m}/podctl/${u}`)), [], 'nor any cgroup of its pods, in any hierarchy')
})
