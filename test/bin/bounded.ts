// CONTRACT §10, bounded input: every file podctl reads is read with a
// bound, a manifest or UUID file that is not a regular file is refused
// (exit 2) unless it is stdin, and --uuid-file-save never writes through or
// over anything but a regular file, checked before anything is prepared.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { listTree, STACK_RE } from '../helpers/common.js'
import { podctl, preparedPod } from '../helpers/cli-util.js'

const pods = (dir: string): string[] => (listTree(path.join(dir, 'pods')) ?? []).filter((e) => /^[a-z-]+\/[0-9a-f-]{36}\/$/.test(e))

t.test('a manifest or UUID file that is a device, a fifo or a directory: exit 2 at once', async (t) => {
  const base = t.testdir({ adir: {} })
  const dir = path.join(base, 'data')
  const fifo = path.join(base, 'fifo')
  spawnSync('mkfifo', [fifo])
  for (const [args, what] of [
    [['prepare', '--manifest', '/dev/zero'], /manifest \/dev\/zero is a device, not a regular file/],
    [['prepare', '--manifest', fifo], /manifest .*fifo is a fifo, not a regular file/],
    [['prepare', '--manifest', path.join(base, 'adir')], /is a directory, not a regular file/],
    [['rm', '--uuid-file', '/dev/zero'], /UUID file \/dev\/zero is a device/],
    [['rm', '--uuid-file', fifo], /UUID file .*fifo is a fifo/],
  ] as const) {
    const started = Date.now()
    const r = podctl(dir, [...args])
    t.equal(r.status, 2, `${args.join(' ')}: exit 2`)
    t.match(r.stderr, what)
    t.notMatch(r.stderr, STACK_RE)
    t.ok(Date.now() - started < 30_000, 'and it returns (a fifo never blocks it)')
  }
  t.strictSame(pods(dir), [], 'nothing was prepared')
})

t.test('over the bound: exit 2, without reading it all', async (t) => {
  const base = t.testdir({ 'big.json': ' '.repeat(4 * 1024 * 1024 + 1), 'big.uuid': `${'0'.repeat(5000)}\n` })
  const dir = path.join(base, 'data')
  const r = podctl(dir, ['prepare', '--manifest', path.join(base, 'big.json')])
  t.equal(r.status, 2)
  t.match(r.stderr, /^podctl: manifest .*big\.json is larger than 4 MiB/)
  const u = podctl(dir, ['rm', '--uuid-file', path.join(base, 'big.uuid')])
  t.equal(u.status, 2)
  t.match(u.stderr, /UUID file .*big\.uuid is larger than 4 KiB/)
  // stdin is bounded the same way: /dev/zero as stdin is refused after 4 MiB, not read for ever.
  const z = spawnSync('sh', ['-c', `node ${JSON.stringify(path.resolve('bin/podctl'))} --dir ${JSON.stringify(dir)} prepare --manifest - < /dev/zero`], { encoding: 'utf8', timeout: 60_000 })
  t.equal(z.status, 2, 'stdin of /dev/zero: exit 2')
  t.match(z.stderr, /manifest - is larger than 4 MiB/)
  t.strictSame(pods(dir), [])
})

t.test('a manifest piped to stdin in pieces is read to its end, not cut at the first short read', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const first = '{"apiVersion":"podctl/v1",'
  const rest = '"apps":[{"name":"a","exec":["/bin/true"]}]}'
  const r = spawnSync(
    'sh',
    ['-c', `{ printf '%s' '${first}'; sleep 0.3; printf '%s' '${rest}'; } | env -u NODE_OPTIONS node ${JSON.stringify(path.resolve('bin/podctl'))} --dir ${JSON.stringify(dir)} prepare --manifest -`],
    { encoding: 'utf8', timeout: 60_000 },
  )
  t.equal(r.status, 0, r.stderr)
  t.match(r.stdout, /^[0-9a-f-]{36}\n$/)
  t.equal(pods(dir).length, 1)
})

t.test('--uuid-file-save: absent or a regular file is written; anything else is exit 2 before anything is prepared', async (t) => {
  const base = t.testdir({ adir: {}, regular: 'old\n', target: 'do not touch\n' })
  const dir = path.join(base, 'data')
  fs.symlinkSync(path.join(base, 'target'), path.join(base, 'link'))
  spawnSync('mkfifo', [path.join(base, 'fifo')])
  const commands: [string, string[]][] = [
    ['prepare', ['prepare']],
    ['run', ['run']],
    ['run --detach', ['run', '--detach']],
    ['app sandbox --detach', ['app', 'sandbox', '--detach']],
    ['app sandbox', ['app', 'sandbox']],
  ]
  for (const [name, cmd] of commands) {
    const command = name.startsWith('app') ? [] : ['--', 'true']
    for (const bad of ['link', 'fifo', 'adir', '/dev/null']) {
      const at = bad.startsWith('/') ? bad : path.join(base, bad)
      const r = podctl(dir, [...cmd, '--uuid-file-save', at, ...command])
      t.equal(r.status, 2, `${name} --uuid-file-save ${bad}: exit 2`)
      t.match(r.stderr, /^podctl: cannot write UUID file .*: it is a (symlink|fifo|directory|device or socket)/)
      t.notMatch(r.stderr, STACK_RE)
    }
    t.equal(fs.readFileSync(path.join(base, 'target'), 'utf8'), 'do not touch\n', `${name}: nothing was written through the link`)
    t.ok(fs.lstatSync(path.join(base, 'link')).isSymbolicLink(), 'and the link is still a link')
    t.strictSame(pods(dir), [], `${name}: no pod was made that a script could not name`)
  }
  // The good cases: a new file, and a regular file replaced.
  for (const [name, cmd] of commands.filter(([n]) => n.includes('detach') || n === 'prepare' || n === 'run')) {
    for (const target of ['new', 'regular']) {
      const at = path.join(base, `${name.replace(/\W+/g, '-')}-${target}`)
      if (target === 'regular') fs.writeFileSync(at, 'old\n')
      const r = podctl(dir, [...cmd, '--uuid-file-save', at, ...(name.startsWith('app') ? [] : ['--', 'true'])])
      t.equal(r.status, 0, `${name} --uuid-file-save (${target}): exit 0`)
      t.match(fs.readFileSync(at, 'utf8'), /^[0-9a-f-]{36}\n$/, 'the UUID is in the file')
    }
  }
  podctl(dir, ['stop', ...pods(dir).map((p) => p.split('/')[1]!)])
})

t.test('a UUID file that holds something else is refused', async (t) => {
  const base = t.testdir({ junk: 'not a uuid\n' })
  const dir = path.join(base, 'data')
  await preparedPod(dir)
  const r = podctl(dir, ['rm', '--uuid-file', path.join(base, 'junk')])
  t.equal(r.status, 2)
  t.match(r.stderr, /does not hold a pod UUID/)
})
