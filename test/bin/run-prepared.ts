// Black-box tests of `podctl run-prepared` (CONTRACT §2, §4): spawns bin/podctl.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { podRecord, pollUntil, type Test, UUID_RE } from '../helpers/common.js'
import { podctl, podctlJson, startPodctl } from '../helpers/cli-util.js'
import { alive, dataDir } from '../helpers/run-util.js'

const prepare = async (t: Test, dir: string, args: string[]): Promise<string> => {
  const r = podctl(dir, ['prepare', ...args])
  t.equal(r.status, 0, 'prepared', { stderr: r.stderr })
  return r.stdout.trim()
}

t.test('run-prepared in the foreground runs the pod and exits with its code', async (t) => {
  const dir = dataDir(t)
  const uuid = await prepare(t, dir, ['--', 'sh', '-c', 'echo "running $PODCTL_POD_UUID"; exit 6'])
  const r = podctl(dir, ['run-prepared', uuid.slice(0, 8)])
  t.equal(r.status, 6)
  t.equal(r.stdout, `running ${uuid}\n`)
  t.equal(r.stderr, '')
  const v = await podctlJson(t, dir, ['status', uuid, '--format', 'json'])
  t.match(v, { state: 'exited', exit_code: 6, apps: [{ state: 'exited', exit_code: 6 }] })
  const again = podctl(dir, ['run-prepared', uuid])
  t.equal(again.status, 4, 'an exited pod cannot run again')
  t.match(again.stderr, /exited/)
})

t.test('run-prepared of no such pod exits 3', async (t) => {
  const dir = dataDir(t)
  const r = podctl(dir, ['run-prepared', '--detach', 'abcdef12'])
  t.equal(r.status, 3)
  t.equal(r.stdout, '')
})

t.test('an app whose program vanished between prepare and run exits 127', async (t) => {
  const dir = dataDir(t)
  const prog = path.join(dir, 'prog.sh')
  fs.writeFileSync(prog, '#!/bin/sh\necho from prog\n', { mode: 0o755 })
  const m = path.join(dir, 'm.json')
  fs.writeFileSync(m, JSON.stringify({ apiVersion: 'podctl/v1', apps: [{ name: 'gone', exec: [prog] }, { name: 'fine', exec: ['/bin/sh', '-c', 'echo fine'] }] }))
  const uuid = await prepare(t, dir, ['--manifest', m])
  fs.rmSync(prog)
  const r = podctl(dir, ['run-prepared', uuid])
  t.equal(r.status, 127, 'like a shell: command not found')
  t.match(r.stderr, /app gone could not start/)
  t.match(r.stdout, /^\[fine\] fine$/m, 'the other app still ran')
  const v = await podctlJson(t, dir, ['status', uuid, '--format', 'json'])
  t.match(v.apps, [{ name: 'gone', state: 'exited', exit_code: 127 }, { name: 'fine', exit_code: 0 }])
  const log = podctl(dir, ['logs', uuid, '--app', 'gone'])
  t.match(log.stdout, /could not start/, 'the failure is in the app log too')
})

t.test('8 concurrent run-prepared --detach: exactly one runs the pod, the others exit 4', async (t) => {
  const dir = dataDir(t)
  for (let round = 0; round < 3; round++) {
    const uuid = await prepare(t, dir, ['--', 'sleep', '1000'])
    const runs = await Promise.all(Array.from({ length: 8 }, () => startPodctl(t, dir, ['run-prepared', '--detach', uuid]).done))
    const winners = runs.filter((r) => r.status === 0)
    const losers = runs.filter((r) => r.status !== 0)
    t.equal(winners.length, 1, `round ${round}: exactly one winner`, { results: runs })
    t.equal(winners[0]?.stdout, `${uuid}\n`, `round ${round}: the winner prints the UUID`)
    t.same(
      losers.map((r) => r.status),
      Array(7).fill(4),
      `round ${round}: every loser exits 4`,
      { stderr: losers.map((r) => r.stderr) },
    )
    for (const l of losers) {
      t.equal(l.stdout, '', 'a loser prints nothing on stdout')
      t.match(l.stderr, /^podctl: pod \S+ is (already )?running|not prepared|only a prepared pod|gone/, 'a loser says the pod is already running (or gone)')
    }
    const v = await podctlJson(t, dir, ['status', uuid, '--format', 'json'])
    t.equal(v.state, 'running', `round ${round}: the pod runs`)
    t.ok(alive(v.pid), 'under one live supervisor')
    const app = await pollUntil('the app to run', () => (podRecord(dir, uuid).apps[0].pid as number | null) ?? undefined)
    t.equal(podctl(dir, ['stop', '--force', uuid]).status, 0)
    await pollUntil('the app to die', () => !alive(app))
  }
})

t.test('8 concurrent foreground run-prepared: one runs it, the others exit 4', async (t) => {
  const dir = dataDir(t)
  const uuid = await prepare(t, dir, ['--', 'sh', '-c', 'echo ran; exit 0'])
  const runs = await Promise.all(Array.from({ length: 8 }, () => startPodctl(t, dir, ['run-prepared', uuid]).done))
  const winners = runs.filter((r) => r.stdout === 'ran\n')
  t.equal(winners.length, 1, 'the app ran once', { results: runs })
  t.equal(winners[0]?.status, 0)
  const losers = runs.filter((r) => r.stdout !== 'ran\n')
  t.notOk(losers.some((r) => r.status === 0), 'no loser claims success', { results: runs })
  t.same(
    losers.map((r) => r.status),
    Array(7).fill(4),
    'the others exit 4',
    { results: runs },
  )
  for (const l of losers) t.equal(l.stdout, '', 'a loser prints nothing on stdout')
  t.equal(podFromUUIDString(dir, uuid).state, 'exited')
  t.match(uuid, UUID_RE)
})
