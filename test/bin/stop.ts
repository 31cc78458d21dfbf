// Black-box tests of `podctl stop` (CONTRACT §4): spawns bin/podctl.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { podRecord, pollUntil, type Test } from '../helpers/common.js'
import { podctl, podctlJson, runDetached, startPodctl } from '../helpers/cli-util.js'
import { alive, appMembers, dataDir } from '../helpers/run-util.js'

/** Waits until the pod's only app runs, and returns its recorded pid. */
const appRunning = (dir: string, uuid: string, i = 0): Promise<number> =>
  pollUntil(`app ${i} of ${uuid} to run`, () => {
    const a = podRecord(dir, uuid).apps[i]
    return a?.state === 'running' && a.pid !== null ? (a.pid as number) : undefined
  })

/** Asserts that stop returned with the pod exited and every app process gone. */
const assertStopped = async (t: Test, dir: string, uuid: string, pids: number[]): Promise<any> => {
  // stop returns when the pod is exited: no polling here.
  t.equal(podFromUUIDString(dir, uuid).state, 'exited', 'exited when stop returns')
  await pollUntil('the app processes to be gone', () => pids.every((p) => !alive(p)))
  return podctlJson(t, dir, ['status', uuid, '--format', 'json'])
}

t.test('stop: SIGTERM to the apps, the pod ends exited, returns 0', async (t) => {
  const dir = dataDir(t)
  const uuid = await runDetached(t, dir, ['--', 'sleep', '1000'])
  const pid = await appRunning(dir, uuid)
  const r = podctl(dir, ['stop', uuid.slice(0, 8)])
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, `${uuid}\n`, 'prints the full UUID of the stopped pod')
  const v = await assertStopped(t, dir, uuid, [pid])
  t.equal(v.state, 'exited')
  t.match(v.apps[0], { state: 'exited', exit_code: 143 }, 'sleep died of SIGTERM: 143 recorded')
  t.equal(v.exit_code, 143)
})

t.test('stop --force: SIGKILL at once', async (t) => {
  const dir = dataDir(t)
  // The app ignores SIGTERM: only a SIGKILL ends it.
  const uuid = await runDetached(t, dir, ['--', 'sh', '-c', 'trap "" TERM; sleep 1000 & while :; do sleep 0.05; done'])
  const pid = await appRunning(dir, uuid)
  const members = await pollUntil('the app and its children', () => (appMembers(pid).length >= 2 ? appMembers(pid) : undefined))
  const r = podctl(dir, ['stop', '--force', uuid])
  t.equal(r.status, 0, r.stderr)
  const v = await assertStopped(t, dir, uuid, members)
  t.equal(v.state, 'exited')
  t.match(v.apps[0], { state: 'exited', exit_code: 137 }, 'the SIGKILL is recorded as 137')
  t.equal(v.exit_code, 137, 'the pod exit code is 137')
})

t.test('stop --timeout: an app that ignores SIGTERM is SIGKILLed after the timeout', async (t) => {
  const dir = dataDir(t)
  const uuid = await runDetached(t, dir, ['--', 'sh', '-c', 'trap "echo got TERM" TERM; echo started; while :; do sleep 0.05; done'])
  const pid = await appRunning(dir, uuid)
  await pollUntil('the app to print', () => (fs.readFileSync(path.join(dir, 'pods', 'run', uuid, 'logs', 'sh.log'), 'utf8').includes('started') ? true : undefined))
  const r = podctl(dir, ['stop', '--timeout', '300ms', uuid])
  t.equal(r.status, 0, r.stderr)
  const v = await assertStopped(t, dir, uuid, [pid])
  t.equal(v.state, 'exited')
  const log = podctl(dir, ['logs', uuid])
  t.match(log.stdout, /^got TERM$/m, 'the app got SIGTERM first')
  t.match(v.apps[0], { state: 'exited', exit_code: 137 }, 'the SIGKILL is recorded as 137')
})

t.test('stop of an exited pod is a no-op that exits 0', async (t) => {
  const dir = dataDir(t)
  const run = podctl(dir, ['run', '--uuid-file-save', path.join(dir, 'uuid'), '--', 'sh', '-c', 'exit 2'])
  t.equal(run.status, 2)
  const uuid = fs.readFileSync(path.join(dir, 'uuid'), 'utf8').trim()
  const before = await podctlJson(t, dir, ['status', uuid, '--format', 'json'])
  const r = podctl(dir, ['stop', uuid])
  t.equal(r.status, 0, r.stderr)
  t.same(await podctlJson(t, dir, ['status', uuid, '--format', 'json']), before, 'nothing changed')
})

t.test('stop of a prepared pod exits 4', async (t) => {
  const dir = dataDir(t)
  const p = podctl(dir, ['prepare', '--', 'sleep', '1000'])
  const uuid = p.stdout.trim()
  const r = podctl(dir, ['stop', uuid])
  t.equal(r.status, 4)
  t.match(r.stderr, /^podctl: pod \w+ is prepared/)
  t.equal(r.stdout, '')
  t.equal(podFromUUIDString(dir, uuid).state, 'prepared', 'still prepared')
})

t.test('stop of several pods at once; an unknown one does not stop the others', async (t) => {
  const dir = dataDir(t)
  const a = await runDetached(t, dir, ['--', 'sleep', '1000'])
  const b = await runDetached(t, dir, ['--', 'sh', '-c', 'trap "exit 3" TERM; echo trapped; while :; do sleep 0.05; done'])
  const pa = await appRunning(dir, a)
  const pb = await appRunning(dir, b)
  // Running is not yet trapping: a SIGTERM before the trap ends sh with 143.
  await pollUntil('b to set its trap', () => podctl(dir, ['logs', b]).stdout.includes('trapped'))
  const r = podctl(dir, ['stop', a, b, 'ffffffff'])
  t.equal(r.status, 3, 'no pod matches ffffffff: 3')
  t.match(r.stderr, /ffffffff/)
  t.same(r.stdout.trim().split('\n'), [a, b], 'both real pods were stopped, reported in argument order')
  const va = await assertStopped(t, dir, a, [pa])
  const vb = await assertStopped(t, dir, b, [pb])
  t.equal(va.apps[0].exit_code, 143)
  t.equal(vb.apps[0].exit_code, 3, "b's trap decided its exit code")
  const again = podctl(dir, ['stop', a, b])
  t.equal(again.status, 0, 'stopping both again is a no-op')
})

t.test('stop of a pod running in the foreground: podctl run exits with the app code', async (t) => {
  const dir = dataDir(t)
  const uuidFile = path.join(dir, 'uuid')
  const run = startPodctl(t, dir, ['run', '--uuid-file-save', uuidFile, '--', 'sh', '-c', 'echo ready; while :; do sleep 0.05; done'])
  await run.line(/^ready$/)
  const uuid = fs.readFileSync(uuidFile, 'utf8').trim()
  const r = podctl(dir, ['stop', uuid])
  t.equal(r.status, 0, r.stderr)
  const fg = await run.done
  t.equal(fg.status, 143, 'the foreground podctl exits with the pod exit code')
  t.equal(podFromUUIDString(dir, uuid).state, 'exited')
})

t.test('stop of several pods: the exit code is the first failure in argument order', async (t) => {
  const dir = dataDir(t)
  const prepared = podctl(dir, ['prepare', '--', 'true']).stdout.trim()
  const a = await runDetached(t, dir, ['--', 'sleep', '1000'])
  for (let i = 0; i < 3; i++) {
    const r = podctl(dir, ['stop', prepared, 'ffffffff', a])
    t.equal(r.status, 4, `round ${i}: the prepared pod, given first, decides: 4`)
    t.match(r.stderr, /never ran[\s\S]*no pod matches "ffffffff"/, 'errors in argument order')
    t.equal(r.stdout, `${a}\n`, 'the running pod was stopped all the same')
  }
})
