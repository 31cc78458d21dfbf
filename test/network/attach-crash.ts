// Pods on networks through crashes and many pods in a row (lib/network/
// attach.ts), with Debian's real plugins in real network namespaces (as
// root): SIGKILLs of the process doing ADD at random moments, after which
// gc leaves no veth, no address, no rule and no namespace; and pods one
// after another in a /28, each of which gets an address (300 of them in
// `npm run test:stress`, 30 in `npm test`: more than twice round the 13
// addresses either way).
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { attach, detach, gcNetworks, ipamHolders } from '../../lib/network/attach.js'
import { bridgeOf } from '../../lib/network/config.js'
import { bridgePorts } from '../../lib/network/host.js'
import { createNetwork, findNetwork } from '../../lib/network/networks.js'
import { recordsDir } from '../../lib/network/layout.js'
import { portHolder } from '../../lib/network/ports.js'
import { STRESS, seededRandom, type Test } from '../helpers/common.js'
import { nodeCommand } from '../helpers/launcher.js'
import { netDataDir, netnsNames, networkMissing, ruleLines, testEnv } from '../helpers/network.js'

const missing = networkMissing()
if (missing !== undefined) t.plan(0, `pods on CNI networks: ${missing}`)

const ATTACHER = fileURLToPath(new URL('../helpers/net-attach.mjs', import.meta.url))

const ip = (args: string[]): number | null => spawnSync('ip', args).status

/** A host port nobody holds now. */
const freePort = (): number => {
  for (;;) {
    const p = 20000 + Math.floor(Math.random() * 20000)
    if (portHolder({ hostPort: p, containerPort: 1, protocol: 'tcp', hostIP: '' }, []) === undefined) return p
  }
}

const bridgeOfNet = async (dataDir: string, name: string, t: Test): Promise<string> => bridgeOf((await findNetwork(dataDir, name, testEnv(t))).conflist)!

t.test(`pods one after another in a /28 all get an address (${STRESS ? 300 : 30} of them, 13 addresses)`, async (t) => {
  const dataDir = netDataDir(t)
  const env = testEnv(t)
  // A /28 of 10.91.240.0/20 that no other test holds now.
  let made = false
  for (let i = 0; i < 256 && !made; i++) {
    try {
      await createNetwork(dataDir, 'small', { subnet: `10.91.${240 + Math.floor(Math.random() * 16)}.${Math.floor(Math.random() * 16) * 16}/28` }, env)
      made = true
    } catch (er) {
      if ((er as { code?: string }).code !== 'EFAILED') throw er
    }
  }
  // One namespace of the test's own for all of them: each pod is another container id in it.
  const netns = `/run/netns/podctl-t${process.pid}`
  t.equal(ip(['netns', 'add', path.basename(netns)]), 0)
  t.teardown(() => void ip(['netns', 'del', path.basename(netns)]))
  const runs = STRESS ? 300 : 30
  const seen = new Set<string>()
  let all = true
  for (let i = 0; i < runs; i++) {
    const uuid = randomUUID()
    const [a] = await attach(dataDir, { uuid, netns, networks: [{ name: 'small' }], hostname: 'p' }, env)
    if (!a?.ip) all = false
    else seen.add(a.ip)
    await detach(dataDir, uuid, env)
  }
  t.ok(all, `all ${runs} got an address`)
  t.equal(seen.size, 13, 'every address of the /28 but the network, the gateway and the broadcast was handed out')
  t.same(ipamHolders(dataDir), [], 'none is held after')
  t.same(fs.readdirSync(recordsDir(dataDir)), [], 'no record is left')
})

t.test('SIGKILLs of the process doing ADD, at random moments, then gc: no veth, no address, no rule, no namespace', async (t) => {
  const dataDir = netDataDir(t)
  const env = testEnv(t)
  await createNetwork(dataDir, 'front', {}, env)
  await findNetwork(dataDir, 'bridge', env) // the default network, made before the children race to make it
  const seed = Number(process.env.PODCTL_SEED ?? Date.now() % 1e9)
  t.comment(`seed ${seed} (PODCTL_SEED=${seed} replays it)`)
  const random = seededRandom(seed)
  const kills = 20
  // All the children load at once, and each waits for its go: the kill falls in its attach.
  const children = Array.from({ length: kills + 1 }, () => {
    const uuid = randomUUID()
    const [node, argv] = nodeCommand([ATTACHER, dataDir, uuid, env.configDir, `bridge:${freePort()}`, 'front'])
    const proc = spawn(node, argv, { stdio: ['pipe', 'pipe', 'pipe'] })
    t.teardown(() => void proc.kill('SIGKILL'))
    let out = ''
    const said = (word: string) =>
      new Promise<void>((resolve, reject) => {
        const check = (): void => {
          if (out.includes(word)) resolve()
        }
        proc.stdout!.on('data', (b) => {
          out += b
          check()
        })
        proc.stderr!.on('data', (b) => (out += b))
        proc.on('exit', () => (out.includes(word) ? resolve() : reject(new Error(`net-attach.mjs ended without "${word}": ${out}`))))
        check()
      })
    const exited = new Promise((r) => proc.on('exit', r))
    proc.stdin!.on('error', () => {}) // EPIPE from one that is gone
    const attached = said('attached')
    attached.catch(() => {}) // a killed one never says it
    return { uuid, proc, ready: said('ready'), attached, exited }
  })
  await Promise.all(children.map((c) => c.ready))
  // One left alone says how long an attach takes here.
  const first = children.shift()!
  const t0 = Date.now()
  first.proc.stdin!.write('go\n')
  await first.attached
  const span = Date.now() - t0
  t.comment(`an attach took ${span} ms`)
  for (const c of children) {
    c.proc.stdin!.write('go\n')
    await new Promise((r) => setTimeout(r, Math.floor(random() * span)))
    c.proc.kill('SIGKILL')
    await c.exited
  }
  const r = await gcNetworks(dataDir, env)
  t.same(r.failed, [], 'every DEL succeeded')
  t.ok(r.detached.includes(first.uuid), 'the pod that attached, and whose process is gone, is detached too')
  t.same(fs.readdirSync(recordsDir(dataDir)), [], 'no record is left')
  for (const name of ['bridge', 'front']) t.same(bridgePorts(await bridgeOfNet(dataDir, name, t)), [], `no veth on ${name}'s bridge`)
  t.same(ipamHolders(dataDir), [], 'no address held')
  const links = spawnSync('ip', ['-o', 'link', 'show', 'type', 'veth'], { encoding: 'utf8' }).stdout
  for (const u of [first, ...children].map((c) => c.uuid)) {
    t.same(ruleLines(u), [], `no rule of pod ${u.slice(0, 8)}`)
    t.notOk(netnsNames().includes(`podctl-${u}`), `no namespace of pod ${u.slice(0, 8)}`)
    t.notMatch(links, u, `no veth whose peer is in pod ${u.slice(0, 8)}'s namespace`)
  }
})
