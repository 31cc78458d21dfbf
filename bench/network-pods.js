#!/usr/bin/env node
// The network benchmark of whole pods (CONTRACT §14), through bin/podctl
// as a user runs it, in a temp data dir (as root, with Debian's CNI plugins
// and an OCI runtime; it skips itself elsewhere, saying why):
//   - `run --isolation namespaces --network none -- /bin/true` and the
//     same pod on `bridge` (the default network), interleaved in one run,
//     medians; target: bridge ≤ none + 60 ms;
//   - N pods on `bridge` running at once (`run --detach ... -- sleep`, one
//     after another), each with an address, then all stopped and removed,
//     with the time each step took. It stops making pods (and says so)
//     when the host's available memory falls under 2 GiB.
// Part of `npm run bench` (BENCH_NETWORK_PODS=0 skips it) and runnable
// alone once dist/ is built:
//   node bench/network-pods.js [--reps 21] [--pods 250]
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { median, round, timeSpawn } from './lib/measure.js'
import { removeNetworking } from './lib/network-cleanup.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const BIN = path.resolve(here, '..', 'bin', 'podctl')
const MIN_AVAILABLE = 2 * 1024 ** 3

const memAvailable = () => Number(/^MemAvailable:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/meminfo', 'utf8'))?.[1] ?? 0) * 1024

/** Why whole pods on networks cannot be measured here, or undefined. */
const cannot = async () => {
  if (process.getuid?.() !== 0) return 'it needs root (CNI networks are root\'s)'
  const { findPlugin } = await import('../dist/lib/network/cni.js')
  const { DEFAULT_PLUGIN_DIRS } = await import('../dist/lib/network/layout.js')
  if (findPlugin('bridge', DEFAULT_PLUGIN_DIRS) === undefined) return 'no CNI plugins (containernetworking-plugins)'
  try {
    const { findRuntime } = await import('../dist/lib/runtime/runtime.js')
    findRuntime()
  } catch (er) {
    return er.message
  }
  return undefined
}

/** Measures; undefined (with the reason logged) where it cannot. */
export const measureNetworkPods = async ({ reps = 21, pods = 250, log = (s) => process.stderr.write(`bench: ${s}\n`) } = {}) => {
  const why = await cannot()
  if (why !== undefined) {
    log(`network pods: skipped, ${why}`)
    return undefined
  }
  const { attachmentsOf } = await import('../dist/lib/network/attach.js')
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-bench-netpods-'))
  fs.chmodSync(work, 0o700)
  const dir = path.join(work, 'data')
  const podctl = (args) => timeSpawn(process.execPath, [BIN, '--dir', dir, ...args])
  const uuids = []
  try {
    const run = (network) => {
      const r = podctl(['run', '--isolation', 'namespaces', ...(network === 'none' ? ['--network', 'none'] : []), '--', '/bin/true'])
      if (r.status !== 0) throw new Error(`podctl run (network ${network}) exited ${r.status ?? r.signal}: ${r.stderr.slice(0, 500)}`)
      return r.ms
    }
    // The first of each makes what is made once (the default network, its bridge and rules; the infra's root).
    run('none')
    run('bridge')
    const none = []
    const bridge = []
    for (let i = 0; i < reps; i++) {
      // Alternate which goes first, so that neither always follows the other.
      if (i % 2 === 0) none.push(run('none')), bridge.push(run('bridge'))
      else bridge.push(run('bridge')), none.push(run('none'))
    }
    const gc = podctl(['gc', '--grace-period', '0s'])
    if (gc.status !== 0) throw new Error(`podctl gc exited ${gc.status}: ${gc.stderr.slice(0, 500)}`)
    const out = { reps, none_ms: round(median(none)), bridge_ms: round(median(bridge)), loadavg_run: os.loadavg().map((x) => round(x, 2)) }
    out.over_ms = round(out.bridge_ms - out.none_ms)
    out.pass = out.over_ms <= 60
    log(`network pods: run --isolation namespaces -- /bin/true: network none ${out.none_ms} ms, bridge ${out.bridge_ms} ms, ${out.over_ms} ms more (target ≤ none + 60 ms: ${out.pass ? 'PASS' : 'MISS'}); medians of ${reps}, load ${out.loadavg_run[0]}`)

    // Many at once.
    const t0 = Date.now()
    let stoppedEarly
    for (let i = 0; i < pods; i++) {
      if (memAvailable() < MIN_AVAILABLE) {
        stoppedEarly = `the host had less than 2 GiB available after ${i} pods`
        break
      }
      const r = podctl(['run', '--detach', '--isolation', 'namespaces', '--', 'sleep', '3600'])
      if (r.status !== 0) {
        stoppedEarly = `run --detach of pod ${i + 1} exited ${r.status ?? r.signal}: ${r.stderr.trim().slice(0, 300)}`
        break
      }
      uuids.push(r.stdout.trim())
    }
    out.pods_asked = pods
    out.pods_started = uuids.length
    out.start_s = round((Date.now() - t0) / 1000, 1)
    // run --detach returns before the pod has joined its networks: each is waited for.
    const t1 = Date.now()
    const addressed = () => uuids.filter((u) => attachmentsOf(dir, u).some((a) => a.ip !== null)).length
    let n = addressed()
    for (let i = 0; i < 600 && n < uuids.length; i++) {
      await new Promise((r) => setTimeout(r, 100))
      n = addressed()
    }
    out.pods_with_address = n
    out.address_wait_s = round((Date.now() - t1) / 1000, 1)
    out.addresses_distinct = new Set(uuids.flatMap((u) => attachmentsOf(dir, u).map((a) => a.ip))).size
    const running = JSON.parse(podctl(['list', '--format', 'json']).stdout).filter((p) => p.state === 'running').length
    out.pods_running = running
    out.mem_available_gib = round(memAvailable() / 1024 ** 3, 2)
    out.loadavg_many = os.loadavg().map((x) => round(x, 2))
    const t2 = Date.now()
    const stop = podctl(['stop', ...uuids])
    out.stop_s = round((Date.now() - t2) / 1000, 1)
    const t3 = Date.now()
    const rm = podctl(['rm', ...uuids])
    out.rm_s = round((Date.now() - t3) / 1000, 1)
    out.stop_rm_ok = stop.status === 0 && rm.status === 0
    out.records_left = fs.existsSync(path.join(dir, 'networks', 'pods')) ? fs.readdirSync(path.join(dir, 'networks', 'pods')).length : 0
    if (stoppedEarly) out.stopped_early = stoppedEarly
    out.pass_many = out.pods_with_address === pods && running === pods
    log(
      `network pods: ${out.pods_started} of ${pods} bridge pods started in ${out.start_s} s (run --detach one after another), ${out.pods_with_address} with an address (${out.addresses_distinct} distinct) ${out.address_wait_s} s later, ${running} running at once${stoppedEarly ? ` (stopped early: ${stoppedEarly})` : ''}; ${out.mem_available_gib} GiB left available, load ${out.loadavg_many[0]}; stop ${out.stop_s} s, rm ${out.rm_s} s${out.stop_rm_ok ? '' : ` (stop ${stop.status}: ${stop.stderr.slice(0, 200)}; rm ${rm.status}: ${rm.stderr.slice(0, 200)})`}, ${out.records_left} network records left: ${out.pass_many ? 'PASS' : 'MISS'}`,
    )
    return out
  } finally {
    // Whatever still runs, then the data dir's bridge and chains, then the files.
    if (uuids.length > 0) podctl(['stop', '--force', ...uuids])
    podctl(['gc', '--grace-period', '0s'])
    await removeNetworking(dir)
    fs.rmSync(work, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const arg = (name, dflt) => {
    const i = process.argv.indexOf(name)
    const v = i > 0 ? Number(process.argv[i + 1]) : dflt
    if (!(Number.isInteger(v) && v > 0)) {
      console.error(`bench: ${name} takes a positive whole number`)
      process.exit(2)
    }
    return v
  }
  const r = await measureNetworkPods({ reps: arg('--reps', 21), pods: arg('--pods', 250) })
  if (r) console.log(JSON.stringify(r))
}
