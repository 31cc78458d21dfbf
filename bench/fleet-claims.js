#!/usr/bin/env node
// The fleet's claims on a loopback etcd of 3 members started here:
// - claims bound per second by one controller with --workers 4 through
//   etcd (target: >= 100/s), against the same controller binding the
//   same claims through a data dir's files; --claims pending claims are
//   written first, then the controller is started, and the time is from
//   its "leading" line to the last claim bound (the local provisioner:
//   the store's cost, not a provisioner's);
// - failover: 3 controllers (--lease-duration 3s, --retry-period 500ms),
//   the leader SIGKILLed --kills times; each time, how long until another
//   holds the election key (bound: lease + retry period).
// Needs the etcd binary (Debian's etcd-server); without it, it says so and exits 0.
//
//   node bench/fleet-claims.js [--claims 300] [--kills 20]
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { randomUUID } from 'node:crypto'
import { spawn, spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { median, round } from './lib/measure.js'
import { option } from './lib/options.js'
import { startEtcd } from './lib/etcd.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const BIN = path.resolve(here, '..', 'bin', 'podctl')
const CLAIMS = Number(option('--claims', 300))
const KILLS = Number(option('--kills', 20))
const PREFIX = '/podctl/'
const LEASE_MS = 3000
const RETRY_MS = 500

if (spawnSync('etcd', ['--version'], { stdio: 'ignore' }).status !== 0) {
  console.log('skipped: no etcd binary (apt-get install etcd-server etcd-client)')
  process.exit(0)
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const env = { ...process.env }
delete env.NODE_OPTIONS
delete env.PODCTL_CLUSTER

/** A pending claim as `volume claim create` writes it. */
const claim = (name, cls) => ({
  version: 1, name, uid: randomUUID(), class: cls, size_bytes: 1_000_000, access_mode: 'ReadWriteOnce', phase: 'pending', volume: null,
  created_at: new Date().toISOString(), bound_at: null, provisioned_by: null, provisioning: null, failures: 0, retry_at: null, events: [],
})

/** Starts `podctl args` and resolves with the child once a stderr line matches `re`. */
const startUntil = (args, re) =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] })
    let err = ''
    child.stderr.setEncoding('utf8').on('data', (s) => {
      err += s
      if (re.test(err)) resolve({ child, at: Date.now() })
    })
    child.on('exit', () => reject(new Error(`podctl ${args.join(' ')} ended: ${err.slice(-500)}`)))
  })

const stopChild = (child) =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once('exit', () => resolve())
    child.kill('SIGTERM')
  })

const { Etcd3 } = await import('etcd3')
const etcd = await startEtcd()
const client = new Etcd3({ hosts: etcd.endpoints.split(',') })
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-bench-claims-'))
process.on('exit', () => fs.rmSync(work, { recursive: true, force: true }))

const ctlFlags = ['--workers', '4', '--lease-duration', '15s', '--retry-period', '2s', '--gc-interval', '0s', '--log-format', 'json']

// --- claims bound per second, through etcd
const fleetDir = path.join(work, 'fleet-node')
const cluster = ['--cluster', etcd.endpoints, '--node', 'n0']
spawnSync(process.execPath, [BIN, '--dir', fleetDir, ...cluster, 'volume', 'class', 'create', 'loc', '--provisioner', 'local', '--param', 'node=n0'], { env, stdio: 'inherit' })
await Promise.all(Array.from({ length: CLAIMS }, (_, i) => client.put(`${PREFIX}claims/c${i}`).value(JSON.stringify(claim(`c${i}`, 'loc')))))
const claimBytes = (await client.get(`${PREFIX}claims/c0`).string()).length
let c = await startUntil(['--dir', fleetDir, ...cluster, 'controller', ...ctlFlags], /"msg":"leading/)
const boundInEtcd = async () => Object.values(await client.getAll().prefix(`${PREFIX}claims/`).json()).filter((x) => x.phase === 'bound').length
while ((await boundInEtcd()) < CLAIMS) await sleep(20)
const fleetMs = Date.now() - c.at
await stopChild(c.child)
const boundClaimBytes = (await client.get(`${PREFIX}claims/c0`).string()).length
const volumeBytes = Object.values(await client.getAll().prefix(`${PREFIX}volumes/`).strings()).map((v) => v.length)

// --- the same through a data dir
const localDir = path.join(work, 'local-node')
spawnSync(process.execPath, [BIN, '--dir', localDir, 'volume', 'class', 'create', 'loc', '--provisioner', 'local'], { env, stdio: 'inherit' })
fs.mkdirSync(path.join(localDir, 'claims'), { recursive: true })
for (let i = 0; i < CLAIMS; i++) fs.writeFileSync(path.join(localDir, 'claims', `c${i}.json`), `${JSON.stringify(claim(`c${i}`, 'loc'))}\n`)
c = await startUntil(['--dir', localDir, 'controller', ...ctlFlags], /"msg":"leading/)
const boundOnDisk = () => fs.readdirSync(path.join(localDir, 'claims')).filter((f) => !f.startsWith('.') && JSON.parse(fs.readFileSync(path.join(localDir, 'claims', f), 'utf8')).phase === 'bound').length
while (boundOnDisk() < CLAIMS) await sleep(20)
const localMs = Date.now() - c.at
await stopChild(c.child)

console.log(`claims bound by one controller, --workers 4, local provisioner (${CLAIMS} claims):`)
console.log(`  through a 3-member loopback etcd: ${fleetMs} ms, ${round((CLAIMS * 1000) / fleetMs, 0)} claims/s (target >= 100/s)`)
console.log(`  through the data dir:             ${localMs} ms, ${round((CLAIMS * 1000) / localMs, 0)} claims/s`)
console.log(`  a claim in etcd: ${claimBytes} bytes pending, ${boundClaimBytes} bound (with its event); a volume's record: ${median(volumeBytes)} bytes`)

// --- failover over KILLS SIGKILLs of the leader
const nodes = ['f0', 'f1', 'f2']
const dirs = nodes.map((n) => path.join(work, n))
const prefix2 = ['--cluster-prefix', '/failover/']
const electionKey = '/failover/election/controller'
const start = (i) =>
  startUntil(['--dir', dirs[i], '--cluster', etcd.endpoints, ...prefix2, '--node', nodes[i], 'controller', '--lease-duration', `${LEASE_MS}ms`, '--renew-deadline', `${LEASE_MS - 1000}ms`, '--retry-period', `${RETRY_MS}ms`, '--gc-interval', '0s', '--log-format', 'json'], /registered/)
const ctl = []
for (let i = 0; i < 3; i++) ctl[i] = (await start(i)).child
const holder = async () => {
  const v = await client.get(electionKey).string()
  return v === null ? null : JSON.parse(v).node
}
const took = []
for (let k = 0; k < KILLS; k++) {
  let leader
  while ((leader = await holder()) === null) await sleep(20)
  const i = nodes.indexOf(leader)
  // Killed at a random point of the leader's renewal period, as a crash would be.
  await sleep(Math.random() * RETRY_MS)
  const killedAt = Date.now()
  ctl[i].kill('SIGKILL')
  for (;;) {
    const h = await holder()
    if (h !== null && h !== leader) break
    await sleep(10)
  }
  took.push(Date.now() - killedAt)
  ctl[i] = (await start(i)).child
}
for (const ch of ctl) await stopChild(ch)
took.sort((a, b) => a - b)
const bound = LEASE_MS + RETRY_MS
const pct = (q) => took[Math.min(took.length - 1, Math.floor(q * took.length))]
console.log(`\nfailover after SIGKILL of the leader (${KILLS} kills; lease ${LEASE_MS} ms + retry ${RETRY_MS} ms = ${bound} ms):`)
console.log(`  min ${took[0]} ms, median ${median(took)} ms, p90 ${pct(0.9)} ms, max ${took.at(-1)} ms; within the bound: ${took.filter((x) => x <= bound).length}/${KILLS}`)
console.log(`  all: ${took.join(', ')}`)
client.close()
etcd.stop()
process.exit(0)
