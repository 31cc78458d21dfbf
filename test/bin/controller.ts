// podctl controller through the real CLI (CONTRACT §8): one pass (--once),
// one leader among several, failover on SIGTERM and on SIGKILL, claims bound
// through the watch with no command waiting, run waiting for a live
// controller (and --timeout), a stopped leader whose lease runs out, the
// metrics endpoint, and many claims under three controllers and inline runs
// at once: one volume per claim.
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import { BIN, pollUntil, type Teardown } from '../helpers/common.js'
import { podctl, podctlAsync } from '../helpers/cli-util.js'
import { alive } from '../helpers/run-util.js'

/** Fast timings, so that failover is seen in a fraction of a second. */
const FAST = ['--retry-period', '100ms', '--lease-duration', '1500ms', '--renew-deadline', '1s']

interface Controller {
  proc: ChildProcess
  log(): string
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

const controllers = new WeakMap<object, Controller[]>()

/**
 * Starts `podctl controller` as tests start podctl (without tap's
 * NODE_OPTIONS). Every controller of a test is killed at its end, before
 * its test dir is removed (setUp registers that first).
 */
const startController = (t: object, dir: string, identity: string, extra: string[] = []): Controller => {
  const proc = spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', process.execPath, BIN, '--dir', dir, 'controller', '--identity', identity, ...FAST, ...extra], {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let err = ''
  proc.stderr!.setEncoding('utf8').on('data', (s: string) => (err += s))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })))
  const c = { proc, log: () => err, exited }
  controllers.get(t)!.push(c)
  return c
}

const lease = (dir: string): { holder: string | null; alive: boolean; transitions: number } => JSON.parse(podctl(dir, ['controller', 'status', '--format', 'json']).stdout)
const claim = (dir: string, name: string): any => JSON.parse(podctl(dir, ['volume', 'claim', 'inspect', name, '--format', 'json']).stdout)
const volumes = (dir: string): any[] => JSON.parse(podctl(dir, ['volume', 'list', '--format', 'json']).stdout)

const setUp = (t: Teardown & { testdir(): string }): string => {
  const mine: Controller[] = []
  controllers.set(t, mine)
  t.teardown(async () => {
    for (const { proc } of mine) {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGCONT')
        proc.kill('SIGKILL')
      }
    }
    await Promise.all(mine.map((c) => c.exited))
  })
  const dir = path.join(t.testdir(), 'data')
  const r = podctl(dir, ['volume', 'class', 'create', 'std', '--provisioner', 'local', '--default'])
  if (r.status !== 0) throw new Error(r.stderr)
  return dir
}

const claimManifest = (name: string) => ({
  apiVersion: 'podctl/v1',
  apps: [{ name: 'a', exec: ['/bin/sh', '-c', 'echo hi > "$PODCTL_APP_ROOT/data/f"'], mounts: [{ volume: 'data', path: '/data' }] }],
  volumes: [{ name: 'data', kind: 'persistent', claim: name, class: 'std', size: '1M' }],
})

t.test('--once binds every pending claim, records who did, gives the lease back and exits 0', async (t) => {
  const dir = setUp(t)
  for (const n of ['a', 'b', 'c']) t.equal(podctl(dir, ['volume', 'claim', 'create', n, '--size', '1M']).status, 0)
  const r = podctl(dir, ['controller', '--once', '--identity', 'once-1'])
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, '', 'nothing on stdout')
  for (const n of ['a', 'b', 'c']) t.match(claim(dir, n), { phase: 'bound', volume: /^pvc-/, provisioned_by: 'once-1' }, `claim ${n}`)
  t.match(lease(dir), { holder: null, alive: false, transitions: 0 }, 'the lease is given back')
  t.equal(volumes(dir).length, 3, 'one volume each')
})

t.test('a data dir made by another command (no class, no volume yet): the controller leads at once', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  t.equal(podctl(dir, ['list']).status, 0)
  const r = podctl(dir, ['controller', '--once', '--identity', 'fresh'])
  t.equal(r.status, 0, r.stderr)
  t.notMatch(r.stderr, /ENOENT|lease:/, 'no lease errors')
  t.match(lease(dir), { holder: null, transitions: 0 }, 'it took the lease and gave it back')
  t.ok(fs.existsSync(path.join(dir, 'controller', 'lease.json')))
})

t.test('--log-format json: every line on stderr is one JSON object {time, msg}; text lines by default', async (t) => {
  const dir = setUp(t)
  t.equal(podctl(dir, ['volume', 'claim', 'create', 'a', '--size', '1M']).status, 0)
  const r = podctl(dir, ['controller', '--once', '--identity', 'json-1', '--log-format', 'json'])
  t.equal(r.status, 0, r.stderr)
  const lines = r.stderr.trim().split('\n')
  t.ok(lines.length >= 2, 'it logged what it did')
  for (const l of lines) t.match(JSON.parse(l), { time: /^\d{4}-\d\d-\d\dT.*Z$/, msg: String }, `a JSON line: ${l}`)
  t.ok(lines.some((l) => /claim a: provisioned volume pvc-/.test(JSON.parse(l).msg)), 'the provision is one of them')
  t.equal(podctl(dir, ['volume', 'claim', 'create', 'b', '--size', '1M']).status, 0)
  const text = podctl(dir, ['controller', '--once', '--identity', 'text-1'])
  t.match(text.stderr, /^podctl controller: \d{4}-\d\d-\d\dT\S+Z leading \(text-1\)$/m, 'text: "podctl controller: TIME what"')
  t.equal(podctl(dir, ['controller', '--once', '--log-format', 'yaml']).status, 2, 'an unknown log format: exit 2')
})

t.test('bad flags: exit 2 with a message, no stack trace', async (t) => {
  const dir = setUp(t)
  for (const args of [['--workers', '0'], ['--renew-deadline', '20s'], ['--resync', 'soon'], ['--metrics-address', 'nowhere'], ['--failed-provision-threshold', '-1']]) {
    const r = podctl(dir, ['controller', '--once', ...args])
    t.equal(r.status, 2, args.join(' '))
    t.match(r.stderr, /^podctl: /)
    t.notMatch(r.stderr, /^\s+at /m)
  }
})

t.test('one leader among three; SIGTERM hands over within a few retry periods; SIGKILL too', async (t) => {
  const dir = setUp(t)
  const cs = ['c1', 'c2', 'c3'].map((id) => ({ id, c: startController(t, dir, id) }))
  const first = await pollUntil('a leader', () => {
    const l = lease(dir)
    return l.alive ? l.holder : undefined
  })
  // Watch the lease for a while: it never changes hands while its holder lives.
  for (let i = 0; i < 10; i++) {
    t.equal(lease(dir).holder, first, `round ${i}: still ${first}`)
    await new Promise((r) => setTimeout(r, 50))
  }
  const leader = cs.find((x) => x.id === first)!
  leader.c.proc.kill('SIGTERM')
  t.match(await leader.c.exited, { code: 0 }, 'SIGTERM: exit 0')
  t.match(leader.c.log(), /released the lease/)
  const second = await pollUntil('a new leader', () => {
    const l = lease(dir)
    return l.alive && l.holder !== first ? l.holder : undefined
  })
  t.not(second, first)
  const next = cs.find((x) => x.id === second)!
  next.c.proc.kill('SIGKILL')
  await next.c.exited
  const third = await pollUntil('the last one to lead', () => {
    const l = lease(dir)
    return l.alive && l.holder !== first && l.holder !== second ? l.holder : undefined
  })
  t.ok(third, `${third} leads after the SIGKILL of ${second}`)
  t.equal(lease(dir).transitions, 2, 'two hand-overs counted')
  // Work goes on under the new leader.
  t.equal(podctl(dir, ['volume', 'claim', 'create', 'after', '--size', '1M']).status, 0)
  await pollUntil('the claim to be bound by the third leader', () => claim(dir, 'after').phase === 'bound')
  t.equal(claim(dir, 'after').provisioned_by, third)
})

t.test('with a live controller, run waits for it; a stopped leader makes run time out (5), then its lease runs out and run does it inline', async (t) => {
  const dir = setUp(t)
  const c = startController(t, dir, 'ctl')
  await pollUntil('the controller to lead', () => lease(dir).alive)
  const m = path.join(path.dirname(dir), 'm.json')
  fs.writeFileSync(m, JSON.stringify(claimManifest('web')))
  const r = podctl(dir, ['run', '--manifest', m])
  t.equal(r.status, 0, r.stderr)
  t.match(claim(dir, 'web'), { phase: 'bound', provisioned_by: 'ctl' }, 'the controller bound it, not run')

  // A claim made by hand is bound with no command waiting for it: the watch.
  t.equal(podctl(dir, ['volume', 'claim', 'create', 'by-hand', '--size', '1M']).status, 0)
  await pollUntil('the watch to bring the claim to the controller', () => claim(dir, 'by-hand').phase === 'bound')

  c.proc.kill('SIGSTOP')
  fs.writeFileSync(m, JSON.stringify(claimManifest('late')))
  const waited = podctl(dir, ['run', '--manifest', m, '--timeout', '200ms'])
  t.equal(waited.status, 5, 'the lease is live and nobody works: --timeout, exit 5')
  t.match(waited.stderr, /volume claim late is still pending \(a controller is working on it\)/)
  await pollUntil('the stopped leader\'s lease to run out', () => !lease(dir).alive)
  const inline = podctl(dir, ['run', '--manifest', m])
  t.equal(inline.status, 0, inline.stderr)
  t.match(claim(dir, 'late'), { phase: 'bound', provisioned_by: /\/\d+$/ }, 'run provisioned it itself')
  c.proc.kill('SIGCONT')
  await pollUntil('the woken controller to notice it lost the lease or take it again', () => /could not renew|leading/.test(c.log()))
  t.equal(volumes(dir).length, 3, 'three claims, three volumes')
})

t.test('claim rm under a live controller: the controller applies the reclaim policy', async (t) => {
  const dir = setUp(t)
  startController(t, dir, 'ctl')
  await pollUntil('the controller to lead', () => lease(dir).alive)
  t.equal(podctl(dir, ['volume', 'claim', 'create', 'gone', '--size', '1M']).status, 0)
  await pollUntil('bound', () => claim(dir, 'gone').phase === 'bound')
  const volume = claim(dir, 'gone').volume as string
  t.equal(podctl(dir, ['volume', 'claim', 'rm', 'gone']).status, 0)
  await pollUntil('the released volume to be deleted by the controller', () => !volumes(dir).some((v) => v.name === volume))
})

t.test('a failing exec provisioner under a controller: retries 1 s then 2 s apart, given up at the threshold with a Warning, no more calls', async (t) => {
  const dir = setUp(t)
  const base = path.dirname(dir)
  const log = path.join(base, 'calls.log')
  const prog = path.join(base, 'failing.sh')
  fs.writeFileSync(prog, `#!/bin/sh\ncat >/dev/null\ndate +%s.%N >> ${JSON.stringify(log)}\necho "the pool is full" >&2\nexit 3\n`, { mode: 0o755 })
  t.equal(podctl(dir, ['volume', 'class', 'create', 'ext', '--provisioner', `exec:${prog}`]).status, 0)
  t.equal(podctl(dir, ['volume', 'claim', 'create', 'db', '--class', 'ext']).status, 0)
  startController(t, dir, 'c1', ['--failed-provision-threshold', '3'])
  const events = await pollUntil('the claim given up', () => {
    const e = claim(dir, 'db').events as { type: string; reason: string; message: string; count: number }[]
    return e.some((x) => x.message.startsWith('gave up')) ? e : undefined
  })
  const times = fs.readFileSync(log, 'utf8').trim().split('\n').map(Number)
  t.equal(times.length, 3, 'three calls')
  const gaps = [times[1]! - times[0]!, times[2]! - times[1]!]
  t.ok(gaps[0]! >= 0.9 && gaps[0]! < 1.9, `then 1 s (${gaps[0]!.toFixed(2)} s)`)
  t.ok(gaps[1]! >= 1.9 && gaps[1]! < 3.9, `then 2 s (${gaps[1]!.toFixed(2)} s)`)
  t.match(events.at(-1), { type: 'Warning', reason: 'ProvisioningFailed', message: /^gave up after 3 failures: .*the pool is full/ })
  t.equal(claim(dir, 'db').phase, 'pending')
  await new Promise((r) => setTimeout(r, 4500))
  t.equal(fs.readFileSync(log, 'utf8').trim().split('\n').length, 3, 'no call after giving up')
})

t.test('--gc-interval: the leader collects exited pods (podctl gc in a child process) and counts them', async (t) => {
  const dir = setUp(t)
  for (let i = 0; i < 3; i++) t.equal(podctl(dir, ['run', '--', '/bin/true']).status, 0)
  t.equal(JSON.parse(podctl(dir, ['list', '--format', 'json']).stdout).length, 3)
  const c = startController(t, dir, 'gc-1', ['--gc-interval', '500ms', '--gc-grace-period', '0s'])
  await pollUntil('the exited pods collected', () => JSON.parse(podctl(dir, ['list', '--format', 'json']).stdout).length === 0)
  await pollUntil('the gc logged', () => /gc: marked 0, deleted 3/.test(c.log()))
  t.pass('three exited pods deleted by the controller\'s gc')
  t.notMatch(c.log(), /gc: .*failed/, 'no gc failure')
})

t.test('--once with --gc-interval: one gc pass as well, beside the claims; --gc-interval 0s: none', async (t) => {
  const dir = setUp(t)
  for (let i = 0; i < 2; i++) t.equal(podctl(dir, ['run', '--', '/bin/true']).status, 0)
  t.equal(podctl(dir, ['volume', 'claim', 'create', 'g', '--size', '1M']).status, 0)
  const off = podctl(dir, ['controller', '--once', '--gc-interval', '0s', '--gc-grace-period', '0s'])
  t.equal(off.status, 0, off.stderr)
  t.equal(JSON.parse(podctl(dir, ['list', '--format', 'json']).stdout).length, 2, '--gc-interval 0s: the exited pods stay')
  const r = podctl(dir, ['controller', '--once', '--gc-interval', '1m', '--gc-grace-period', '0s'])
  t.equal(r.status, 0, r.stderr)
  t.same(JSON.parse(podctl(dir, ['list', '--format', 'json']).stdout), [], 'the exited pods are collected by the one pass')
  t.match(r.stderr, /gc: marked 0, deleted 2/, 'and the pass is logged')
  t.equal(claim(dir, 'g').phase, 'bound', 'the claims are bound in the same run')
})

t.test('--no-leader-elect works without a lease, and never says "not leading"', async (t) => {
  const dir = setUp(t)
  t.equal(podctl(dir, ['volume', 'claim', 'create', 'n', '--size', '1M']).status, 0)
  const once = podctl(dir, ['controller', '--once', '--no-leader-elect', '--gc-interval', '0s'])
  t.equal(once.status, 0, once.stderr)
  t.equal(claim(dir, 'n').phase, 'bound', '--once binds the claim')
  t.notMatch(once.stderr, /not leading/, '--once: no "not leading"')
  const c = startController(t, dir, 'nle', ['--no-leader-elect'])
  t.equal(podctl(dir, ['volume', 'claim', 'create', 'm', '--size', '1M']).status, 0)
  await pollUntil('bound by the running controller', () => claim(dir, 'm').phase === 'bound')
  c.proc.kill('SIGTERM')
  t.equal((await c.exited).code, 0, 'SIGTERM: exit 0')
  t.notMatch(c.log(), /not leading/, 'working and stopping: no "not leading"')
  t.equal(lease(dir).holder, null, 'and it took no lease')
})

const get = (port: number, p: string): Promise<{ status: number; body: string }> =>
  new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: p }, (res) => {
        let body = ''
        res.setEncoding('utf8').on('data', (s: string) => (body += s))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
      })
      .on('error', reject)
  })

t.test('--metrics-address serves the seed\'s metrics and /healthz', async (t) => {
  const dir = setUp(t)
  const port = 20_000 + (process.pid % 20_000)
  const c = startController(t, dir, 'ctl', ['--metrics-address', `127.0.0.1:${port}`])
  await pollUntil('the controller to lead', () => lease(dir).alive)
  t.equal(podctl(dir, ['volume', 'claim', 'create', 'm', '--size', '1M']).status, 0)
  await pollUntil('bound', () => claim(dir, 'm').phase === 'bound')
  t.match(await get(port, '/healthz'), { status: 200, body: 'ok\n' })
  const metrics = (await get(port, '/metrics')).body
  t.match(metrics, /^controller_persistentvolumeclaim_provision_total\{class="std",source="controller"\} 1$/m)
  t.match(metrics, /^controller_persistentvolumeclaim_provision_duration_seconds_count\{class="std"\} 1$/m)
  t.match(metrics, /^leader_election_master_status\{name="podctl-controller"\} 1$/m)
  for (const name of ['controller_persistentvolumeclaim_provision_failed_total', 'controller_persistentvolume_delete_total', 'podctl_pods', 'podctl_gc_pods_deleted_total']) {
    t.match(metrics, new RegExp(`^# TYPE ${name} `, 'm'), name)
  }
  t.equal((await get(port, '/nothing')).status, 404)
  c.proc.kill('SIGTERM')
  t.match(await c.exited, { code: 0 })
})

t.test('exactly once: 24 claims under three controllers and 8 inline runs at once, one volume per claim', async (t) => {
  const dir = setUp(t)
  for (const id of ['x1', 'x2', 'x3']) startController(t, dir, id)
  const names = Array.from({ length: 24 }, (_, i) => `c${i}`)
  const base = path.dirname(dir)
  // Half made by hand for the controllers, the other half by runs racing them.
  const made = names.slice(0, 16).map((n) => podctlAsync(t, dir, ['volume', 'claim', 'create', n, '--size', '1M']))
  const runs = names.slice(16).map((n) => {
    const m = path.join(base, `${n}.json`)
    fs.writeFileSync(m, JSON.stringify(claimManifest(n)))
    return podctlAsync(t, dir, ['run', '--manifest', m])
  })
  for (const r of await Promise.all([...made, ...runs])) t.equal(r.status, 0, r.stderr)
  await pollUntil('every claim to be bound', () => names.every((n) => claim(dir, n).phase === 'bound'))
  const vs = volumes(dir)
  t.equal(vs.length, names.length, 'as many volumes as claims')
  t.equal(new Set(names.map((n) => claim(dir, n).volume)).size, names.length, 'each claim its own volume')
})

t.test('SIGTERM with a provisioner in hand: exit 0 within 2 s, the provisioner killed with its children, the claim taken up again', async (t) => {
  const dir = setUp(t)
  const base = path.dirname(dir)
  const pids = path.join(base, 'pids')
  const store = path.join(base, 'store')
  fs.mkdirSync(store)
  // Slow the first time (and its child holds stdout), quick after: the second controller finds it done.
  const prog = path.join(base, 'slow.sh')
  fs.writeFileSync(
    prog,
    `#!/bin/sh\ninput=$(cat)\nname=$(printf '%s' "$input" | sed -n 's/.*"volume_name":"\\([^"]*\\)".*/\\1/p')\nif [ ! -e ${JSON.stringify(pids)} ]; then sleep 60 & echo "$$ $!" > ${JSON.stringify(pids)}; wait; fi\nmkdir -p ${JSON.stringify(store)}/"$name"\nprintf '{"path":"%s/%s"}' ${JSON.stringify(store)} "$name"\n`,
    { mode: 0o755 },
  )
  t.equal(podctl(dir, ['volume', 'class', 'create', 'slow', '--provisioner', `exec:${prog}`]).status, 0)
  t.equal(podctl(dir, ['volume', 'claim', 'create', 'db', '--class', 'slow']).status, 0)
  const c = startController(t, dir, 'busy')
  await pollUntil('the provisioner to be running', () => fs.existsSync(pids) && fs.readFileSync(pids, 'utf8').endsWith('\n'))
  const [shell, child] = fs.readFileSync(pids, 'utf8').trim().split(' ').map(Number)
  t.teardown(() => {
    for (const p of [shell!, child!]) if (alive(p)) process.kill(p, 'SIGKILL')
  })
  const sent = Date.now()
  c.proc.kill('SIGTERM')
  t.match(await c.exited, { code: 0 }, 'exit 0')
  const took = Date.now() - sent
  t.ok(took <= 2000 + 250, `exited ${took} ms after SIGTERM (contract: 2 s)`)
  await pollUntil('the provisioner and its child killed', () => !alive(shell) && !alive(child), { intervalMs: 20, polls: 100 })
  t.match(c.log(), /stopped with work in hand/)
  t.match(claim(dir, 'db'), { phase: 'pending' }, 'the claim is still pending')
  t.match(lease(dir), { holder: null }, 'the lease is given back')
  const again = podctl(dir, ['controller', '--once', '--identity', 'next'])
  t.equal(again.status, 0, again.stderr)
  t.match(claim(dir, 'db'), { phase: 'bound', provisioned_by: 'next' }, 'the next controller asks again for the same volume and binds it')
})
