#!/usr/bin/env node
// The controller, three measurements:
// - throughput: `podctl controller --once --workers W` over N pending
//   claims of a `local` class (target: >= 200 claims/s with 4 workers),
//   and over M claims of an exec provisioner that sleeps 50 ms per call
//   (target: 4 workers >= 2.5 x 1 worker). Wall time of the whole process,
//   start-up included; every claim must end bound, one volume each.
// - failover: two controllers with short timings; SIGKILL the leader and
//   time until the lease names the other (target: median <= lease
//   duration + retry period).
// - idle cost: a controller with default timings on a data dir of P pods
//   and N bound claims; CPU (utime + stime from /proc) over a window that
//   holds a gc pass (after the first, which marks every exited pod once),
//   and peak RSS (targets: <= 1 % of one core, <= 100 MB).
//
//   node bench/controller.js [--claims 1000] [--exec-claims 100] [--reps 3]
//        [--failovers 5] [--pods 10000] [--idle-s 65] [--json]
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn, spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { LocalStore } from '../dist/lib/index.js'
import { buildPopulation } from './lib/population.js'
import { childEnv, median, round } from './lib/measure.js'
import { flag, option } from './lib/options.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const BIN = path.resolve(here, '..', 'bin', 'podctl')
const CLK_TCK = 100 // USER_HZ: /proc/<pid>/stat counts in it on Linux

const podctl = (dataDir, args, opts = {}) =>
  spawnSync(process.execPath, [BIN, '--dir', dataDir, ...args], { encoding: 'utf8', env: childEnv, ...opts })

/** A data dir with class `c` (provisioner `prov`) and `n` pending claims of it. */
const pendingClaims = async (root, label, n, prov) => {
  const dir = fs.mkdtempSync(path.join(root, `${label}-`))
  const r = podctl(dir, ['list'])
  if (r.status !== 0) throw new Error(`podctl list on a new data dir: ${r.stderr}`)
  const store = new LocalStore(dir)
  await store.createClass('c', { provisioner: prov, reclaim: 'delete' })
  for (let i = 0; i < n; i++) await store.createClaim(`claim-${i}`, { class: 'c', sizeBytes: 1 << 20 })
  return dir
}

/** Times `controller --once --workers w` over the claims of `dir`; checks that all of them ended bound. */
const timeOnce = (dir, n, workers) => {
  const t0 = process.hrtime.bigint()
  const r = podctl(dir, ['controller', '--once', '--workers', String(workers), '--gc-interval', '0s'])
  const ms = Number(process.hrtime.bigint() - t0) / 1e6
  if (r.status !== 0) throw new Error(`controller --once exited ${r.status}: ${r.stderr.slice(-2000)}`)
  const claims = JSON.parse(podctl(dir, ['volume', 'claim', 'list', '--format', 'json']).stdout)
  const bound = claims.filter((c) => c.phase === 'bound').length
  const volumes = new Set(claims.map((c) => c.volume)).size
  if (bound !== n || volumes !== n) throw new Error(`controller --once left ${n - bound} of ${n} claims unbound (${volumes} volumes)`)
  return ms
}

/** An exec provisioner that takes 50 ms per call and makes a directory under `root`. */
const sleepyProvisioner = (root) => {
  const file = path.join(root, 'sleepy-provisioner')
  const vols = path.join(root, 'sleepy-volumes')
  fs.mkdirSync(vols, { recursive: true })
  fs.writeFileSync(
    file,
    `#!/bin/sh
input=$(cat)
name=$(printf '%s' "$input" | sed -n 's/.*"volume_name":"\\([^"]*\\)".*/\\1/p')
sleep 0.05
case "$1" in
provision) mkdir -p "${vols}/$name" && printf '{"path":"${vols}/%s"}\\n' "$name" ;;
delete) rm -rf "${vols}/$name" && printf '{}\\n' ;;
esac
`,
    { mode: 0o755 },
  )
  return file
}

/** Claims/s for 1 and 4 workers, `reps` times each, interleaved, every run on fresh claims. */
const measureThroughput = async (root, { n, prov, reps, label, log }) => {
  const ms = { 1: [], 4: [] }
  for (let k = 0; k < reps; k++) {
    for (const w of k % 2 === 0 ? [1, 4] : [4, 1]) {
      const dir = await pendingClaims(root, `${label}-${w}`, n, prov)
      ms[w].push(timeOnce(dir, n, w))
      log(`controller: ${label}, ${n} claims, ${w} worker${w > 1 ? 's' : ''}: ${Math.round(ms[w].at(-1))} ms`)
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }
  const m1 = median(ms[1])
  const m4 = median(ms[4])
  return { claims: n, ms_1: round(m1), ms_4: round(m4), per_s_1: round((n / m1) * 1000), per_s_4: round((n / m4) * 1000), speedup: round(m1 / m4, 2), samples: ms }
}

const readLeaseHolder = (dir) => {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'controller', 'lease.json'), 'utf8')).holder
  } catch {
    return undefined
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

const startController = (dir, id, timing) => {
  const child = spawn(process.execPath, [BIN, '--dir', dir, 'controller', '--identity', id, '--gc-interval', '0s', ...timing], { stdio: 'ignore', env: childEnv })
  return { id, child }
}

const waitFor = async (what, test, timeoutMs) => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const got = test()
    if (got) return got
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(10)
  }
}

/** SIGKILL of the leader of two: ms until the lease names the other. */
const measureFailover = async (root, { trials, log }) => {
  const lease = { duration: 3000, renew: 2000, retry: 500 }
  const timing = ['--lease-duration', `${lease.duration}ms`, '--renew-deadline', `${lease.renew}ms`, '--retry-period', `${lease.retry}ms`]
  const dir = fs.mkdtempSync(path.join(root, 'failover-'))
  podctl(dir, ['list'])
  let seq = 0
  const running = [startController(dir, `bench-${seq++}`, timing), startController(dir, `bench-${seq++}`, timing)]
  const out = []
  try {
    for (let k = 0; k < trials; k++) {
      const holder = await waitFor('a leader', () => readLeaseHolder(dir), 30_000)
      const leader = running.find((c) => c.id === holder)
      if (!leader) throw new Error(`the lease names ${holder}, which this bench did not start`)
      await sleep(lease.retry * 2) // the standby has looked at the lease at least once
      const t0 = process.hrtime.bigint()
      leader.child.kill('SIGKILL')
      await waitFor('a new leader', () => {
        const h = readLeaseHolder(dir)
        return h && h !== holder ? h : undefined
      }, 60_000)
      out.push(Number(process.hrtime.bigint() - t0) / 1e6)
      log(`controller: failover ${k + 1}/${trials}: ${Math.round(out.at(-1))} ms`)
      running.splice(running.indexOf(leader), 1)
      running.push(startController(dir, `bench-${seq++}`, timing))
    }
  } finally {
    for (const c of running) c.child.kill('SIGKILL')
    fs.rmSync(dir, { recursive: true, force: true })
  }
  return { trials, lease_duration_ms: lease.duration, retry_period_ms: lease.retry, median_ms: round(median(out)), max_ms: round(Math.max(...out)), samples: out.map((x) => round(x)) }
}

const cpuTicks = (pid) => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // utime, stime, and the same of its children it has waited for (the CLI runs each gc pass as a child `podctl gc`)
  return Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])
}

const rssKiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)

/**
 * A controller with default timings over `pods` pods and `claims` bound
 * claims. Its first gc pass (a minute in) marks every exited pod, once;
 * idle is what follows: a window of `seconds` after that pass, which holds
 * the next one.
 */
const measureIdle = async (root, { pods, claims, seconds, log }) => {
  const dir = await pendingClaims(root, 'idle', claims, 'local')
  timeOnce(dir, claims, 4)
  await buildPopulation(dir, { prepared: pods / 2, exited: pods / 2, label: 'idle controller' })
  const child = spawn(process.execPath, [BIN, '--dir', dir, 'controller'], { stdio: ['ignore', 'ignore', 'pipe'], env: childEnv })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (s) => (stderr += s))
  try {
    await waitFor('the controller to lead', () => readLeaseHolder(dir), 30_000)
    const started = cpuTicks(child.pid)
    log('controller: idle: waiting for its first gc pass (a minute)')
    await waitFor('its first gc pass', () => /gc: marked/.test(stderr), 180_000)
    const firstPassS = (cpuTicks(child.pid) - started) / CLK_TCK
    const before = cpuTicks(child.pid)
    let peak = rssKiB(child.pid)
    const t0 = Date.now()
    while (Date.now() - t0 < seconds * 1000) {
      await sleep(1000)
      peak = Math.max(peak, rssKiB(child.pid))
    }
    const cpuS = (cpuTicks(child.pid) - before) / CLK_TCK
    const wallS = (Date.now() - t0) / 1000
    log(`controller: idle ${round(wallS)} s: ${cpuS} s of CPU, peak RSS ${Math.round(peak / 1024)} MiB (start-up to the end of the first gc pass: ${firstPassS} s of CPU)`)
    return { pods, claims, window_s: round(wallS), cpu_s: round(cpuS, 2), cpu_percent: round((cpuS / wallS) * 100, 2), peak_rss_mib: round(peak / 1024), first_pass_cpu_s: round(firstPassS, 2) }
  } finally {
    child.kill('SIGTERM')
    await new Promise((r) => child.once('exit', r))
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

export const measureController = async ({ claims = 1000, execClaims = 100, reps = 3, failovers = 5, pods = 10_000, idleS = 65, log = (s) => process.stderr.write(`${s}\n`) } = {}) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-controller-'))
  try {
    const local = await measureThroughput(root, { n: claims, prov: 'local', reps, label: 'local', log })
    const exec = await measureThroughput(root, { n: execClaims, prov: `exec:${sleepyProvisioner(root)}`, reps, label: 'exec 50 ms', log })
    const failover = await measureFailover(root, { trials: failovers, log })
    const idle = await measureIdle(root, { pods, claims, seconds: idleS, log })
    return { local, exec, failover, idle }
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
}

/** The idle measurement alone (`--only idle`). */
export const measureControllerIdle = async ({ claims = 1000, pods = 10_000, idleS = 65, log = (s) => process.stderr.write(`${s}\n`) } = {}) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-controller-'))
  try {
    return await measureIdle(root, { pods, claims, seconds: idleS, log })
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
}

/** The rows of the controller's table, with verdicts. */
export const controllerRows = (r) => [
  { what: `local, ${r.local.claims} claims, 4 workers`, value: `${r.local.per_s_4} claims/s (1 worker: ${r.local.per_s_1})`, target: '>= 200 claims/s', result: r.local.per_s_4 >= 200 ? 'PASS' : 'MISS' },
  { what: `exec (50 ms a call), ${r.exec.claims} claims`, value: `4 workers ${r.exec.speedup} x 1 worker (${r.exec.ms_4} vs ${r.exec.ms_1} ms)`, target: '>= 2.5 x', result: r.exec.speedup >= 2.5 ? 'PASS' : 'MISS' },
  {
    what: `failover after SIGKILL (${r.failover.trials} trials)`,
    value: `median ${r.failover.median_ms} ms, max ${r.failover.max_ms} ms`,
    target: `<= ${r.failover.lease_duration_ms + r.failover.retry_period_ms} ms (lease + retry)`,
    result: r.failover.median_ms <= r.failover.lease_duration_ms + r.failover.retry_period_ms ? 'PASS' : 'MISS',
  },
  { what: `idle CPU, ${r.idle.pods} pods, ${r.idle.claims} claims, ${r.idle.window_s} s`, value: `${r.idle.cpu_percent} % of a core (${r.idle.cpu_s} s)`, target: '<= 1 %', result: r.idle.cpu_percent <= 1 ? 'PASS' : 'MISS' },
  { what: 'idle peak RSS', value: `${r.idle.peak_rss_mib} MiB`, target: '<= 100 MB', result: r.idle.peak_rss_mib * 1.048576 <= 100 ? 'PASS' : 'MISS' },
]

export const formatControllerTable = (r) =>
  `controller:\n${controllerRows(r).map((x) => `  ${x.what.padEnd(48)} ${x.value.padEnd(48)} ${x.target.padEnd(30)} ${x.result}`).join('\n')}\n`

if (process.argv[1] && fs.realpathSync(process.argv[1]) === fileURLToPath(import.meta.url) && option('--only') === 'idle') {
  const r = await measureControllerIdle({ claims: Number(option('--claims', 1000)), pods: Number(option('--pods', 10_000)), idleS: Number(option('--idle-s', 65)) })
  process.stdout.write(`${JSON.stringify(r)}\n`)
} else if (process.argv[1] && fs.realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const r = await measureController({
    claims: Number(option('--claims', 1000)),
    execClaims: Number(option('--exec-claims', 100)),
    reps: Number(option('--reps', 3)),
    failovers: Number(option('--failovers', 5)),
    pods: Number(option('--pods', 10_000)),
    idleS: Number(option('--idle-s', 65)),
  })
  process.stdout.write(flag('--json') ? `${JSON.stringify(r, null, 2)}\n` : formatControllerTable(r))
}
