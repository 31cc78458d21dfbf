// Black-box tests of `podctl status` (CONTRACT §4, §5): spawns bin/podctl.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { STACK_RE, TIME_RE, manifest, whereIs } from '../helpers/common.js'
import { exitedPod, podctl, podctlAsync, podShapeProblems, preparedPod } from '../helpers/cli-util.js'
import { holdRunning } from '../helpers/pod-util.js'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { readRecord, writeRecord } from '../../lib/pod/record.js'

/** key=value lines → object; every line must be one. */
const keyValues = (out: string): Record<string, string> => {
  const lines = out.split('\n')
  if (lines.pop() !== '') throw new Error(`output does not end with a newline: ${JSON.stringify(out)}`)
  const kv: Record<string, string> = {}
  for (const l of lines) {
    // A network's name may hold "_", "." and capitals (network-NAME=).
    const m = /^([a-z][A-Za-z0-9_.-]*)=(.*)$/.exec(l)
    if (!m) throw new Error(`not a key=value line: ${JSON.stringify(l)}`)
    if (m[1]! in kv) throw new Error(`key ${m[1]} twice`)
    kv[m[1]!] = m[2]!
  }
  return kv
}

t.test('key=value lines for a prepared pod', async (t) => {
  const dir = t.testdir({})
  const uuid = await preparedPod(dir)
  const r = podctl(dir, ['status', uuid])
  t.equal(r.status, 0)
  t.equal(r.stderr, '')
  const kv = keyValues(r.stdout)
  t.equal(kv.state, 'prepared')
  t.match(kv.created, TIME_RE, 'created= in RFC 3339')
  t.equal(kv.exited, 'false')
  t.notOk('started' in kv, 'no started= for a pod that never started')
  t.match(r.stdout, /^state=/, 'state= comes first')
  const json = JSON.parse(podctl(dir, ['status', uuid, '--format', 'json']).stdout) as Record<string, unknown>
  t.equal(kv.created, json.created_at, 'the same time as the JSON')
})

t.test("--uuid-file names the pod, as rkt's status takes it (TestUuidFile)", async (t) => {
  const dir = t.testdir({})
  const file = path.join(dir, 'pod.uuid')
  const prep = podctl(dir, ['prepare', '--uuid-file-save', file, '--', 'true'])
  t.equal(prep.status, 0, prep.stderr)
  const r = podctl(dir, ['status', '--uuid-file', file, '--format', 'json'])
  t.equal(r.status, 0, r.stderr)
  t.equal(JSON.parse(r.stdout).uuid, prep.stdout.trim(), 'the pod of the file')
  const both = podctl(dir, ['status', prep.stdout.trim(), '--uuid-file', file])
  t.equal(both.status, 2, 'a UUID and --uuid-file: exit 2')
  t.match(both.stderr, /not both/)
  const none = podctl(dir, ['status', '--uuid-file', path.join(dir, 'missing')])
  t.not(none.status, 0, 'a file that is not there is an error')
  t.notMatch(none.stderr, STACK_RE)
})

t.test('an exited pod says exited=true', async (t) => {
  const dir = t.testdir({})
  const uuid = await exitedPod(dir)
  const kv = keyValues(podctl(dir, ['status', uuid]).stdout)
  t.equal(kv.state, 'exited')
  t.equal(kv.exited, 'true')
})

t.test('--format json and json-pretty give the CONTRACT §5 object', async (t) => {
  const dir = t.testdir({})
  const uuid = await exitedPod(dir)
  const r = podctl(dir, ['status', uuid, '--format', 'json'])
  t.equal(r.status, 0)
  t.equal(r.stderr, '')
  t.match(r.stdout, /^\{.*\}\n$/, 'one line of JSON')
  const v = JSON.parse(r.stdout) as Record<string, unknown>
  t.strictSame(podShapeProblems(v), [])
  t.equal(v.uuid, uuid)
  t.equal(v.state, 'exited')
  const pretty = podctl(dir, ['status', uuid, '--format', 'json-pretty'])
  t.equal(pretty.status, 0)
  t.strictSame(JSON.parse(pretty.stdout), v)
  t.match(pretty.stdout, /^\{\n {2}"uuid": /)
  const list = JSON.parse(podctl(dir, ['list', '--format', 'json']).stdout) as unknown[]
  t.strictSame(list, [v], 'status and list agree')
})

t.test('network-NAME= lines and "networks" in the JSON: where the runtime attached the pod (CONTRACT §14)', async (t) => {
  const dir = t.testdir({})
  const uuid = await exitedPod(dir)
  const bare = keyValues(podctl(dir, ['status', uuid]).stdout)
  t.strictSame(Object.keys(bare).filter((k) => k.startsWith('network')), [], 'a pod attached to nothing has no network lines')
  t.equal(JSON.parse(podctl(dir, ['status', uuid, '--format', 'json']).stdout).networks, null, 'and networks null')
  const networks = [
    { name: 'bridge', ip: '10.90.0.5', ip6: 'fd90::5', iface: 'eth0', mac: '0a:58:0a:5a:00:05' },
    { name: 'front.v6', ip: null, ip6: 'fd91::7', iface: 'eth1', mac: null },
    { name: 'lab', ip: null, ip6: null, iface: 'eth2', mac: null },
  ]
  // As the runtime records them, through the pod room's record functions, in a running pod.
  const exited = uuid
  writeRecord(podFromUUIDString(dir, exited).path, { ...readRecord(podFromUUIDString(dir, exited).path)!, networks })
  t.strictSame(Object.keys(keyValues(podctl(dir, ['status', exited]).stdout)).filter((k) => k.startsWith('network')), [], "a pod that is not running is attached to nothing, whatever its record says (a killed supervisor's)")
  t.equal(JSON.parse(podctl(dir, ['status', exited, '--format', 'json']).stdout).networks, null, 'and networks null')
  const running = await preparedPod(dir)
  await holdRunning(t, dir, running)
  const pod = podFromUUIDString(dir, running)
  writeRecord(pod.path, { ...readRecord(pod.path)!, networks })
  const r = podctl(dir, ['status', running])
  t.equal(r.status, 0, r.stderr)
  const kv = keyValues(r.stdout)
  t.strictSame(
    Object.fromEntries(Object.entries(kv).filter(([k]) => k.startsWith('network'))),
    { 'network-bridge': '10.90.0.5', 'network-bridge-ip6': 'fd90::5', 'network-front.v6': 'fd91::7', 'network-lab': '' },
    'the IPv4 address, else the IPv6 one; the IPv6 one beside an IPv4 one on a line of its own',
  )
  t.match(r.stdout, /\nexited=false\nnetwork-bridge=10\.90\.0\.5\n/, 'after exited=, before the apps, as the app lines are made')
  const json = JSON.parse(podctl(dir, ['status', running, '--format', 'json']).stdout) as Record<string, unknown>
  t.strictSame(json.networks, networks, 'the JSON has them whole')
  t.strictSame(podShapeProblems(json), [])
  // A value that is not one line (a record edited by hand, a fleet's pod) is shown on one.
  writeRecord(pod.path, { ...readRecord(pod.path)!, networks: [{ name: 'bridge', ip: '10.90.0.5\nstate=running', ip6: null, iface: 'eth0', mac: null }] })
  const escaped = podctl(dir, ['status', running])
  t.equal(escaped.stdout.split('\n').filter((l) => l.startsWith('state=')).length, 1, 'no second state= line')
  t.match(escaped.stdout, /^network-bridge=10\.90\.0\.5\\nstate=running$/m)
})

t.test('a UUID prefix works', async (t) => {
  const dir = t.testdir({})
  const uuid = await preparedPod(dir)
  for (const prefix of [uuid.slice(0, 8), uuid.slice(0, 13), uuid.slice(0, 1)]) {
    const r = podctl(dir, ['status', prefix, '--format', 'json'])
    t.equal(r.status, 0, `prefix ${prefix}`)
    t.equal((JSON.parse(r.stdout) as { uuid: string }).uuid, uuid, 'resolves to the full UUID')
  }
})

t.test('an ambiguous prefix is exit 3 listing the candidates', async (t) => {
  const dir = t.testdir({})
  // 17 pods always include two with the same first hex digit.
  const byDigit = new Map<string, string[]>()
  let pair: string[] | undefined
  for (let i = 0; i < 17 && !pair; i++) {
    const u = await preparedPod(dir)
    const same = [...(byDigit.get(u[0]!) ?? []), u]
    byDigit.set(u[0]!, same)
    if (same.length === 2) pair = same
  }
  t.ok(pair, 'two pods share a first digit')
  const [a, b] = pair!
  const r = podctl(dir, ['status', a![0]!])
  t.equal(r.status, 3)
  t.equal(r.stdout, '')
  t.match(r.stderr, /^podctl: .*ambiguous/)
  t.match(r.stderr, a!, 'names the first candidate')
  t.match(r.stderr, b!, 'names the second candidate')
  t.notMatch(r.stderr, STACK_RE)
  // One more character (where they differ) resolves.
  let n = 1
  while (a!.slice(0, n) === b!.slice(0, n)) n++
  const ok = podctl(dir, ['status', a!.slice(0, n), '--format', 'json'])
  t.equal(ok.status, 0)
  t.equal((JSON.parse(ok.stdout) as { uuid: string }).uuid, a)
})

t.test('no such pod is exit 3', async (t) => {
  const dir = t.testdir({})
  const uuid = await preparedPod(dir)
  const other = uuid[0] === 'f' ? '0' : 'f'
  for (const arg of [`${other}${uuid.slice(1)}`, `${other}${uuid.slice(1, 6)}`]) {
    const r = podctl(dir, ['status', arg])
    t.equal(r.status, 3, `status ${arg}`)
    t.equal(r.stdout, '')
    t.match(r.stderr, /^podctl: .*(no such pod|no pod matches)/)
    t.notMatch(r.stderr, STACK_RE)
  }
  // ... also in a data dir that does not exist (and it is not created).
  const none = path.join(dir, 'none')
  t.equal(podctl(none, ['status', uuid]).status, 3)
  t.equal(podctl(none, ['status', uuid.slice(0, 4)]).status, 3)
  t.equal(fs.existsSync(none), false)
})

t.test('a pod\'s name picks no pod, and the error lists the pods of that name', async (t) => {
  const dir = t.testdir({})
  const older = await exitedPod(dir, manifest({ name: 'web' }))
  const newer = await preparedPod(dir, manifest({ name: 'web' }))
  const other = await preparedPod(dir, manifest({ name: 'api' }))
  for (const cmd of [['status'], ['stop'], ['logs'], ['cat-manifest'], ['rm']]) {
    const r = podctl(dir, [...cmd, 'web'])
    t.equal(r.status, 2, `${cmd[0]} web: exit 2, as for anything that is not a UUID`)
    t.equal(r.stdout, '')
    t.equal(r.stderr, `podctl: "web" is not a pod UUID or a prefix of one\nnames are not unique, so give a UUID; the 2 pods named web: ${newer.slice(0, 8)} (prepared), ${older.slice(0, 8)} (exited)\n`, `${cmd[0]} web: both pods of that name, newest first`)
  }
  t.ok(fs.existsSync(path.join(dir, 'pods', 'run', older)) && fs.existsSync(path.join(dir, 'pods', 'prepared', newer)), 'rm web removed nothing')
  // A name made of hex digits is tried as a prefix first; when no UUID starts with it, exit 3 with the same list.
  const hex = [...'0123456789abcdef'].find((c) => ![older, newer, other].some((u) => u.startsWith(c)))!
  const cafe = await preparedPod(dir, manifest({ name: `${hex}cafe` }))
  if (!cafe.startsWith(`${hex}cafe`)) {
    const r = podctl(dir, ['status', `${hex}cafe`])
    t.equal(r.status, 3)
    t.equal(r.stderr, `podctl: no pod matches "${hex}cafe"\nnames are not unique, so give a UUID; the pod named ${hex}cafe: ${cafe.slice(0, 8)} (prepared)\n`)
  }
  // A name no pod has: the error as before, no list.
  t.equal(podctl(dir, ['status', 'cache']).stderr, 'podctl: "cache" is not a pod UUID or a prefix of one\nUUIDs look like 8c3b1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a; see podctl list\n')
})

t.test('a malformed UUID is exit 2', async (t) => {
  const dir = t.testdir({})
  await preparedPod(dir)
  for (const arg of ['xyz', 'not-a-uuid', '', '-', '12345678-1234-4234-8234-1234567890123', '12345678-1234-1234-1234-123456789012', '../etc']) {
    const r = podctl(dir, ['status', arg])
    t.equal(r.status, 2, `status ${JSON.stringify(arg)}`)
    t.equal(r.stdout, '')
    t.match(r.stderr, /^podctl: /)
    t.notMatch(r.stderr, STACK_RE)
  }
})

t.test('a running pod, and --wait', async (t) => {
  const dir = t.testdir({})
  const uuid = await preparedPod(dir)
  const holder = await holdRunning(t, dir, uuid)

  const kv = keyValues(podctl(dir, ['status', uuid]).stdout)
  t.equal(kv.state, 'running')
  t.equal(kv.exited, 'false')

  const timeout = podctl(dir, ['status', uuid, '--wait=100ms'])
  t.equal(timeout.status, 5, '--wait=100ms on a running pod times out: exit 5')
  t.equal(timeout.stdout, '')
  t.match(timeout.stderr, /^podctl: .*timed out/)
  t.notMatch(timeout.stderr, STACK_RE)

  const json = podctl(dir, ['status', uuid, '--wait=1ms', '--format', 'json'])
  t.equal(json.status, 5)
  t.match(JSON.parse(json.stderr.split('\n').find((l) => l.startsWith('{'))!), { error: { code: 'ETIMEOUT' } })

  const waitReady = podctl(dir, ['status', uuid, '--wait-ready=100ms'])
  t.equal(waitReady.status, 5, '--wait-ready on a pod whose supervisor never says ready: exit 5')

  t.equal(whereIs(dir, uuid), 'run', 'still in run/')
  // An unbounded --wait returns once the holder lets go.
  const waiting = podctlAsync(t, dir, ['status', uuid, '--wait'])
  const released = await holder.release()
  t.equal(released.code, 0, 'the lock holder exited cleanly')
  const done = await waiting
  t.equal(done.status, 0, '--wait returns 0 once the pod has exited')
  t.equal(done.stderr, '')
  t.equal(keyValues(done.stdout).state, 'exited')
})

t.test('--wait on an exited pod returns at once', async (t) => {
  const dir = t.testdir({})
  const uuid = await exitedPod(dir)
  for (const wait of ['--wait', '--wait=0s', '--wait=1h']) {
    const r = podctl(dir, ['status', uuid, wait])
    t.equal(r.status, 0, wait)
    t.equal(r.stderr, '')
    t.equal(keyValues(r.stdout).state, 'exited')
  }
  const ready = podctl(dir, ['status', uuid, '--wait-ready=1h'])
  t.equal(ready.status, 4, '--wait-ready on an exited pod: it will never be ready')
  t.match(ready.stderr, /^podctl: /)
})

t.test('a bad duration is exit 2', async (t) => {
  const dir = t.testdir({})
  const uuid = await exitedPod(dir)
  for (const d of ['--wait=abc', '--wait=10', '--wait=-1s', '--wait=1d', '--wait-ready=soon', '--wait=']) {
    const r = podctl(dir, ['status', uuid, d])
    t.equal(r.status, 2, d)
    t.equal(r.stdout, '')
    t.match(r.stderr, /^podctl: .*(duration|wait)/)
    t.notMatch(r.stderr, STACK_RE)
  }
  // Go syntax is accepted.
  for (const d of ['--wait=1h30m', '--wait=1.5s', '--wait=300ms', '--wait=0']) t.equal(podctl(dir, ['status', uuid, d]).status, 0, d)
})

t.test('--wait before the UUID, as rkt users type it', async (t) => {
  // CONTRACT §4 writes --wait[=DURATION]: a duration only comes after "=".
  const dir = t.testdir({})
  const uuid = await exitedPod(dir)
  for (const flag of ['--wait', '--wait-ready']) {
    const r = podctl(dir, ['status', flag, uuid])
    t.notMatch(r.stderr, /missing required argument/, `status ${flag} UUID: the UUID is not taken as a duration`)
  }
  const r = podctl(dir, ['status', '--wait', uuid])
  t.equal(r.status, 0, 'status --wait UUID on an exited pod: exit 0')
  t.match(r.stdout, /^state=exited$/m, 'and its status')
})
