// Pods on networks under SIGKILL, and many pods in a row on a small
// network, through bin/podctl (CONTRACT §14): what test/crash/network-crash.ts
// runs in full (`npm run test:stress`) and test/bin/network-crash.ts runs a
// little of in `npm test`. Not a test file (test/helpers/ is excluded).
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { ipamHolders } from '../../lib/network/attach.js'
import { bridgeOf } from '../../lib/network/config.js'
import { bridgePorts } from '../../lib/network/host.js'
import { conflistFile, recordFile, recordsDir } from '../../lib/network/layout.js'
import { argvFor, launcher, podctl } from './cli-util.js'
import { pollUntil, seededRandom, type Test } from './common.js'
import { freeHostPort, netnsNames, podsDataDir, ruleLines } from './network.js'
import { alive, allPids, lockHolder } from './run-util.js'

const bridgeOfNetwork = (dir: string, name: string): string => bridgeOf(JSON.parse(fs.readFileSync(conflistFile(dir, name), 'utf8')))!

/** Where a pod's network set-up is: no record yet, an ADD under way, or every network added. */
const phaseOf = (dir: string, uuid: string): 'before' | 'during' | 'after' => {
  let rec: { attachments?: { state: string }[] }
  try {
    rec = JSON.parse(fs.readFileSync(recordFile(dir, uuid), 'utf8'))
  } catch {
    return 'before'
  }
  const atts = rec.attachments ?? []
  return atts.length > 0 && atts.every((a) => a.state === 'added') ? 'after' : 'during'
}

/** CNI plugins still running with this data dir's pods as their container (an ADD a kill left behind). */
const pluginsOf = (uuids: readonly string[]): number[] =>
  allPids().filter((p) => {
    try {
      const env = fs.readFileSync(`/proc/${p}/environ`, 'latin1')
      return uuids.some((u) => env.includes(`CNI_CONTAINERID=${u}`)) && alive(p)
    } catch {
      return false
    }
  })

/**
 * `kills` pods, each SIGKILLed at a seeded random moment around its
 * network set-up: its supervisor (`run --detach`) or the foreground `run`
 * that is its supervisor, a random time after its UUID is saved (just
 * before its containers are made), within about one and a half times what
 * a set-up takes here (measured on the first pod, which is killed once
 * its networks are added). The pods are on the default network, a named
 * one, or both, with a port published on the first. Then `gc`, and no
 * veth on the bridges, no address held, no rule naming a pod, no record,
 * no namespace, no plugin left running.
 */
export const killTrials = async (t: Test, kills: number, seed: number): Promise<void> => {
  const dir = podsDataDir(t)
  const c = podctl(dir, ['network', 'create', 'nc-net'])
  t.equal(c.status, 0, c.stderr)
  t.comment(`seed ${seed} (PODCTL_SEED=${seed} replays it)`)
  const rng = seededRandom(seed)
  const uuids: string[] = []
  const phases = { before: 0, during: 0, after: 0 }
  let span = 0
  for (let i = 0; i < kills; i++) {
    const nets = [['bridge'], ['nc-net'], ['nc-net', 'bridge']][Math.floor(rng() * 3)]!
    const foreground = rng() < 0.5
    const m = { apiVersion: 'podctl/v1', isolation: 'namespaces', networks: nets, ports: [{ hostPort: freeHostPort(), containerPort: 80 }], apps: [{ name: 'nc-app', exec: ['sleep', '600'] }] }
    const file = path.join(path.dirname(dir), `uuid-${i}`)
    const [cmd, argv] = launcher(argvFor(dir, ['run', ...(foreground ? [] : ['--detach']), '--uuid-file-save', file, '--manifest', '-']), false)
    const child = spawn(cmd, argv, { stdio: ['pipe', 'ignore', 'ignore'] })
    t.teardown(() => void child.kill('SIGKILL'))
    const closed = new Promise((r) => child.once('close', r))
    let ended = false
    void closed.then(() => (ended = true))
    child.stdin.end(JSON.stringify(m))
    await pollUntil(`pod ${i} made`, () => fs.existsSync(file) || ended, { polls: 2000, intervalMs: 5 })
    if (!fs.existsSync(file)) {
      t.fail(`pod ${i} ended before it was made`)
      continue
    }
    const t0 = Date.now()
    let delay = -1
    const uuid = fs.readFileSync(file, 'utf8').trim()
    uuids.push(uuid)
    // In the foreground the supervisor is podctl itself; a detached one holds the pod's lock (-1: it ended first).
    const supervisor = foreground ? child.pid! : await pollUntil(`pod ${i}'s supervisor`, () => lockHolder(dir, uuid) ?? (ended ? -1 : undefined), { polls: 2000, intervalMs: 5 })
    if (i === 0) {
      // The first is killed once its networks are added: how long that takes here sets the others' moments.
      // Or its end: a pod that failed (a port taken meanwhile) says why below rather than after 2000 polls.
      await pollUntil(`pod ${i}'s networks added`, () => phaseOf(dir, uuid) === 'after' || ended, { polls: 2000, intervalMs: 5 })
      if (phaseOf(dir, uuid) !== 'after') {
        t.fail(`pod ${i} ended before its networks were added: ${podctl(dir, ['status', uuid]).stdout.trim()}`)
        continue
      }
      span = Date.now() - t0
      t.comment(`a pod's networks were added ${span} ms after its UUID was saved`)
    } else {
      delay = Math.floor(rng() * span * 1.5)
      await new Promise((r) => setTimeout(r, delay))
    }
    const phase = phaseOf(dir, uuid)
    phases[phase]++
    const tk = Date.now()
    if (supervisor > 0) {
      try {
        process.kill(supervisor, 'SIGKILL')
      } catch {
        // it ended by itself
      }
    }
    await closed
    t.comment(`pod ${i} (${foreground ? 'foreground' : 'detached'}, ${nets.join('+')}): killed ${tk - t0} ms after its UUID was saved (delay ${delay}), ${phase} its ADD; closed ${Date.now() - tk} ms later`)
  }
  t.comment(`kills before the ADD: ${phases.before}, during it: ${phases.during}, after it: ${phases.after}`)
  t.equal(uuids.length, kills, 'every pod was made before its kill')
  for (const u of uuids) await pollUntil(`pod ${u}'s supervisor gone`, () => lockHolder(dir, u) === undefined, { polls: 400, intervalMs: 25 })
  const gc = podctl(dir, ['gc', '--grace-period', '0s'])
  t.equal(gc.status, 0, gc.stderr)
  t.same(fs.readdirSync(recordsDir(dir)), [], 'no record under networks/pods')
  for (const n of ['bridge', 'nc-net']) t.same(bridgePorts(bridgeOfNetwork(dir, n)), [], `no veth on ${n}'s bridge`)
  t.same(ipamHolders(dir), [], "no address held in host-local's directory")
  t.same(uuids.flatMap((u) => ruleLines(u)), [], 'no iptables rule naming a pod')
  t.same(netnsNames().filter((n) => uuids.some((u) => n.includes(u))), [], 'no namespace of a pod')
  t.same(pluginsOf(uuids), [], 'no plugin left running')
}

/**
 * `count` pods one after another in the foreground on a network of a /28
 * (13 addresses for pods): each prints its address; all get one in the
 * subnet, the addresses go round, and none is held after.
 */
export const sequentialPods = async (t: Test, count: number): Promise<void> => {
  const dir = podsDataDir(t)
  // A /28 of 10.91.240.0/20 that clashes with nothing on the host now (exit 1 names a clash).
  let subnet = ''
  for (let i = 0; i < 64 && subnet === ''; i++) {
    const s = `10.91.${240 + Math.floor(Math.random() * 16)}.${Math.floor(Math.random() * 16) * 16}/28`
    const r = podctl(dir, ['network', 'create', 'nc-small', '--subnet', s])
    if (r.status === 0) subnet = s
    else if (r.status !== 1) t.fail(`network create --subnet ${s}: ${r.status} ${r.stderr}`)
  }
  t.not(subnet, '', 'a /28 is made')
  const prefix = subnet.replace(/\.\d+\/28$/, '.')
  const base = Number(/\.(\d+)\/28$/.exec(subnet)![1])
  const m = JSON.stringify({ apiVersion: 'podctl/v1', isolation: 'namespaces', network: 'nc-small', apps: [{ name: 'nc-addr', exec: ['sh', '-c', 'ip -4 -o addr show eth0'] }] })
  const seen = new Map<string, number>()
  const failures: string[] = []
  for (let i = 0; i < count; i++) {
    const r = podctl(dir, ['run', '--manifest', '-'], { input: m })
    const ip = /inet (\d+\.\d+\.\d+\.\d+)\//.exec(r.stdout)?.[1]
    const last = ip === undefined ? -1 : Number(ip.split('.')[3])
    if (r.status !== 0 || ip === undefined || !ip.startsWith(prefix) || last <= base + 1 || last >= base + 15) failures.push(`pod ${i}: exit ${r.status}, ${JSON.stringify(r.stdout.trim())} ${r.stderr.trim()}`)
    else seen.set(ip, (seen.get(ip) ?? 0) + 1)
  }
  t.same(failures, [], `all ${count} pods got an address of ${subnet}`)
  t.equal(seen.size, Math.min(count, 13), `${seen.size} addresses handed out, the /28's 13 going round`)
  t.same(ipamHolders(dir), [], 'none is held after')
  t.same(fs.readdirSync(recordsDir(dir)), [], 'no record is left')
}
