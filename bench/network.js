#!/usr/bin/env node
// The network benchmark (CONTRACT §14): what a `bridge` pod pays over a
// `network: none` one, in the network room's own steps, in one process
// through the built library, in a temp data dir (as root, with Debian's
// CNI plugins; it skips itself elsewhere):
//   netns      createPodNetns: `ip netns add` and loopback up (a none pod
//              gets its namespace from the runtime instead)
//   add        attach to the default network: the bridge plugin (with
//              host-local) and portmap, and the records
//   del        detach: the DEL of both plugins, the record, the namespace
// and beside them what the plugins cost alone (one exec of each, run as
// attach runs them) and the floor of any exec (`/bin/true`). Medians of
// interleaved repetitions. Part of `npm run bench` (BENCH_NETWORK=0 skips
// it), and runnable alone once dist/ is built:
//   node bench/network.js [--reps 20]
import { spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { median, round } from './lib/measure.js'
import { removeNetworking } from './lib/network-cleanup.js'

const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6

/**
 * CPU time (user + system, ms) of this process's waited-for children so
 * far, from /proc/self/stat (cutime, cstime; a plugin's own children, such
 * as the bridge plugin's host-local, are in its count): what the plugins
 * cost, whatever else the machine is doing. Clock ticks of 10 ms, so read
 * as a sum over many pods.
 */
const childCpuMs = () => {
  const f = fs.readFileSync('/proc/self/stat', 'latin1')
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ')
  return (Number(rest[13]) + Number(rest[14])) * 10
}

/** Measures `reps` pods; undefined (with the reason logged) where pods cannot be attached. */
export const measureNetwork = async ({ reps = 20, log = (s) => process.stderr.write(`bench: ${s}\n`) } = {}) => {
  if (process.getuid?.() !== 0) {
    log('network: skipped, it needs root')
    return undefined
  }
  const { attach, detach, createPodNetns } = await import('../dist/lib/network/attach.js')
  const { networkEnv, DEFAULT_PLUGIN_DIRS } = await import('../dist/lib/network/layout.js')
  const { findPlugin, addList, delList } = await import('../dist/lib/network/cni.js')
  const { findNetwork } = await import('../dist/lib/network/networks.js')
  if (findPlugin('bridge', DEFAULT_PLUGIN_DIRS) === undefined) {
    log('network: skipped, no CNI plugins (containernetworking-plugins)')
    return undefined
  }
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-bench-net-'))
  fs.chmodSync(work, 0o700)
  const dataDir = path.join(work, 'data')
  const configDir = path.join(work, 'net.d')
  fs.mkdirSync(configDir)
  const env = networkEnv({ configDir })
  const samples = { netns: [], add: [], del: [], bridgeAdd: [], bridgeDel: [], portmapAdd: [], trueExec: [] }
  const cpu = { netns: 0, add: 0, del: 0 }
  try {
    const net = await findNetwork(dataDir, 'bridge', env)
    const onePod = async (keep) => {
      const uuid = randomUUID()
      const c0 = childCpuMs()
      let t0 = process.hrtime.bigint()
      const netns = await createPodNetns(dataDir, uuid)
      const a = ms(t0)
      const c1 = childCpuMs()
      t0 = process.hrtime.bigint()
      await attach(dataDir, { uuid, netns, networks: [{ name: 'bridge' }], hostname: 'bench' }, env)
      const b = ms(t0)
      const c2 = childCpuMs()
      t0 = process.hrtime.bigint()
      await detach(dataDir, uuid, env)
      const c = ms(t0)
      const c3 = childCpuMs()
      if (keep) {
        samples.netns.push(a)
        samples.add.push(b)
        samples.del.push(c)
        cpu.netns += c1 - c0
        cpu.add += c2 - c1
        cpu.del += c3 - c2
      }
    }
    /** The plugins alone, as attach runs them, in a namespace of their own. */
    const plugins = async () => {
      const name = `podctl-bench-${process.pid}`
      spawnSync('ip', ['netns', 'add', name])
      try {
        const target = { containerId: randomUUID(), netns: `/run/netns/${name}`, ifname: 'eth0', args: [['IgnoreUnknown', '1']] }
        const bridgeOnly = { ...net.conflist, plugins: [net.conflist.plugins[0]] }
        let t0 = process.hrtime.bigint()
        const result = await addList(bridgeOnly, target, {}, env)
        samples.bridgeAdd.push(ms(t0))
        t0 = process.hrtime.bigint()
        await addList({ ...net.conflist, plugins: [{ ...net.conflist.plugins[1], prevResult: result }] }, target, {}, env)
        samples.portmapAdd.push(ms(t0))
        t0 = process.hrtime.bigint()
        await delList(bridgeOnly, target, {}, result, env)
        samples.bridgeDel.push(ms(t0))
      } finally {
        spawnSync('ip', ['netns', 'del', name])
      }
    }
    const exec = () => {
      const t0 = process.hrtime.bigint()
      spawnSync('/bin/true')
      samples.trueExec.push(ms(t0))
    }
    await onePod(false) // the bridge and the firewall rules are made once, by the first pod
    for (let i = 0; i < reps; i++) {
      await onePod(true)
      await plugins()
      exec()
    }
    const m = (xs) => round(median(xs))
    const out = {
      reps,
      netns_ms: m(samples.netns),
      add_ms: m(samples.add),
      del_ms: m(samples.del),
      add_del_ms: m(samples.add.map((x, i) => x + samples.del[i])),
      netns_add_ms: m(samples.add.map((x, i) => x + samples.netns[i])),
      bridge_add_ms: m(samples.bridgeAdd),
      portmap_add_ms: m(samples.portmapAdd),
      bridge_del_ms: m(samples.bridgeDel),
      exec_true_ms: m(samples.trueExec),
      // Mean CPU time of the programs run (plugins, ip), per pod.
      netns_cpu_ms: round(cpu.netns / reps),
      add_cpu_ms: round(cpu.add / reps),
      del_cpu_ms: round(cpu.del / reps),
      loadavg: os.loadavg().map((x) => round(x, 2)),
    }
    // A none pod gets its namespace from the runtime for next to nothing; the ADD is what a bridge pod adds (createPodNetns is optional).
    out.pass = out.add_ms <= 60
    log(
      `network: ADD ${out.add_ms} ms + DEL ${out.del_ms} ms (ADD+DEL ${out.add_del_ms} ms); ADD ≤ 60 ms (what a bridge pod's start pays over network none): ${out.pass ? 'PASS' : 'MISS'}; with a namespace of podctl's own, ${out.netns_add_ms} ms; the bridge plugin alone ${out.bridge_add_ms} ms ADD, ${out.bridge_del_ms} ms DEL, portmap ${out.portmap_add_ms} ms, /bin/true ${out.exec_true_ms} ms; CPU of the programs run per pod: namespace ${out.netns_cpu_ms} ms, ADD ${out.add_cpu_ms} ms, DEL ${out.del_cpu_ms} ms; medians of ${reps}, load ${out.loadavg[0]}`,
    )
    return out
  } finally {
    // The data dir's bridge and chains, then the files.
    await removeNetworking(dataDir)
    fs.rmSync(work, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const i = process.argv.indexOf('--reps')
  const reps = i > 0 ? Number(process.argv[i + 1]) : 20
  if (!(Number.isInteger(reps) && reps > 0)) {
    console.error('bench: --reps takes a positive whole number')
    process.exit(2)
  }
  const r = await measureNetwork({ reps })
  if (r) console.log(JSON.stringify(r))
}
