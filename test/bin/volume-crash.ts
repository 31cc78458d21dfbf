// Crash clean-up of volumes: a podctl process SIGKILLed
// in the middle of mounting (at failpoints, and at random moments), or a
// running supervisor SIGKILLed, leaves a pod that rm and gc still tear down
// completely from its recorded actual state: nothing of the pod is left,
// claims are released (and a dead supervisor's claim never blocks another
// pod), reclaim policies apply, host paths are untouched.
import t from 'tap'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { allPods, BIN, listTree, manifestFile, podDir, podRecord, pollUntil, snapshot, trialsOf } from '../helpers/common.js'
import { podctl, podctlJson, runDetached } from '../helpers/cli-util.js'
import { alive, dataDir, processesUnder } from '../helpers/run-util.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

const sh = (script: string): string[] => ['/bin/sh', '-c', script]

const manifest = (host: string, script = 'echo hi > $PODCTL_APP_ROOT/data/x; echo row >> $PODCTL_APP_ROOT/db/rows') => ({
  apiVersion: 'podctl/v1',
  apps: [
    {
      name: 'app',
      exec: sh(script),
      mounts: [
        { volume: 'data', path: '/data' },
        { volume: 'nested', path: '/data/nested' },
        { volume: 'cfg', path: '/cfg' },
        { volume: 'db', path: '/db' },
        { volume: 'host', path: '/host' },
      ],
    },
  ],
  volumes: [
    { name: 'data', kind: 'empty' },
    { name: 'nested', kind: 'empty' },
    { name: 'cfg', kind: 'files', files: { a: { content: 'a' } } },
    { name: 'db', kind: 'persistent', claim: 'db' },
    { name: 'host', kind: 'host', source: host },
  ],
})

/** A data dir with a host source and persistent volume db (reclaim as given). */
const setUp = async (t: Test, reclaim = 'retain') => {
  const dir = dataDir(t)
  const host = path.join(dir, 'host-src')
  fs.mkdirSync(path.join(host, 'sub'), { recursive: true })
  fs.writeFileSync(path.join(host, 'keep'), 'host')
  fs.symlinkSync('/', path.join(host, 'sub', 'root-link'))
  t.equal(podctl(dir, ['volume', 'create', 'db', '--reclaim', reclaim]).status, 0)
  return { dir, host, hostBefore: snapshot(host), m: manifestFile(dir, manifest(host)) }
}

/** Everything is clean: no pod, no claim, no lock, no leftovers; the host path as it was. */
const clean = (t: Test, dir: string, host: string, hostBefore: string, what: string): void => {
  t.same(allPods(dir), [], `${what}: no pod is left`)
  t.equal(snapshot(host), hostBefore, `${what}: the host path is untouched`)
  if (fs.existsSync(path.join(dir, 'volumes', 'db'))) t.same(fs.readdirSync(path.join(dir, 'volumes', 'db', 'claims')), [], `${what}: no claim is left`)
  t.same(listTree(path.join(dir, 'volume-locks')) ?? [], [], `${what}: no volume lock is left`)
}

/** Runs podctl with a failpoint; resolves with the stopped process's pid once it is there. */
const stopAt = async (t: Test, dir: string, args: string[], failpoint: string) => {
  const marker = path.join(dir, `fp-${process.hrtime.bigint()}`)
  const env = { ...process.env, PODCTL_TEST_FAILPOINT: failpoint, PODCTL_TEST_FAILPOINT_FILE: marker }
  // Through env -u NODE_OPTIONS, as every spawned podctl (see test/helpers/run-util.ts).
  const child = spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', process.execPath, BIN, '--dir', dir, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  t.teardown(() => void child.kill('SIGKILL'))
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  let gone = false
  void exited.then(() => (gone = true))
  const text = await pollUntil(`the failpoint ${failpoint}`, () => {
    // A pid, never 0: kill(0) would signal this test's own process group (tap's too).
    if (fs.existsSync(marker)) return /^[1-9]\d* /.test(fs.readFileSync(marker, 'utf8')) ? fs.readFileSync(marker, 'utf8') : false
    if (gone) throw new Error(`podctl ${args.join(' ')} ended before the failpoint ${failpoint}: ${stderr}`)
    return false
  })
  const pid = Number(text.split(' ')[0])
  return { pid, exited }
}

for (const fp of ['mounting:data', 'linked:nested', 'mounting:db', 'set-up:db', 'linked:db', 'mounting:host']) {
  t.test(`podctl run SIGKILLed at ${fp}: rm tears down every recorded volume`, async (t) => {
    const { dir, host, hostBefore, m } = await setUp(t)
    const { pid, exited } = await stopAt(t, dir, ['run', '--manifest', m], fp)
    process.kill(pid, 'SIGKILL')
    await exited
    const [uuid] = allPods(dir)
    t.ok(uuid, 'a pod was left behind')
    t.equal((await podctlJson(t, dir, ['status', uuid!, '--format', 'json'])).state, 'aborted prepare')
    const states = fs.readdirSync(path.join(podDir(dir, uuid!)!, 'volume-state'))
    t.ok(states.includes(`${fp.split(':')[1]}.json`), `the volume being mounted is recorded (${states.join(', ')})`)
    // Whatever the dead process claimed does not hold: another pod gets the volume at once.
    const other = podctl(dir, ['run', '--manifest', manifestFile(dir, manifest(host, 'exit 0'), 'other.json')])
    t.equal(other.status, 0, `another pod runs with db (${other.stderr.trim()})`)
    const rm = podctl(dir, ['rm', ...allPods(dir)])
    t.equal(rm.status, 0, rm.stderr)
    clean(t, dir, host, hostBefore, fp)
  })
}

t.test('run-prepared --detach whose supervisor is SIGKILLed mid-mount: the pod stays prepared, rm cleans it', async (t) => {
  const { dir, host, hostBefore, m } = await setUp(t, 'delete')
  const uuid = podctl(dir, ['prepare', '--manifest', m]).stdout.trim()
  // The detached supervisor inherits the environment, failpoint included:
  // the pid in the marker is the supervisor's, not the CLI's.
  const { pid, exited } = await stopAt(t, dir, ['run-prepared', '--detach', uuid], 'linked:db')
  process.kill(pid, 'SIGKILL')
  await exited
  t.equal((await podctlJson(t, dir, ['status', uuid, '--format', 'json'])).state, 'prepared')
  t.ok(fs.existsSync(path.join(dir, 'volumes', 'db', 'claims', `${uuid}.json`)), 'the claim was recorded before the crash')
  const rm = podctl(dir, ['rm', uuid])
  t.equal(rm.status, 0, rm.stderr)
  clean(t, dir, host, hostBefore, 'run-prepared')
  t.notOk(fs.existsSync(path.join(dir, 'volumes', 'db')), 'reclaim delete applied when the last bound pod was removed')
})

t.test('a running supervisor SIGKILLed: its claim is free at once; gc tears the pod down and applies recycle', async (t) => {
  const { dir, host, hostBefore } = await setUp(t, 'recycle')
  const m = manifestFile(dir, manifest(host, 'echo row >> $PODCTL_APP_ROOT/db/rows; exec sleep 300'))
  const uuid = await runDetached(t, dir, ['--manifest', m])
  await pollUntil('the app to write', () => fs.existsSync(path.join(dir, 'volumes', 'db', 'data', 'rows')))
  await pollUntil('the app to be recorded', () => podRecord(dir, uuid).apps[0].pid !== null)
  const supervisor = podRecord(dir, uuid).pid as number
  process.kill(supervisor, 'SIGKILL')
  await pollUntil('the supervisor to die', () => !alive(supervisor))
  const v = await podctlJson(t, dir, ['volume', 'inspect', 'db', '--format', 'json'])
  t.same(v.in_use_by, [], 'a dead supervisor holds nothing')
  t.same(v.claims.map((c: { pod: string; running: boolean }) => [c.pod, c.running]), [[uuid, false]], 'the pod is still bound')
  const other = podctl(dir, ['run', '--manifest', manifestFile(dir, manifest(host, 'exit 0'), 'other.json')])
  t.equal(other.status, 0, `another pod runs with the ReadWriteOnce volume before any clean-up (${other.stderr.trim()})`)
  // gc reaps what the guardian may not have killed yet, then deletes the pods.
  const gc = podctl(dir, ['gc', '--grace-period', '0s'])
  t.equal(gc.status, 0, gc.stderr)
  await pollUntil('the app to be gone', () => processesUnder(dir).length === 0)
  t.equal(gc.stdout.split('\n').filter((l) => l.startsWith('deleted ')).length, 2, 'gc deleted both pods')
  clean(t, dir, host, hostBefore, 'gc')
  t.same(fs.readdirSync(path.join(dir, 'volumes', 'db', 'data')), [], 'recycle: scrubbed once the last bound pod was removed')
  t.match(await podctlJson(t, dir, ['volume', 'inspect', 'db', '--format', 'json']), { phase: 'available', claims: [] })
})

t.test('podctl run SIGKILLed at random moments: gc and rm always leave a clean data dir', async (t) => {
  const { dir, host, hostBefore, m } = await setUp(t)
  let seed = 20261122
  const rand = (): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31
    return seed / 2 ** 31
  }
  const outcomes = new Map<string, number>()
  for (let trial = 0; trial < trialsOf(16); trial++) {
    const child = spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', process.execPath, BIN, '--dir', dir, 'run', '--manifest', m], { stdio: 'ignore' })
    const exited = new Promise<string>((resolve) => child.on('exit', (code, sig) => resolve(sig ?? `exit ${code}`)))
    const timer = setTimeout(() => child.kill('SIGKILL'), Math.floor(rand() * 350))
    const how = await exited
    clearTimeout(timer)
    outcomes.set(how, (outcomes.get(how) ?? 0) + 1)
    podctl(dir, ['gc', '--grace-period', '0s'])
    await pollUntil('apps of killed pods to be gone', () => processesUnder(dir).length === 0)
    const left = allPods(dir)
    if (left.length > 0) podctl(dir, ['rm', ...left]) // young embryos, which gc leaves for a minute
    clean(t, dir, host, hostBefore, `trial ${trial} (${how})`)
  }
  t.ok(outcomes.size >= 1, `outcomes: ${JSON.stringify(Object.fromEntries(outcomes))}`)
})
