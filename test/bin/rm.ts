// Black-box tests of `podctl rm` (CONTRACT §4): spawns bin/podctl.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { listTree, STACK_RE, type Test, whereIs } from '../helpers/common.js'
import { abortedPod, exitedGarbagePod, exitedPod, garbagePod, podctl, preparedPod, preparingPod } from '../helpers/cli-util.js'
import { holdRunning } from '../helpers/pod-util.js'

/** Asserts the pod is gone: no directory in any state dir, no lock left behind. */
const gone = (t: Test, dir: string, uuid: string): void => {
  t.equal(whereIs(dir, uuid), undefined, `pod ${uuid.slice(0, 8)} has no directory left`)
  t.equal(fs.lstatSync(path.join(dir, 'locks', uuid), { throwIfNoEntry: false }) !== undefined, false, `pod ${uuid.slice(0, 8)} has no lock left`)
}

t.test('removes a prepared pod and an exited pod', async (t) => {
  const dir = t.testdir({})
  const prepared = await preparedPod(dir)
  const exited = await exitedPod(dir)
  const keep = await preparedPod(dir)
  const r = podctl(dir, ['rm', prepared, exited])
  t.equal(r.status, 0)
  t.equal(r.stdout, `${prepared}\n${exited}\n`, 'stdout lists the removed UUIDs, in order')
  t.equal(r.stderr, '')
  gone(t, dir, prepared)
  gone(t, dir, exited)
  t.equal(whereIs(dir, keep), 'prepared', 'another pod is untouched')
  const list = JSON.parse(podctl(dir, ['list', '--format', 'json']).stdout) as { uuid: string }[]
  t.strictSame(list.map((p) => p.uuid), [keep])
})

t.test('removes pods in the other states that are not running', async (t) => {
  const dir = t.testdir({})
  const pods = {
    'aborted prepare': await abortedPod(dir),
    'exited garbage': await exitedGarbagePod(dir),
    garbage: await garbagePod(dir),
  }
  for (const [state, uuid] of Object.entries(pods)) {
    const r = podctl(dir, ['rm', uuid])
    t.equal(r.status, 0, `rm of a pod in ${state}`)
    t.equal(r.stdout, `${uuid}\n`)
    gone(t, dir, uuid)
  }
})

t.test('a UUID prefix works and prints the full UUID', async (t) => {
  const dir = t.testdir({})
  const uuid = await exitedPod(dir)
  const r = podctl(dir, ['rm', uuid.slice(0, 8)])
  t.equal(r.status, 0)
  t.equal(r.stdout, `${uuid}\n`)
  gone(t, dir, uuid)
})

t.test('a running pod is refused with a hint, and untouched', async (t) => {
  const dir = t.testdir({})
  const uuid = await preparedPod(dir)
  await holdRunning(t, dir, uuid)
  const before = listTree(path.join(dir, 'pods'))
  const r = podctl(dir, ['rm', uuid])
  t.equal(r.status, 4, 'exit 4')
  t.equal(r.stdout, '')
  const short = uuid.slice(0, 8)
  t.match(r.stderr, new RegExp(`^podctl: pod ${short} is running`), 'says which pod and why')
  t.match(r.stderr, `stop it: podctl stop ${short}`, 'the hint')
  t.notMatch(r.stderr, STACK_RE)
  t.strictSame(listTree(path.join(dir, 'pods')), before, 'nothing moved')
  t.equal(podctl(dir, ['status', uuid]).stdout.split('\n')[0], 'state=running', 'still running')

  const json = podctl(dir, ['rm', uuid, '--format', 'json'])
  t.equal(json.status, 2, 'rm has no --format')
})

t.test('a pod being prepared is refused and untouched', async (t) => {
  const dir = t.testdir({})
  const pod = await preparingPod(t, dir)
  const r = podctl(dir, ['rm', pod.uuid])
  t.equal(r.status, 4)
  t.match(r.stderr, /^podctl: pod [0-9a-f]{8} is preparing/)
  t.equal(whereIs(dir, pod.uuid), 'prepare')
})

t.test('several pods with one bad: the others go, and the exit is non-zero', async (t) => {
  const dir = t.testdir({})
  const running = await preparedPod(dir)
  await holdRunning(t, dir, running)
  const missing = '0f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f0f'
  const cases: { bad: string; status: number }[] = [
    { bad: running, status: 4 },
    { bad: missing, status: 3 },
    { bad: 'not-a-uuid', status: 2 },
  ]
  for (const c of cases) {
    const a = await exitedPod(dir)
    const b = await preparedPod(dir)
    const r = podctl(dir, ['rm', a, c.bad, b])
    t.equal(r.status, c.status, `with ${c.bad}: exit ${c.status}`)
    t.equal(r.stdout, `${a}\n${b}\n`, 'the good ones are listed')
    t.match(r.stderr, /^podctl: /, 'the bad one is reported')
    t.equal(r.stderr.split('\n').filter((l) => l.startsWith('podctl: ')).length, 1, 'once')
    t.notMatch(r.stderr, STACK_RE)
    gone(t, dir, a)
    gone(t, dir, b)
  }
  t.equal(whereIs(dir, running), 'run', 'the running pod is still there')
})

t.test('--uuid-file', async (t) => {
  const dir = t.testdir({ 'bad.uuid': 'hello\n', 'empty.uuid': '' })
  const file = path.join(dir, 'pod.uuid')
  const p = podctl(dir, ['prepare', '--uuid-file-save', file, '--', 'true'])
  t.equal(p.status, 0)
  const uuid = p.stdout.trim()
  const other = await exitedPod(dir)
  const r = podctl(dir, ['rm', other, '--uuid-file', file])
  t.equal(r.status, 0)
  t.same(r.stdout.split('\n').filter(Boolean).sort(), [uuid, other].sort(), 'both removed')
  gone(t, dir, uuid)
  gone(t, dir, other)

  for (const f of ['bad.uuid', 'empty.uuid', 'missing.uuid']) {
    const bad = podctl(dir, ['rm', '--uuid-file', path.join(dir, f)])
    t.equal(bad.status, 2, `--uuid-file ${f}: exit 2`)
    t.match(bad.stderr, /^podctl: .*UUID file/)
  }
})

t.test('no pod given is a usage error', async (t) => {
  const dir = t.testdir({})
  const r = podctl(dir, ['rm'])
  t.equal(r.status, 2)
  t.equal(r.stdout, '')
  t.match(r.stderr, /^podctl: /)
})

t.test('removing a pod twice: the second time there is no such pod', async (t) => {
  const dir = t.testdir({})
  const uuid = await exitedPod(dir)
  t.equal(podctl(dir, ['rm', uuid]).status, 0)
  const again = podctl(dir, ['rm', uuid])
  t.equal(again.status, 3)
  t.equal(again.stdout, '')
  t.match(again.stderr, /^podctl: no such pod/)
})
