// Black-box tests of `podctl volume create|list|inspect|rm` and the errors
// of `volume update` (Documentation/subcommands/volume.md): spawns bin/podctl.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { listTree, STACK_RE, TIME_RE } from '../helpers/common.js'
import { jsonErrors, parseTable, podctl, preparedPod } from '../helpers/cli-util.js'
import { volumeManifest } from '../helpers/volume-util.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

const VIEW_KEYS = ['access_mode', 'claim', 'claims', 'created_at', 'events', 'in_use_by', 'kind', 'name', 'path', 'phase', 'reclaim', 'size_limit_bytes']
const INSPECT_KEYS = [...VIEW_KEYS, 'available_bytes', 'capacity_bytes', 'over_size_limit', 'used_bytes', 'used_inodes'].sort()

/** A refusal: the exit code, one "podctl: ..." message, no stack, nothing on stdout. */
const refused = (t: Test, r: ReturnType<typeof podctl>, status: number, message: RegExp, what: string): void => {
  t.equal(r.status, status, `${what}: exit ${status}`)
  t.match(r.stderr, message, `${what}: the message`)
  t.match(r.stderr, /^podctl: /, `${what}: starts with podctl:`)
  t.notMatch(r.stderr, STACK_RE, `${what}: no stack trace`)
  t.equal(r.stdout, '', `${what}: nothing on stdout`)
}

t.test('create prints the name; --format json the volume object', async (t) => {
  const dir = t.testdir({})
  const r = podctl(dir, ['volume', 'create', 'db'])
  t.equal(r.status, 0)
  t.equal(r.stdout, 'db\n')
  t.equal(r.stderr, '')
  const j = podctl(dir, ['volume', 'create', 'cache', '--reclaim', 'recycle', '--size-limit', '10M', '--access-mode', 'RWX', '--format', 'json'])
  t.equal(j.status, 0, j.stderr)
  const v = JSON.parse(j.stdout)
  t.same(Object.keys(v).sort(), VIEW_KEYS)
  t.match(v, { name: 'cache', kind: 'persistent', reclaim: 'recycle', access_mode: 'ReadWriteMany', size_limit_bytes: 10_485_760, phase: 'available', claims: [], in_use_by: [] })
  t.equal(v.path, path.join(dir, 'volumes', 'cache', 'data'))
  t.match(v.created_at, TIME_RE)
})

t.test('create refuses bad input with exit 2 and an existing name with exit 4, writing nothing', async (t) => {
  const dir = t.testdir({})
  refused(t, podctl(dir, ['volume', 'create', 'Bad_Name']), 2, /podctl: "Bad_Name" is not a valid volume name/, 'bad name')
  refused(t, podctl(dir, ['volume', 'create', 'x', '--size-limit', 'lots']), 2, /invalid --size-limit "lots"/, 'bad size')
  refused(t, podctl(dir, ['volume', 'create', 'x', '--size-limit', '1K']), 2, /a size limit of 1024 bytes cannot hold the volume's own directory: at least \d+ bytes/, 'a limit below one block')
  refused(t, podctl(dir, ['volume', 'create', 'x', '--reclaim', 'shred']), 2, /argument 'shred' is invalid/, 'bad reclaim')
  refused(t, podctl(dir, ['volume', 'create', 'x', '--access-mode', 'ROX']), 2, /argument 'ROX' is invalid/, 'bad access mode')
  t.same(listTree(dir), [], 'nothing was written in the data dir')
  t.equal(podctl(dir, ['volume', 'create', 'x']).status, 0)
  const again = podctl(dir, ['volume', 'create', 'x', '--format', 'json'])
  refused(t, again, 4, /persistent volume x already exists/, 'existing')
  t.match(jsonErrors(again.stderr), [{ error: { code: 'EBADSTATE', message: 'persistent volume x already exists' } }])
})

t.test('list: a table (header unless --no-legacy) or a JSON array', async (t) => {
  const dir = t.testdir({})
  t.equal(podctl(path.join(dir, 'none'), ['volume', 'list']).stdout, 'NAME   PHASE   CLAIM   ACCESS   RECLAIM   SIZE-LIMIT   BOUND   IN-USE-BY   CREATED\n', 'no data dir: no volumes, only the header')
  t.notOk(fs.existsSync(path.join(dir, 'none')), 'list creates nothing')
  podctl(dir, ['volume', 'create', 'b', '--size-limit', '8Ki'])
  podctl(dir, ['volume', 'create', 'a', '--reclaim', 'delete'])
  const r = podctl(dir, ['volume', 'list'])
  t.equal(r.status, 0)
  const rows = parseTable(r.stdout)
  t.same(
    rows.map((row) => [row.NAME, row.PHASE, row.CLAIM, row.ACCESS, row.RECLAIM, row['SIZE-LIMIT'], row.BOUND, row['IN-USE-BY']]),
    [
      ['a', 'available', '-', 'ReadWriteOnce', 'delete', '-', '0', '-'],
      ['b', 'available', '-', 'ReadWriteOnce', 'retain', '8192', '0', '-'],
    ],
  )
  for (const row of rows) t.match(row.CREATED, /^(just now|\d+ seconds? ago)$/, 'CREATED is relative')
  t.equal(podctl(dir, ['volume', 'ls', '--no-legacy']).stdout.split('\n')[0]!.split(/\s+/)[0], 'a', 'ls is list; --no-legacy drops the header')
  const j = JSON.parse(podctl(dir, ['volume', 'list', '--format', 'json']).stdout)
  t.same(j.map((v: { name: string }) => v.name), ['a', 'b'])
  for (const v of j) t.same(Object.keys(v).sort(), VIEW_KEYS)
})

t.test('inspect: key=value lines or the JSON object with usage', async (t) => {
  const dir = t.testdir({})
  podctl(dir, ['volume', 'create', 'db', '--size-limit', '8192'])
  fs.writeFileSync(path.join(dir, 'volumes', 'db', 'data', 'f'), 'x'.repeat(20_000))
  const r = podctl(dir, ['volume', 'inspect', 'db'])
  t.equal(r.status, 0)
  const kv = Object.fromEntries(r.stdout.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]))
  t.match(kv, { name: 'db', kind: 'persistent', reclaim: 'retain', 'access-mode': 'ReadWriteOnce', 'size-limit-bytes': '8192', phase: 'available', 'used-inodes': '2', 'in-use-by': '-' })
  t.match(kv['used-bytes'], /^\d+$/)
  t.match(kv['capacity-bytes'], /^\d+$/)
  const v = JSON.parse(podctl(dir, ['volume', 'inspect', 'db', '--format', 'json-pretty']).stdout)
  t.same(Object.keys(v).sort(), INSPECT_KEYS)
  t.equal(v.used_inodes, 2)
  t.ok(v.used_bytes >= 20_000)
  t.ok(v.capacity_bytes > 0 && v.available_bytes >= 0)
  t.equal(v.over_size_limit, true)
})

t.test('inspect and rm of a missing volume: exit 3', async (t) => {
  const dir = t.testdir({})
  const r = podctl(dir, ['volume', 'inspect', 'nope', '--format', 'json'])
  refused(t, r, 3, /podctl: no persistent volume named "nope"\ncreate it: podctl volume create nope\n/, 'inspect')
  t.match(jsonErrors(r.stderr), [{ error: { code: 'ENOVOLUME' } }])
  podctl(dir, ['volume', 'create', 'a'])
  const rm = podctl(dir, ['volume', 'rm', 'nope', 'a'])
  t.equal(rm.status, 3, 'rm goes past the missing one and fails at the end')
  t.equal(rm.stdout, 'a\n', 'the other was removed')
  t.match(rm.stderr, /no persistent volume named "nope"/)
  t.same(fs.readdirSync(path.join(dir, 'volumes')), [])
})

t.test('rm removes the volume and its data', async (t) => {
  const dir = t.testdir({})
  podctl(dir, ['volume', 'create', 'db'])
  fs.mkdirSync(path.join(dir, 'volumes', 'db', 'data', 'deep', 'er'), { recursive: true })
  const r = podctl(dir, ['volume', 'rm', 'db'])
  t.equal(r.status, 0)
  t.equal(r.stdout, 'db\n')
  t.same(fs.readdirSync(path.join(dir, 'volumes')), [])
})

t.test('update refuses what it cannot do, with the documented exit codes', async (t) => {
  const dir = t.testdir({ src: { 'a.conf': 'a' } })
  const uuid = await preparedPod(dir, volumeManifest([{ name: 'cfg', kind: 'files', files: { a: { content: '1' } } }, { name: 'e', kind: 'empty' }]))
  const file = path.join(dir, 'src', 'a.conf')
  refused(t, podctl(dir, ['volume', 'update', uuid, 'cfg']), 2, /no content given/, 'no content')
  refused(t, podctl(dir, ['volume', 'update', uuid, 'cfg', '--from-file', `../x=${file}`]), 2, /invalid file paths: "\.\.\/x": must not contain "\.\."/, 'escaping path')
  refused(t, podctl(dir, ['volume', 'update', uuid, 'cfg', '--from-file', `/etc/x=${file}`]), 2, /"\/etc\/x": must be a relative path/, 'absolute path')
  refused(t, podctl(dir, ['volume', 'update', uuid, 'cfg', '--from-file', `x=${dir}/nope`]), 2, /cannot read .*nope: no such file/, 'missing source')
  refused(t, podctl(dir, ['volume', 'update', uuid, 'cfg', '--from-dir', `${dir}/nope`]), 2, /--from-dir .*: no such directory/, 'missing dir')
  fs.symlinkSync('/etc/passwd', path.join(dir, 'src', 'link'))
  refused(t, podctl(dir, ['volume', 'update', uuid, 'cfg', '--from-dir', path.join(dir, 'src')]), 2, /link is a symlink; only regular files are copied/, 'a link in --from-dir')
  refused(t, podctl(dir, ['volume', 'update', uuid, 'cfg', '--from-file', file, '--timeout', 'soon']), 2, /invalid --timeout "soon"/, 'bad timeout')
  refused(t, podctl(dir, ['volume', 'update', uuid, 'cfg', '--from-file', file]), 4, /pod [0-9a-f]{8} is prepared; files volumes are updated only while the pod runs/, 'not running')
  refused(t, podctl(dir, ['volume', 'update', '00000000', 'cfg', '--from-file', file]), 3, /no pod matches/, 'no such pod')
})

t.test('every volume command has --help with a description and an example', async (t) => {
  for (const sub of ['create', 'list', 'inspect', 'rm', 'update']) {
    const r = podctl(undefined, ['volume', sub, '--help'])
    t.equal(r.status, 0, sub)
    t.match(r.stdout, new RegExp(`^Usage: podctl volume ${sub}\\b`))
    t.match(r.stdout, /\n\n\S.*\n/, 'a description')
    t.match(r.stdout, new RegExp(`\\$ podctl volume ${sub}\\b`), 'an example')
  }
  const g = podctl(undefined, ['volume', '--help'])
  t.match(g.stdout, /Examples:\n {2}\$ podctl volume create/)
  t.match(podctl(undefined, ['--help']).stdout, /^ {2}volume\b.*\S/m, 'podctl --help lists volume')
})
