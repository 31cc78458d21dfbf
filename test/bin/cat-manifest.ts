// Black-box tests of `podctl cat-manifest` (CONTRACT §4): spawns bin/podctl.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { manifest, STACK_RE, whereIs } from '../helpers/common.js'
import { exitedPod, podctl, preparedPod } from '../helpers/cli-util.js'

const stored = (dir: string, uuid: string): string =>
  fs.readFileSync(path.join(dir, 'pods', whereIs(dir, uuid)!, uuid, 'manifest'), 'utf8')

t.test('prints the manifest as stored', async (t) => {
  const m = {
    apiVersion: 'podctl/v1',
    name: 'web',
    labels: { team: 'infra' },
    apps: [{ name: 'web', exec: ['sleep', '60'], env: { B: '2', A: '1' } }],
  }
  // Written with odd spacing: what is stored (and printed) is podctl's own form.
  const dir = t.testdir({ 'm.json': JSON.stringify(m, null, 7) })
  const p = podctl(dir, ['prepare', '--manifest', path.join(dir, 'm.json'), '--env', 'C=3'])
  t.equal(p.status, 0)
  const uuid = p.stdout.trim()
  const r = podctl(dir, ['cat-manifest', uuid])
  t.equal(r.status, 0)
  t.equal(r.stderr, '')
  const raw = stored(dir, uuid)
  t.equal(r.stdout, raw.endsWith('\n') ? raw : `${raw}\n`, 'byte for byte what is stored, ending in a newline')
  const expected = { ...m, apps: [{ ...m.apps[0]!, env: { B: '2', A: '1', C: '3' } }] }
  t.strictSame(JSON.parse(r.stdout), expected, 'the manifest given, with --env applied')
  t.strictSame(Object.keys((JSON.parse(r.stdout) as typeof expected).apps[0]!.env), ['B', 'A', 'C'], 'key order kept')

  const pretty = podctl(dir, ['cat-manifest', uuid, '--pretty-print'])
  t.equal(pretty.status, 0)
  t.equal(pretty.stdout, `${JSON.stringify(expected, null, 2)}\n`, '--pretty-print: indented by two')

  const prefix = podctl(dir, ['cat-manifest', uuid.slice(0, 6)])
  t.equal(prefix.status, 0)
  t.equal(prefix.stdout, r.stdout, 'a prefix works')
})

t.test('works for an exited pod and a -- CMD pod', async (t) => {
  const dir = t.testdir({})
  const m = manifest({ name: 'done' })
  const uuid = await exitedPod(dir, m)
  t.strictSame(JSON.parse(podctl(dir, ['cat-manifest', uuid]).stdout), m)
  const p = podctl(dir, ['prepare', '--', 'sleep', '5'])
  const cmd = podctl(dir, ['cat-manifest', p.stdout.trim()])
  t.strictSame(JSON.parse(cmd.stdout), { apiVersion: 'podctl/v1', apps: [{ name: 'sleep', exec: ['sleep', '5'] }] })
})

t.test('errors', async (t) => {
  const dir = t.testdir({})
  const uuid = await preparedPod(dir)
  const missing = `${uuid[0] === 'a' ? 'b' : 'a'}${uuid.slice(1)}`
  const none = podctl(dir, ['cat-manifest', missing])
  t.equal(none.status, 3, 'no such pod: exit 3')
  t.equal(none.stdout, '')
  t.match(none.stderr, /^podctl: no such pod/)
  const bad = podctl(dir, ['cat-manifest', 'nope'])
  t.equal(bad.status, 2, 'a malformed UUID: exit 2')
  t.notMatch(bad.stderr, STACK_RE)
  const noArg = podctl(dir, ['cat-manifest'])
  t.equal(noArg.status, 2, 'no UUID: exit 2')
  t.match(noArg.stderr, /^podctl: .*uuid/i)

  // A damaged stored manifest is a failure (1), reported without a stack.
  fs.writeFileSync(path.join(dir, 'pods', 'prepared', uuid, 'manifest'), '{"apiVersion": ')
  const damaged = podctl(dir, ['cat-manifest', uuid])
  t.equal(damaged.status, 1)
  t.match(damaged.stderr, /^podctl: .*manifest/)
  t.notMatch(damaged.stderr, STACK_RE)
})
