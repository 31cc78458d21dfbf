// Black-box tests of `podctl prepare` (CONTRACT §3, §4): spawns bin/podctl.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { listTree, manifest, podsIn, type Test, UUID_RE } from '../helpers/common.js'
import { podctl, preparedPod } from '../helpers/cli-util.js'

/** The stored manifest of a prepared pod, parsed. */
const stored = (dir: string, uuid: string): unknown =>
  JSON.parse(fs.readFileSync(path.join(dir, 'pods', 'prepared', uuid, 'manifest'), 'utf8'))

/** Asserts a successful prepare and returns the UUID it printed. */
const accepted = (t: Test, r: ReturnType<typeof podctl>): string => {
  t.equal(r.status, 0, 'exit 0')
  t.equal(r.stderr, '', 'nothing on stderr')
  t.match(r.stdout, /^[0-9a-f-]{36}\n$/, 'stdout is exactly one UUID and a newline')
  const uuid = r.stdout.trim()
  t.match(uuid, UUID_RE, 'an RFC 4122 v4 UUID in lower case')
  return uuid
}

t.test('-- CMD ARGS makes a one-app prepared pod', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const r = podctl(dir, ['prepare', '--', 'sleep', '60'])
  const uuid = accepted(t, r)
  t.strictSame(podsIn(dir, 'prepared'), [uuid], 'the pod is in prepared/')
  t.strictSame(stored(dir, uuid), { apiVersion: 'podctl/v1', apps: [{ name: 'sleep', exec: ['sleep', '60'] }] })
  const st = podctl(dir, ['status', uuid])
  t.equal(st.status, 0)
  t.match(st.stdout, /^state=prepared$/m)
  // CONTRACT §1: dirs 0750, files 0640.
  t.equal(fs.statSync(dir).mode & 0o777, 0o750, 'data dir is 0750')
  t.equal(fs.statSync(path.join(dir, 'pods', 'prepared', uuid)).mode & 0o777, 0o750, 'pod dir is 0750')
  t.equal(fs.statSync(path.join(dir, 'pods', 'prepared', uuid, 'manifest')).mode & 0o777, 0o640, 'manifest is 0640')
})

t.test('-- CMD with an absolute path and arguments that look like flags', async (t) => {
  const dir = t.testdir({})
  const r = podctl(dir, ['prepare', '--', '/bin/sh', '-c', 'echo --format json'])
  const uuid = accepted(t, r)
  t.strictSame(stored(dir, uuid), { apiVersion: 'podctl/v1', apps: [{ name: 'sh', exec: ['/bin/sh', '-c', 'echo --format json'] }] })
})

t.test('two prepares make two different pods', async (t) => {
  const dir = t.testdir({})
  const a = accepted(t, podctl(dir, ['prepare', '--', 'true']))
  const b = accepted(t, podctl(dir, ['prepare', '--', 'true']))
  t.not(a, b)
  t.strictSame(podsIn(dir, 'prepared'), [a, b].sort())
})

t.test('--manifest FILE stores the manifest', async (t) => {
  const m = {
    apiVersion: 'podctl/v1',
    name: 'web',
    labels: { team: 'infra' },
    annotations: { note: 'free text' },
    apps: [
      { name: 'migrate', type: 'init', exec: ['/bin/sh', '-c', 'echo migrating'], env: { KEY: 'value' }, workingDirectory: '/' },
      { name: 'web', exec: ['sleep', '60'], mounts: [{ volume: 'data', path: '/var/lib/data', readOnly: false }] },
    ],
    volumes: [{ name: 'data', kind: 'empty' }],
  }
  const dir = t.testdir({ 'web.json': JSON.stringify(m, null, 2) })
  const uuid = accepted(t, podctl(dir, ['prepare', '--manifest', path.join(dir, 'web.json')]))
  t.strictSame(stored(dir, uuid), m)
  const st = JSON.parse(podctl(dir, ['status', uuid, '--format', 'json']).stdout) as Record<string, unknown>
  t.equal(st.name, 'web')
  t.strictSame(st.labels, { team: 'infra' })
  t.strictSame(st.annotations, { note: 'free text' })
  t.strictSame((st.apps as { name: string; type: string }[]).map((a) => [a.name, a.type]), [['migrate', 'init'], ['web', 'regular']])
})

t.test('--manifest - reads stdin', async (t) => {
  const dir = t.testdir({})
  const m = manifest({ name: 'from-stdin' })
  const uuid = accepted(t, podctl(dir, ['prepare', '--manifest', '-'], { input: JSON.stringify(m) }))
  t.strictSame(stored(dir, uuid), m)
})

t.test('--name names the pod', async (t) => {
  const dir = t.testdir({ 'm.json': JSON.stringify(manifest({ name: 'old' })) })
  const a = accepted(t, podctl(dir, ['prepare', '--name', 'cmd-pod', '--', 'true']))
  t.equal((stored(dir, a) as { name?: string }).name, 'cmd-pod')
  const b = accepted(t, podctl(dir, ['prepare', '--name', 'new', '--manifest', path.join(dir, 'm.json')]))
  t.equal((stored(dir, b) as { name?: string }).name, 'new', '--name overrides the manifest')
  const list = JSON.parse(podctl(dir, ['list', '--format', 'json']).stdout) as { uuid: string; name: string }[]
  t.strictSame(Object.fromEntries(list.map((p) => [p.uuid, p.name])), { [a]: 'cmd-pod', [b]: 'new' })
})

t.test('--env K=V is stored in every app', async (t) => {
  const m = manifest({
    apps: [
      { name: 'one', exec: ['true'], env: { KEEP: 'x', FOO: 'old' } },
      { name: 'two', exec: ['true'] },
    ],
  })
  const dir = t.testdir({ 'm.json': JSON.stringify(m) })
  const uuid = accepted(
    t,
    podctl(dir, ['prepare', '--manifest', path.join(dir, 'm.json'), '--env', 'FOO=bar', '--env', 'EMPTY=', '--env', 'EQ=a=b']),
  )
  const apps = (stored(dir, uuid) as { apps: { name: string; env?: Record<string, string> }[] }).apps
  t.strictSame(apps[0]!.env, { KEEP: 'x', FOO: 'bar', EMPTY: '', EQ: 'a=b' }, 'flags override and add to the app env')
  t.strictSame(apps[1]!.env, { FOO: 'bar', EMPTY: '', EQ: 'a=b' })

  const cmd = accepted(t, podctl(dir, ['prepare', '--env', 'A=1', '--', 'true']))
  t.strictSame((stored(dir, cmd) as { apps: { env?: unknown }[] }).apps[0]!.env, { A: '1' })
})

t.test('--uuid-file-save writes the UUID', async (t) => {
  const dir = t.testdir({})
  const file = path.join(dir, 'pod.uuid')
  const uuid = accepted(t, podctl(dir, ['prepare', '--uuid-file-save', file, '--', 'true']))
  t.equal(fs.readFileSync(file, 'utf8').trim(), uuid)
  t.equal(podctl(dir, ['status', '--format', 'json', uuid]).status, 0)
})

t.test('--uuid-file-save to an unwritable place fails before anything is prepared', async (t) => {
  const dir = t.testdir({})
  const r = podctl(dir, ['prepare', '--uuid-file-save', path.join(dir, 'missing', 'pod.uuid'), '--', 'true'])
  t.equal(r.status, 2, 'a path that cannot be written is a usage error (CONTRACT §10)')
  t.equal(r.stdout, '', 'no UUID on stdout')
  t.match(r.stderr, /^podctl: .*UUID file/)
  for (const d of ['embryo', 'prepare', 'prepared', 'run', 'exited-garbage', 'garbage']) t.strictSame(podsIn(dir, d), [], `${d}/ is empty`)
  t.equal(podctl(dir, ['list', '--format', 'json']).stdout, '[]\n')
})

// Each refusal: exit 2, stderr names the problem, nothing written.
const refusals: { name: string; args: (dir: string) => string[]; files?: Record<string, string>; input?: string; stderr: RegExp }[] = [
  {
    name: 'invalid JSON',
    files: { 'm.json': '{"apiVersion": "podctl/v1", ' },
    args: (d) => ['prepare', '--manifest', path.join(d, 'm.json')],
    stderr: /^podctl: invalid manifest: not valid JSON/,
  },
  {
    name: 'invalid JSON on stdin',
    input: 'apiVersion: podctl/v1\n',
    args: () => ['prepare', '--manifest', '-'],
    stderr: /^podctl: invalid manifest: not valid JSON/,
  },
  {
    name: 'empty stdin',
    input: '',
    args: () => ['prepare', '--manifest', '-'],
    stderr: /^podctl: invalid manifest: not valid JSON/,
  },
  {
    name: 'unknown top-level field',
    files: { 'm.json': JSON.stringify({ ...manifest(), restartPolicy: 'always' }) },
    args: (d) => ['prepare', '--manifest', path.join(d, 'm.json')],
    stderr: /^podctl: invalid manifest: .*\brestartPolicy: unknown field/,
  },
  {
    name: 'unknown app field',
    files: { 'm.json': JSON.stringify(manifest({ apps: [{ name: 'a', exec: ['true'], cmd: 'x' } as never] })) },
    args: (d) => ['prepare', '--manifest', path.join(d, 'm.json')],
    stderr: /^podctl: invalid manifest: .*apps\[0\]\.cmd: unknown field/,
  },
  {
    name: 'bad app name',
    files: { 'm.json': JSON.stringify(manifest({ apps: [{ name: 'Web_1', exec: ['true'] }] })) },
    args: (d) => ['prepare', '--manifest', path.join(d, 'm.json')],
    stderr: /^podctl: invalid manifest: .*apps\[0\]\.name: "Web_1"/,
  },
  {
    name: 'bad pod name in the manifest',
    files: { 'm.json': JSON.stringify(manifest({ name: '-web' })) },
    args: (d) => ['prepare', '--manifest', path.join(d, 'm.json')],
    stderr: /^podctl: invalid manifest: .*\bname: "-web"/,
  },
  {
    name: 'bad --name',
    args: () => ['prepare', '--name', 'UPPER', '--', 'true'],
    stderr: /^podctl: invalid --name "UPPER": expected 1 to 63 characters/,
  },
  {
    name: 'a name longer than 63 characters',
    args: () => ['prepare', '--name', 'a'.repeat(64), '--', 'true'],
    stderr: /^podctl: invalid --name "a{64}": /,
  },
  {
    name: 'wrong apiVersion',
    files: { 'm.json': JSON.stringify({ ...manifest(), apiVersion: 'podctl/v2' }) },
    args: (d) => ['prepare', '--manifest', path.join(d, 'm.json')],
    stderr: /^podctl: invalid manifest: .*apiVersion: /,
  },
  {
    name: 'no apps',
    files: { 'm.json': JSON.stringify(manifest({ apps: [] })) },
    args: (d) => ['prepare', '--manifest', path.join(d, 'm.json')],
    stderr: /^podctl: invalid manifest: .*apps: /,
  },
  {
    name: 'duplicate app names',
    files: { 'm.json': JSON.stringify(manifest({ apps: [{ name: 'a', exec: ['true'] }, { name: 'a', exec: ['true'] }] })) },
    args: (d) => ['prepare', '--manifest', path.join(d, 'm.json')],
    stderr: /^podctl: invalid manifest: .*apps\[1\]\.name: /,
  },
  {
    name: 'a manifest that is not an object',
    files: { 'm.json': '[1, 2]' },
    args: (d) => ['prepare', '--manifest', path.join(d, 'm.json')],
    stderr: /^podctl: invalid manifest: \(top level\): /,
  },
  {
    name: 'program not on PATH (command)',
    args: () => ['prepare', '--', 'podctl-no-such-program-here'],
    stderr: /^podctl: invalid command after --: "podctl-no-such-program-here" was not found on PATH/,
  },
  {
    name: 'program not on PATH (manifest)',
    files: { 'm.json': JSON.stringify(manifest({ apps: [{ name: 'a', exec: ['true'] }, { name: 'b', exec: ['podctl-nope'] }] })) },
    args: (d) => ['prepare', '--manifest', path.join(d, 'm.json')],
    stderr: /^podctl: invalid manifest: apps\[1\]\.exec\[0\]: "podctl-nope"/,
  },
  {
    name: 'absolute program that does not exist',
    args: () => ['prepare', '--', '/nonexistent/bin/prog'],
    stderr: /^podctl: invalid command after --: "\/nonexistent\/bin\/prog" is not an executable file/,
  },
  {
    name: 'both --manifest and a command',
    files: { 'm.json': JSON.stringify(manifest()) },
    args: (d) => ['prepare', '--manifest', path.join(d, 'm.json'), '--', 'true'],
    stderr: /^podctl: .*--manifest.*command|^podctl: .*command.*--manifest/,
  },
  {
    name: 'neither --manifest nor a command',
    args: () => ['prepare'],
    stderr: /^podctl: .*--manifest/,
  },
  {
    name: 'a manifest file that does not exist',
    args: (d) => ['prepare', '--manifest', path.join(d, 'nope.json')],
    stderr: /^podctl: .*nope\.json/,
  },
  {
    name: 'bad --env',
    args: () => ['prepare', '--env', 'NO-VALUE', '--', 'true'],
    stderr: /^podctl: .*--env.*NO-VALUE/,
  },
  {
    name: 'bad --env key',
    args: () => ['prepare', '--env', '1A=b', '--', 'true'],
    stderr: /^podctl: .*--env.*1A=b/,
  },
  {
    name: 'unknown flag',
    args: () => ['prepare', '--bogus', '--', 'true'],
    stderr: /^podctl: .*--bogus/,
  },
]

t.test('refusals: exit 2, a message naming the problem, and nothing written', async (t) => {
  for (const c of refusals) {
    t.test(c.name, async (t) => {
      // A data dir that does not exist yet must still not exist afterwards.
      const root = t.testdir(c.files ?? {})
      const fresh = path.join(root, 'data')
      const before = listTree(root)
      const r = podctl(fresh, c.args(root), c.input !== undefined ? { input: c.input } : {})
      t.equal(r.status, 2, 'exit 2')
      t.equal(r.stdout, '', 'nothing on stdout')
      t.match(r.stderr, c.stderr)
      t.notMatch(r.stderr, /^\s+at /m, 'no stack trace')
      t.equal(fs.existsSync(fresh), false, 'the data dir was not created')
      t.strictSame(listTree(root), before, 'nothing new beside it')

      // An existing data dir with a pod in it is left exactly as it was.
      const existing = path.join(root, 'existing')
      await preparedPod(existing)
      const snapshot = listTree(existing)
      const again = podctl(existing, c.args(root), c.input !== undefined ? { input: c.input } : {})
      t.equal(again.status, 2, 'exit 2 with an existing data dir too')
      t.strictSame(listTree(existing), snapshot, 'the existing data dir is unchanged')
    })
  }
})

t.test('a manifest naming several problems names each field', async (t) => {
  const dir = t.testdir({
    'm.json': JSON.stringify({ apiVersion: 'podctl/v1', name: 'Bad', extra: 1, apps: [{ name: 'ok', exec: 'true' }] }),
  })
  const r = podctl(path.join(dir, 'data'), ['prepare', '--manifest', path.join(dir, 'm.json')])
  t.equal(r.status, 2)
  t.match(r.stderr, /\bname: "Bad"/)
  t.match(r.stderr, /\bextra: unknown field/)
  t.match(r.stderr, /apps\[0\]\.exec: /)
})

t.test('a missing required field is reported as missing', async (t) => {
  const dir = t.testdir({
    'm.json': JSON.stringify({ apps: [{ exec: ['true'] }, { name: 'b' }] }),
  })
  const r = podctl(path.join(dir, 'data'), ['prepare', '--manifest', path.join(dir, 'm.json')])
  t.equal(r.status, 2)
  for (const field of ['apiVersion', 'apps[0].name', 'apps[1].exec']) t.match(r.stderr, `${field}: `, `names ${field}`)
  t.notMatch(r.stderr, /undefined undefined/, 'no "undefined undefined"')
  t.match(r.stderr, /apps\[0\]\.name: [^;]*(required|missing)/, 'says the field is missing')
})
