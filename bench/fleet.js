#!/usr/bin/env node
// The fleet on a loopback etcd of 3 members started here:
// - `list --cluster` of N nodes x M pods (target: <= 1 s at 10 x 1,000),
//   against `node -e 0`, medians of --reps;
// - a simulation toward large fleets: --sim-nodes x --sim-pods pod
//   summaries published (as cluster controllers do: one put per changed
//   pod), then --churn of them changing per second for --sim-s seconds;
//   it reports the write rate etcd sustained, its database size, and
//   `list --cluster` at that size.
// Needs the etcd binary (Debian's etcd-server); without it, it says so and exits 0.
//
//   node bench/fleet.js [--nodes 10] [--pods 1000] [--reps 5]
//        [--sim-nodes 100] [--sim-pods 1000] [--churn 0.01] [--sim-s 20]
import path from 'node:path'
import { randomUUID } from 'node:crypto'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { median, round } from './lib/measure.js'
import { option } from './lib/options.js'
import { startEtcd } from './lib/etcd.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const BIN = path.resolve(here, '..', 'bin', 'podctl')
const NODES = Number(option('--nodes', 10))
const PODS = Number(option('--pods', 1000))
const REPS = Number(option('--reps', 5))
const SIM_NODES = Number(option('--sim-nodes', 100))
const SIM_PODS = Number(option('--sim-pods', 1000))
const CHURN = Number(option('--churn', 0.01))
const SIM_S = Number(option('--sim-s', 20))
const PREFIX = '/podctl/'

const now = () => new Date().toISOString()
/** A pod summary as a cluster controller publishes it: a running pod of two apps. */
const podJson = (node, j) => ({
  uuid: randomUUID(), name: `web-${j}`, state: 'running', created_at: now(), started_at: now(), gc_marked_at: null, pid: 1000 + j, mutable: false, exit_code: null,
  labels: { app: 'web', tier: 'frontend' }, annotations: {},
  apps: ['web', 'sidecar'].map((name, k) => ({ name, type: 'regular', state: 'running', pid: 2000 + 2 * j + k, started_at: now(), finished_at: null, exit_code: null })),
  node,
})

const timeMs = (args) => {
  const t0 = process.hrtime.bigint()
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 1024 ** 3 })
  const ms = Number(process.hrtime.bigint() - t0) / 1e6
  if (r.status !== 0) throw new Error(`${args.join(' ')}: exit ${r.status}: ${r.stderr}`)
  return { ms, stdout: r.stdout }
}

const listMs = (endpoints, want) => {
  const times = []
  for (let i = 0; i < REPS; i++) {
    const { ms, stdout } = timeMs([BIN, '--cluster', endpoints, 'list', '--format', 'json'])
    const n = JSON.parse(stdout).length
    if (n !== want) throw new Error(`list --cluster printed ${n} pods, not ${want}`)
    times.push(ms)
  }
  return median(times)
}

const dbSize = (endpoints) => {
  const r = spawnSync('etcdctl', ['--endpoints', endpoints.split(',')[0], 'endpoint', 'status', '--write-out', 'json'], { encoding: 'utf8' })
  return JSON.parse(r.stdout)[0].Status.dbSize
}

if (spawnSync('etcd', ['--version'], { stdio: 'ignore' }).status !== 0) {
  console.log('bench/fleet.js: no etcd binary here (apt-get install etcd-server etcd-client): skipped')
  process.exit(0)
}
const { Etcd3 } = await import('etcd3')

/** Publishes nodes x pods summaries, 200 puts in flight; the summaries by key. */
const fill = async (client, nodes, pods) => {
  const keys = []
  for (let n = 0; n < nodes; n++) {
    const node = `node-${n}`
    const lease = client.lease(3600, { autoKeepAlive: false })
    await lease.grant()
    await lease.put(`${PREFIX}nodes/${node}`).value(JSON.stringify({ name: node, version: 'bench', registered_at: now() }))
    for (let j = 0; j < pods; j += 200) {
      await Promise.all(
        Array.from({ length: Math.min(200, pods - j) }, (_, k) => {
          const v = podJson(node, j + k)
          const key = `${PREFIX}pods/${node}/${v.uuid}`
          keys.push([key, v])
          return client.put(key).value(JSON.stringify(v))
        }),
      )
    }
  }
  return keys
}

const etcd = await startEtcd()
const client = new Etcd3({ hosts: etcd.endpoints.split(',') })
try {
  const floor = median(Array.from({ length: REPS }, () => timeMs(['-e', '0']).ms))
  await fill(client, NODES, PODS)
  const list = listMs(etcd.endpoints, NODES * PODS)
  const bytes = JSON.stringify(podJson('node-0', 1)).length
  console.log(`list --cluster, ${NODES} nodes x ${PODS} pods: ${round(list)} ms (median of ${REPS}; node -e 0: ${round(floor)} ms); target <= 1000 ms: ${list <= 1000 ? 'PASS' : 'MISS'}`)
  console.log(`a pod's summary: ${bytes} bytes of JSON`)

  // The simulation: a bigger fleet, then churn.
  await client.delete().prefix(PREFIX)
  const t0 = Date.now()
  const keys = await fill(client, SIM_NODES, SIM_PODS)
  const fillS = (Date.now() - t0) / 1000
  const total = SIM_NODES * SIM_PODS
  console.log(`simulation: ${SIM_NODES} nodes x ${SIM_PODS} pods published in ${round(fillS)} s (${round(total / fillS)} puts/s); etcd db ${round(dbSize(etcd.endpoints) / 1024 ** 2)} MiB`)
  const perSecond = Math.round(total * CHURN)
  let written = 0
  let behind = 0
  const start = Date.now()
  for (let s = 0; s < SIM_S; s++) {
    const tick = Date.now()
    const batch = []
    for (let i = 0; i < perSecond; i++) {
      const [key, v] = keys[Math.floor(Math.random() * keys.length)]
      v.state = v.state === 'running' ? 'exited' : 'running'
      batch.push(client.put(key).value(JSON.stringify(v)))
    }
    await Promise.all(batch)
    written += batch.length
    const spent = Date.now() - tick
    if (spent > 1000) behind++
    else await new Promise((r) => setTimeout(r, 1000 - spent))
  }
  const churnS = (Date.now() - start) / 1000
  const bigList = listMs(etcd.endpoints, total)
  console.log(
    `churn: ${perSecond} changed pods/s asked (${CHURN * 100} % of ${total}) for ${SIM_S} s: ${round(written / churnS)} puts/s sustained, ${behind} seconds fell behind; etcd db ${round(dbSize(etcd.endpoints) / 1024 ** 2)} MiB (history uncompacted)`,
  )
  console.log(`list --cluster of ${total} pods: ${round(bigList)} ms (median of ${REPS})`)
} finally {
  client.close()
  etcd.stop()
}
