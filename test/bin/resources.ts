// CONTRACT §10, exhausted resources: too few file descriptors (a real
// `ulimit -n`), a full disk (a real small tmpfs, as root), arguments and
// environment over the kernel's limit, names over NAME_MAX and PATH_MAX.
// Each is one line saying what and where, one saying what to do, the
// documented exit code, no stack trace, and nothing half-made left for
// longer than the next gc.
import t from 'tap'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { BIN, listTree, STACK_RE } from '../helpers/common.js'
import { podctl } from '../helpers/cli-util.js'

const root = process.getuid?.() === 0

/**
 * podctl run through sh, with a shell limit set first. Started through
 * `env -u NODE_OPTIONS`: tap puts its own loader there for every child,
 * and that loader opens more files than the limit under test allows.
 */
const limited = (limit: string, dir: string, args: string[]): { status: number | null; stdout: string; stderr: string } => {
  const quoted = [BIN, '--dir', dir, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ')
  const r = spawnSync('/usr/bin/env', ['-u', 'NODE_OPTIONS', 'sh', '-c', `${limit}; exec ${JSON.stringify(process.execPath)} ${quoted}`], { encoding: 'utf8', timeout: 120_000, maxBuffer: 1 << 26 })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

const manifestOf = (n: number): string => JSON.stringify({ apiVersion: 'podctl/v1', apps: Array.from({ length: n }, (_, i) => ({ name: `a${i}`, exec: ['sleep', '0.2'] })) })

t.test('too few file descriptors for the apps: refused before the pod runs (125), nothing left', async (t) => {
  const base = t.testdir({ 'm.json': manifestOf(30) })
  const dir = path.join(base, 'data')
  const r = limited('ulimit -n 40', dir, ['run', '--manifest', path.join(base, 'm.json')])
  t.equal(r.status, 125, 'foreground run: podctl failed, not the pod: 125')
  t.match(r.stderr, /^podctl: the pod's 30 apps need about \d+ open files, and this process may open 40 \(ulimit -n\)\nraise the limit \(ulimit -n \d+\), or split the apps over several pods\n$/)
  t.notMatch(r.stderr, STACK_RE)
  const detached = limited('ulimit -n 40', dir, ['run', '--detach', '--manifest', path.join(base, 'm.json')])
  t.equal(detached.status, 1, 'run --detach: exit 1')
  t.match(detached.stderr, /need about \d+ open files/)
  t.equal(podctl(dir, ['list', '--format', 'json']).stdout, '[]\n', 'no pod was left')
  const enough = limited('ulimit -n 1024', dir, ['run', '--manifest', path.join(base, 'm.json')])
  t.equal(enough.status, 0, 'with enough descriptors the same pod runs')
})

t.test('a full disk (a small tmpfs)', { skip: root ? false : 'needs root to mount a tmpfs' }, async (t) => {
  const mnt = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-enospc-'))
  fs.chmodSync(mnt, 0o755)
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0755', 'tmpfs', mnt])
  if (mounted.status !== 0) {
    t.comment(`skipped: cannot mount a tmpfs here: ${String(mounted.stderr).trim()}`)
    return
  }
  t.teardown(() => {
    spawnSync('umount', ['-l', mnt])
    fs.rmSync(mnt, { recursive: true, force: true })
  })
  const dir = path.join(mnt, 'data')
  t.equal(podctl(dir, ['prepare', '--', 'true']).status, 0, 'a pod fits')
  // Fill what is left.
  spawnSync('sh', ['-c', `dd if=/dev/zero of=${mnt}/filler bs=4096 2>/dev/null; true`])
  const prepare = podctl(dir, ['prepare', '--', 'true'])
  t.equal(prepare.status, 1, 'prepare on a full disk: exit 1')
  t.match(prepare.stderr, /^podctl: .*\/data\/pods\/.*: no space left on the device \(ENOSPC\)\nfree some space there/, 'what, where, and what to do')
  t.notMatch(prepare.stderr, STACK_RE)
  const run = podctl(dir, ['run', '--', 'true'])
  t.equal(run.status, 125, 'run on a full disk: podctl failed: 125')
  t.match(run.stderr, /no space left on the device \(ENOSPC\)/)
  t.notMatch(run.stderr, STACK_RE)
  fs.rmSync(path.join(mnt, 'filler'))
  t.equal(podctl(dir, ['gc', '--grace-period', '0s', '--expire-prepared', '0s']).status, 0, 'gc, once there is room again')
  t.strictSame(listTree(path.join(dir, 'pods'))?.filter((e) => /[0-9a-f-]{36}\/$/.test(e)), [], 'nothing half-made is left')

  // A pod whose logs fill the disk runs on to its own end and exit code.
  const chatty = limited('true', dir, ['run', '--', 'sh', '-c', 'head -c 3000000 /dev/zero | tr "\\0" x; echo; exit 3'])
  t.equal(chatty.status, 3, 'the pod ends with its own exit code, not killed by the full disk')
  t.match(chatty.stderr, /^podctl: app sh: cannot write .*sh\.log: no space left on the device \(ENOSPC\); output is dropped until it can be written again$/m)
  t.notMatch(chatty.stderr, STACK_RE)
})

t.test('arguments and environment over the kernel limit: refused at prepare (2)', async (t) => {
  // In a manifest: podctl's own command line could not carry them either.
  const base = t.testdir({
    'big.json': JSON.stringify({ apiVersion: 'podctl/v1', apps: [{ name: 'a', exec: ['true'], env: { BIG: 'x'.repeat(200_000) } }] }),
    'many.json': JSON.stringify({ apiVersion: 'podctl/v1', apps: [{ name: 'a', exec: ['true'], env: Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`V${i}`, 'y'.repeat(100_000)])) }] }),
  })
  const dir = path.join(base, 'data')
  const env = podctl(dir, ['prepare', '--manifest', path.join(base, 'big.json')])
  t.equal(env.status, 2)
  t.match(env.stderr, /^podctl: invalid manifest: apps\[0\]: "BIG=x+"… is 200005 bytes; the kernel takes at most 131072 bytes for one argument or variable \(MAX_ARG_STRLEN\)\npass less in the environment/)
  // A known stack limit (8 MiB: 2 MiB for arguments and environment).
  const many = limited('ulimit -s 8192', dir, ['prepare', '--manifest', path.join(base, 'many.json')])
  t.equal(many.status, 2)
  t.match(many.stderr, /its arguments and environment take \d+ bytes; the kernel takes at most \d+ here \(a quarter of the stack limit, ulimit -s\)/)
  t.equal(fs.existsSync(path.join(dir, 'pods')) ? podctl(dir, ['list', '--format', 'json']).stdout : '[]\n', '[]\n', 'nothing prepared')
})

t.test('names over NAME_MAX and paths over PATH_MAX: refused at prepare (2)', async (t) => {
  const base = t.testdir({})
  const dir = path.join(base, 'data')
  const long = 'n'.repeat(300)
  const cases: [string, object][] = [
    ['a files volume key', { volumes: [{ name: 'cfg', kind: 'files', files: { [`d/${long}`]: { content: 'x' } } }], apps: [{ name: 'a', exec: ['true'], mounts: [{ volume: 'cfg', path: '/cfg' }] }] }],
    // Each part and the key fit; below the data dir, in the pod, the path does not.
    ['a files volume key in the pod', { volumes: [{ name: 'cfg', kind: 'files', files: { [Array(20).fill('d'.repeat(200)).join('/')]: { content: 'x' } } }], apps: [{ name: 'a', exec: ['true'], mounts: [{ volume: 'cfg', path: '/cfg' }] }] }],
    ['a mount path', { volumes: [{ name: 'v', kind: 'empty' }], apps: [{ name: 'a', exec: ['true'], mounts: [{ volume: 'v', path: `/${'p/'.repeat(2100)}x` }] }] }],
    ['a part of a mount path', { volumes: [{ name: 'v', kind: 'empty' }], apps: [{ name: 'a', exec: ['true'], mounts: [{ volume: 'v', path: `/${long}` }] }] }],
    ['a working directory', { apps: [{ name: 'a', exec: ['true'], workingDirectory: `/${long}` }] }],
  ]
  for (const [what, m] of cases) {
    const file = path.join(base, 'm.json')
    fs.writeFileSync(file, JSON.stringify({ apiVersion: 'podctl/v1', ...m }))
    const r = podctl(dir, ['prepare', '--manifest', file])
    t.equal(r.status, 2, `${what}: exit 2`)
    t.match(r.stderr, /(a file name is at most 255 bytes|a path is at most 4095 bytes)/, what)
    t.equal(fs.existsSync(path.join(dir, 'pods')) ? fs.readdirSync(path.join(dir, 'pods', 'prepared')).length : 0, 0, `${what}: no pod`)
  }
})
