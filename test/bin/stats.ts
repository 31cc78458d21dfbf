// CONTRACT §12, watching: `podctl stats [UUID...] [--no-stream] [--format
// table|json]` shows per running app of isolated pods its CPU % (of one
// core), memory used and limit, and pids, from cgroups: one sample in a
// pipe or with --no-stream, a redraw every second on a terminal until
// Ctrl-C. Host pods have no cgroups: not listed, and refused by UUID (4).
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import os from 'node:os'
import path from 'node:path'
import { argvFor, launcher, podctl, type RunOptions } from '../helpers/cli-util.js'
import { containersMissing } from '../helpers/containers.js'
import { STACK_RE, manifestFile, pollUntil, type Test } from '../helpers/common.js'
import { isolatedManifest, unprivileged, userDataDir } from '../helpers/oci-util.js'
import { dataDir } from '../helpers/run-util.js'

const missing = containersMissing()
const skip = missing !== undefined ? `this machine cannot isolate pods: ${missing}` : process.getuid?.() === 0 ? false : 'needs root for cgroups (a rootless pod on cgroup v1 has none)'

interface Stat {
  uuid: string
  app: string
  cpu_percent: number | null
  memory_bytes: number | null
  memory_limit_bytes: number | null
  pids: number | null
}

const HEADER_RE = /^UUID\s+APP\s+CPU %\s+MEM USAGE \/ LIMIT\s+PIDS$/

const up = (t: Test, dir: string, args: string[], opts: RunOptions = {}): string => {
  const r = podctl(dir, ['run', '--detach', ...args], opts)
  t.equal(r.status, 0, `run --detach ${args.join(' ')}`, { stderr: r.stderr })
  const uuid = r.stdout.trim()
  t.equal(podctl(dir, ['status', uuid, '--wait-ready'], opts).status, 0)
  return uuid
}

const statsJson = (dir: string, args: string[] = [], opts: RunOptions = {}): Stat[] => {
  const r = podctl(dir, ['stats', '--format', 'json', ...args], opts)
  if (r.status !== 0) throw new Error(`stats exited ${r.status}: ${r.stderr}`)
  return JSON.parse(r.stdout) as Stat[]
}

/** Table rows as cells (columns are two or more spaces apart; cells hold single spaces). */
const rows = (out: string): string[][] =>
  out
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.trim().split(/\s{2,}/))

t.test('stats of running isolated pods', { skip }, async (t) => {
  const dir = dataDir(t)
  const three = manifestFile(path.dirname(dir), isolatedManifest([
    { name: 'busy', exec: ['sh', '-c', 'while :; do :; done'] },
    // 20 MB held in a shell variable while it waits.
    { name: 'holder', exec: ['sh', '-c', 'x=$(head -c 20000000 /dev/zero | tr "\\0" a); echo held; sleep 300'] },
    { name: 'once', exec: ['true'] },
  ]))
  const a = up(t, dir, ['--manifest', three])
  const b = up(t, dir, ['--isolation', 'namespaces', '--memory', '64Mi', '--', 'sleep', '300'])
  const host = up(t, dir, ['--', 'sleep', '300'])
  await pollUntil('app once to exit and holder to hold its memory', () => podctl(dir, ['status', a]).stdout.includes('app-once=0') && podctl(dir, ['logs', a, '--app', 'holder']).stdout.includes('held'))

  t.test('--no-stream table: the columns, one row per running app of isolated pods, no host pod', async (t) => {
    const r = podctl(dir, ['stats', '--no-stream'])
    t.equal(r.status, 0, r.stderr)
    const lines = r.stdout.split('\n').filter((l) => l !== '')
    t.match(lines[0], HEADER_RE, 'UUID, APP, CPU %, MEM USAGE / LIMIT, PIDS')
    const body = rows(r.stdout).slice(1)
    t.strictSame(body.map((c) => `${c[0]} ${c[1]}`).sort(), [`${a.slice(0, 8)} busy`, `${a.slice(0, 8)} holder`, `${b.slice(0, 8)} sleep`].sort(), 'running apps only: not the exited one, not the host pod')
    t.notOk(r.stdout.includes(host.slice(0, 8)), 'the host pod is not listed')
    for (const c of body) {
      t.equal(c.length, 5, `five cells: ${c.join(' | ')}`)
      t.match(c[2], /^\d+\.\d\d%$/, 'CPU %')
      t.match(c[3], /^[\d.]+[KMG]?i?B \/ (-|[\d.]+[KMG]iB)$/, 'usage / limit')
      t.match(c[4], /^\d+$/, 'PIDS')
    }
    t.match(body.find((c) => c[0] === b.slice(0, 8))![3], / \/ 64\.0MiB$/, 'the limit of --memory 64Mi')
    t.match(body.find((c) => c[1] === 'busy')![3], / \/ -$/, 'no limit: -')
  })

  t.test('--format json: the shape, the limit of --memory 64Mi, null without one', async (t) => {
    const s = statsJson(dir)
    t.equal(s.length, 3)
    for (const x of s) {
      t.strictSame(Object.keys(x).sort(), ['app', 'cpu_percent', 'memory_bytes', 'memory_limit_bytes', 'pids', 'uuid'], `${x.app}: the keys of CONTRACT §12`)
      t.ok([a, b].includes(x.uuid), 'the full UUID')
      t.ok(typeof x.cpu_percent === 'number' && x.cpu_percent >= 0, 'cpu_percent a number')
      // The first sample's base is the cgroup's birth, before the runtime's set-up used any CPU in it.
      t.ok(x.cpu_percent! <= 100 * os.availableParallelism(), `${x.app}: ${x.cpu_percent}% is no more than every core busy`)
      t.ok(Number.isInteger(x.memory_bytes) && x.memory_bytes! > 0, 'memory_bytes a count of bytes')
      t.ok(Number.isInteger(x.pids) && x.pids! >= 1, 'pids a count')
    }
    t.equal(s.find((x) => x.uuid === b)!.memory_limit_bytes, 67108864, '--memory 64Mi: 67108864')
    t.equal(s.find((x) => x.app === 'busy')!.memory_limit_bytes, null, 'no limit: null')
    t.ok(s.find((x) => x.app === 'holder')!.memory_bytes! >= 20_000_000, `an app holding 20 MB uses at least that (${s.find((x) => x.app === 'holder')!.memory_bytes})`)
    t.ok(s.find((x) => x.app === 'busy')!.memory_bytes! < 20_000_000, 'one that holds nothing uses less')
    // A pod's limit and an app's own: the smaller is the app's.
    const c = up(t, dir, ['--manifest', manifestFile(path.dirname(dir), isolatedManifest([
      { name: 'small', exec: ['sleep', '300'], resources: { memory: '32Mi' } },
      { name: 'big', exec: ['sleep', '300'], resources: { memory: '128Mi' } },
      { name: 'plain', exec: ['sleep', '300'] },
    ], { resources: { memory: '64Mi' } }), 'limits.json')])
    const limits = Object.fromEntries(statsJson(dir, [c]).map((x) => [x.app, x.memory_limit_bytes]))
    t.strictSame(limits, { small: 33554432, big: 67108864, plain: 67108864 }, "each app's limit: its own, or the pod's where that is smaller")
    t.equal(podctl(dir, ['stop', '--force', c]).status, 0)
    const one = statsJson(dir, [b.slice(0, 8)])
    t.strictSame(one.map((x) => x.uuid), [b], 'stats UUID: that pod only (a prefix works)')
  })

  t.test('a busy app shows CPU well above an idle one', async (t) => {
    const s = await pollUntil('the busy loop to show', () => {
      const x = statsJson(dir)
      return x.find((y) => y.app === 'busy')!.cpu_percent! > 20 ? x : undefined
    })
    const busy = s.find((x) => x.app === 'busy')!.cpu_percent!
    const idle = s.find((x) => x.uuid === b)!.cpu_percent!
    t.ok(busy > 5 * idle + 10, `busy ${busy}% against idle ${idle}%`)
    t.ok(busy <= 110, 'of one core: a single-threaded loop stays near 100 at most')
  })

  t.test('--no-legend drops the header; in a pipe, one sample and exit 0', async (t) => {
    const r = podctl(dir, ['stats', '--no-stream', '--no-legend'])
    t.equal(r.status, 0)
    t.equal(rows(r.stdout).length, 3, 'three rows, no header')
    t.notMatch(r.stdout, /UUID/)
    const pipe = podctl(dir, ['stats'])
    t.equal(pipe.status, 0, 'stats in a pipe ends by itself')
    t.equal(pipe.stdout.split('\n').filter((l) => HEADER_RE.test(l)).length, 1, 'one sample: one header')
    t.equal(rows(pipe.stdout).length, 4)
    t.notMatch(pipe.stdout, /\x1b/, 'no escape sequences in a pipe')
  })

  t.test('refused: a host pod (4), a pod not running (4), no such pod (3)', async (t) => {
    const r = podctl(dir, ['stats', host, '--no-stream'])
    t.equal(r.status, 4, 'a host pod named: 4')
    t.match(r.stderr, /^podctl: pod \w{8} runs its apps as host processes: it has no cgroups to read\nonly isolated pods have cgroups to read: podctl run --isolation namespaces \(or --image\), or "isolation": "namespaces" in a manifest\n$/, 'and says what has them, in a whole sentence')
    t.notMatch(r.stderr, STACK_RE)
    const prepared = podctl(dir, ['prepare', '--isolation', 'namespaces', '--', 'true']).stdout.trim()
    const p = podctl(dir, ['stats', prepared, '--no-stream'])
    t.equal(p.status, 4, 'a prepared pod: 4')
    t.match(p.stderr, /is prepared; stats are of running pods/)
    t.equal(podctl(dir, ['stats', '00000000-0000-4000-8000-000000000000']).status, 3, 'no such pod: 3')
  })

  t.test('on a terminal it redraws until Ctrl-C, then exits 0', { skip: spawnSync('script', ['--version']).status === 0 ? false : 'util-linux script(1) is not installed' }, async (t) => {
    const [cmd, argv] = launcher(argvFor(dir, ['stats', b]))
    // exec: script(1) runs the line with $SHELL -c, and dash (the /bin/sh of CI, where SHELL is unset) would
    // stay as podctl's parent and die of the terminal's SIGINT itself, so that script would report 130.
    const line = ['exec', ...[cmd, ...argv].map((x) => `'${x.replace(/'/g, "'\\''")}'`)].join(' ')
    const child = spawn('script', ['-qec', line, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, SHELL: '/bin/sh' } })
    t.teardown(() => {
      if (child.exitCode === null) child.kill('SIGKILL')
    })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s))
    const closed = new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)))
    await pollUntil('two samples drawn', () => out.split('\x1b[H\x1b[2J').length > 2, { polls: 400 })
    child.stdin.write('\x03')
    t.equal(await closed, 0, 'Ctrl-C ends it with 0')
    t.match(out, /UUID\s+APP\s+CPU %\s+MEM USAGE \/ LIMIT\s+PIDS/, 'each draw is the table')
  })

  t.test('no isolated pod running: the header alone, exit 0', async (t) => {
    const empty = dataDir(t)
    up(t, empty, ['--', 'sleep', '300'])
    const r = podctl(empty, ['stats', '--no-stream'])
    t.equal(r.status, 0)
    t.equal(rows(r.stdout).length, 1, 'the header alone')
    t.strictSame(statsJson(empty), [])
  })
})

t.test('rootless on a host where the user cannot make cgroups: a row of unknowns', async (t) => {
  if (missing !== undefined) return t.plan(0, `this machine cannot isolate pods: ${missing}`)
  const who = unprivileged()
  if (typeof who === 'string') return t.plan(0, who)
  const dir = userDataDir(t, who)
  const uuid = up(t, dir, ['--isolation', 'namespaces', '--', 'sleep', '300'], who.opts)
  const s = statsJson(dir, [], who.opts)
  if (s[0]?.memory_bytes !== null) return t.plan(0, `${who.name} has cgroups here: nothing unknown to show`)
  t.strictSame(s, [{ uuid, app: 'sleep', cpu_percent: null, memory_bytes: null, memory_limit_bytes: null, pids: null }], 'the app is listed, its use unknown (null)')
  const table = rows(podctl(dir, ['stats', '--no-stream', '--no-legend'], who.opts).stdout)
  t.strictSame(table, [[uuid.slice(0, 8), 'sleep', '-', '-', '-']], 'and - in the table')
})
