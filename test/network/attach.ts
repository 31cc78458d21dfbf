// Pods on networks (lib/network/attach.ts) with Debian's real plugins in
// real network namespaces (as root): ADD and DEL of the default bridge and
// a named network, checked on the host (the veth on the bridge, the address
// in the namespace, host-local's reservation, portmap's rules) and gone
// after; two namespaces talking over one bridge, knowing each other by
// name, and not reaching across two networks; a port published from the
// host's own address; ports that are taken; an address whose record was
// lost. Crashes and many pods in a row: attach-crash.ts.
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { attach, attachmentsOf, createPodNetns, detach, formatNetworks, gcNetworks, ipamHolders, reserveAttach } from '../../lib/network/attach.js'
import { bridgeOf } from '../../lib/network/config.js'
import { dataDirTag } from '../../lib/network/firewall.js'
import { bridgePorts } from '../../lib/network/host.js'
import { createNetwork, findNetwork, removeNetwork } from '../../lib/network/networks.js'
import { recordFile } from '../../lib/network/layout.js'
import { holdNetns } from '../../lib/network/netns.js'
import { portHolder } from '../../lib/network/ports.js'
import { pollUntil, type Test } from '../helpers/common.js'
import { nodeCommand } from '../helpers/launcher.js'
import { hostAddress, inNetns, netDataDir, netnsNames, networkMissing, removeRulesHolding, ruleLines, scratch, testEnv } from '../helpers/network.js'

const missing = networkMissing()
if (missing !== undefined) t.plan(0, `pods on CNI networks: ${missing}`)
const host = hostAddress()

/** A host port nobody holds now. */
const freePort = (): number => {
  for (;;) {
    const p = 20000 + Math.floor(Math.random() * 20000)
    if (portHolder({ hostPort: p, containerPort: 1, protocol: 'tcp', hostIP: '' }, []) === undefined) return p
  }
}

const bridgeOfNet = async (dataDir: string, name: string, t: Test): Promise<string> => bridgeOf((await findNetwork(dataDir, name, testEnv(t))).conflist)!

/** A TCP server in a namespace answering `answer` on `port`; killed at teardown. Resolves once it listens. */
const serveIn = async (t: Test, netns: string, port: number, answer: string): Promise<void> => {
  const [node, argv] = nodeCommand(['-e', `require('net').createServer((s) => s.end(${JSON.stringify(answer)})).listen(${port}, () => console.log('up'))`])
  const child = spawn('ip', ['netns', 'exec', path.basename(netns), node, ...argv], { stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(() => void child.kill('SIGKILL'))
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve())
    child.once('exit', (code) => reject(new Error(`the server in ${netns} exited with ${code}`)))
  })
}

/** What a TCP connection to host:port reads before the other end closes, or the error's code. */
const fetchText = (host: string, port: number): Promise<string> =>
  new Promise((resolve) => {
    const s = net.connect({ host, port, timeout: 3000 })
    let got = ''
    s.on('data', (b) => (got += b.toString()))
    s.on('end', () => resolve(got))
    s.on('timeout', () => {
      s.destroy()
      resolve('timeout')
    })
    s.on('error', (er: NodeJS.ErrnoException) => resolve(er.code ?? 'error'))
  })

t.test('ADD then DEL: the default bridge and a named network, on the host and gone after', async (t) => {
  const dataDir = netDataDir(t)
  const env = testEnv(t)
  await createNetwork(dataDir, 'front', {}, env)
  const uuid = randomUUID()
  const netns = await createPodNetns(dataDir, uuid)
  t.ok(netnsNames().includes(`podctl-${uuid}`), 'the namespace is made, and recorded first')
  t.ok(fs.existsSync(recordFile(dataDir, uuid)))
  const port = freePort()
  const etcDir = path.join(scratch(t), 'etc')
  const atts = await attach(dataDir, { uuid, netns, networks: [{ name: 'bridge', ports: [{ hostPort: port, containerPort: 80, protocol: 'tcp', hostIP: '' }] }, { name: 'front' }], hostname: 'web', names: ['web'], etcDir }, env)
  t.same(atts.map((a) => [a.name, a.iface]), [['bridge', 'eth0'], ['front', 'eth1']])
  t.match(atts[0], { ip: /^10\.9[01]\.\d+\.\d+$/, ip6: null, mac: /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/ })
  t.same(attachmentsOf(dataDir, uuid), atts, 'what list shows is what attach said')
  t.equal(formatNetworks(atts), `bridge:ip4=${atts[0]!.ip}, front:ip4=${atts[1]!.ip}`)
  const defaultBridge = await bridgeOfNet(dataDir, 'bridge', t)
  const frontBridge = await bridgeOfNet(dataDir, 'front', t)
  t.equal(bridgePorts(defaultBridge).length, 1, "the pod's veth is on the default bridge")
  t.equal(bridgePorts(frontBridge).length, 1, 'and one on the named network\'s')
  t.match(inNetns(netns, ['ip', '-o', 'addr', 'show', 'eth0']).stdout, ` inet ${atts[0]!.ip}/24 `, 'the address is in the namespace')
  t.match(inNetns(netns, ['ip', '-o', 'addr', 'show', 'eth1']).stdout, ` inet ${atts[1]!.ip}/24 `)
  t.same(ipamHolders(dataDir).map((h) => [h.network, h.address, h.id]).sort(), [['bridge', atts[0]!.ip, uuid], ['front', atts[1]!.ip, uuid]], "host-local holds both addresses, under the data dir")
  t.ok(ruleLines(uuid).length > 0, "portmap's rules for the published port")
  const tag = dataDirTag(dataDir)
  t.ok(ruleLines(`-A PODCTL-NAT-${tag} -s `).length === 2, "each network's masquerade, made once per network")
  t.match(fs.readFileSync(path.join(etcDir, 'hosts'), 'utf8'), new RegExp(`\n${atts[0]!.ip!.replace(/\./g, '\\.')}\tweb\n`))
  t.equal(fs.readFileSync(path.join(etcDir, 'hostname'), 'utf8'), 'web')
  t.notMatch(fs.readFileSync(path.join(etcDir, 'resolv.conf'), 'utf8'), /nameserver 127\./)
  await t.rejects(attach(dataDir, { uuid, netns, networks: [{ name: 'front' }], hostname: 'web' }, env), { code: 'EBADSTATE' }, 'attached twice')

  await detach(dataDir, uuid, env)
  t.same(bridgePorts(defaultBridge), [], 'no veth on the default bridge')
  t.same(bridgePorts(frontBridge), [], 'nor on the named one')
  t.same(ipamHolders(dataDir), [], 'no address held')
  t.same(ruleLines(uuid), [], 'no rule of the pod')
  t.notOk(netnsNames().includes(`podctl-${uuid}`), 'its namespace is gone')
  t.notOk(fs.existsSync(recordFile(dataDir, uuid)), 'and its record')
  await detach(dataDir, uuid, env)
  t.pass('a second detach does nothing')

  await removeNetwork(dataDir, 'front', env)
  t.equal(ruleLines(`-A PODCTL-NAT-${tag} -s `).length, 1, "the removed network's rules are gone")
  t.notOk(fs.existsSync(`/sys/class/net/${frontBridge}`), 'and its bridge')
})

t.test('two namespaces on one bridge reach each other by IP, know each other by name, and not across networks', async (t) => {
  const dataDir = netDataDir(t)
  const env = testEnv(t)
  await createNetwork(dataDir, 'front', {}, env)
  await createNetwork(dataDir, 'back', {}, env)
  const pod = async (name: string, network: string, port?: number) => {
    const uuid = randomUUID()
    const netns = await createPodNetns(dataDir, uuid)
    const etcDir = path.join(scratch(t), `etc-${name}`)
    const ports = port !== undefined ? [{ hostPort: port, containerPort: 8080, protocol: 'tcp' as const, hostIP: '' }] : []
    const [a] = await attach(dataDir, { uuid, netns, networks: [{ name: network, aliases: [`${name}-alias`], ports }], name, hostname: name, names: [name, `${name}-app`], etcDir }, env)
    return { uuid, netns, etcDir, ip: a!.ip! }
  }
  const published = freePort()
  const a = await pod('alpha', 'front', published)
  const hostsInode = fs.statSync(path.join(a.etcDir, 'hosts')).ino
  const b = await pod('beta', 'front')
  const c = await pod('gamma', 'back')
  t.equal(inNetns(a.netns, ['busybox', 'ping', '-c', '1', '-W', '3', b.ip]).status, 0, 'alpha pings beta by IP')
  t.equal(inNetns(b.netns, ['busybox', 'ping', '-c', '1', '-W', '3', a.ip]).status, 0, 'and beta alpha')
  t.not(inNetns(a.netns, ['busybox', 'ping', '-c', '1', '-W', '1', c.ip]).status, 0, 'alpha does not reach gamma on another network')
  await serveIn(t, a.netns, 8080, 'from alpha')
  t.not(inNetns(c.netns, ['busybox', 'nc', '-w', '1', a.ip, '8080']).stdout, 'from alpha', "gamma does not reach alpha's port at alpha's address")
  if (host !== undefined) t.equal(inNetns(c.netns, ['busybox', 'nc', '-w', '2', host, String(published)]).stdout, 'from alpha', "but reaches it where alpha publishes it, at the host's address")
  const hosts = fs.readFileSync(path.join(a.etcDir, 'hosts'), 'utf8')
  t.match(hosts, `\n${b.ip}\tbeta beta-app beta-alias\n`, "alpha's hosts names beta, its app and its alias")
  t.notMatch(hosts, 'gamma', 'and not a pod of another network')
  t.match(fs.readFileSync(path.join(b.etcDir, 'hosts'), 'utf8'), `\n${a.ip}\talpha alpha-app alpha-alias\n`, "beta's names alpha")
  t.equal(fs.statSync(path.join(a.etcDir, 'hosts')).ino, hostsInode, "alpha's hosts was rewritten in place")
  await detach(dataDir, b.uuid, env)
  t.notMatch(fs.readFileSync(path.join(a.etcDir, 'hosts'), 'utf8'), 'beta', 'beta is forgotten once it goes')
  for (const p of [a, c]) await detach(dataDir, p.uuid, env)
})

t.test("a published port is answered from the host's own address, and no longer after DEL", { skip: host === undefined ? 'the host has no address but loopback' : false }, async (t) => {
  const dataDir = netDataDir(t)
  const env = testEnv(t)
  const uuid = randomUUID()
  const netns = await createPodNetns(dataDir, uuid)
  const port = freePort()
  await attach(dataDir, { uuid, netns, networks: [{ name: 'bridge', ports: [{ hostPort: port, containerPort: 8080, protocol: 'tcp', hostIP: '' }] }], hostname: 'web' }, env)
  await serveIn(t, netns, 8080, 'pong')
  t.equal(await fetchText(host!, port), 'pong', `${host}:${port} reaches the pod's 8080`)
  t.equal(await fetchText('127.0.0.1', port), 'pong', `127.0.0.1:${port} too (the replies are not taken for a pod's packets to the host's loopback)`)
  await detach(dataDir, uuid, env)
  t.not(await fetchText(host!, port), 'pong', 'nothing answers once the pod is gone')
})

t.test('a host port another pod publishes or a process holds is refused, naming who, with nothing half-set', async (t) => {
  const dataDir = netDataDir(t)
  const env = testEnv(t)
  const bridge = async () => bridgeOfNet(dataDir, 'bridge', t)
  const port = freePort()
  const first = randomUUID()
  await attach(dataDir, { uuid: first, netns: await createPodNetns(dataDir, first), name: 'web', networks: [{ name: 'bridge', ports: [{ hostPort: port, containerPort: 80, protocol: 'tcp', hostIP: '' }] }], hostname: 'web' }, env)
  const second = randomUUID()
  const netns2 = await createPodNetns(dataDir, second)
  await t.rejects(attach(dataDir, { uuid: second, netns: netns2, networks: [{ name: 'bridge', ports: [{ hostPort: port, containerPort: 81, protocol: 'tcp', hostIP: '127.0.0.1' }] }], hostname: 'b' }, env), {
    code: 'EBADSTATE',
    message: `host port 127.0.0.1:${port}/tcp is taken: pod ${first.slice(0, 8)} (web) holds it`,
  })
  t.equal(bridgePorts(await bridge()).length, 1, 'no veth of the refused pod')
  t.same(ipamHolders(dataDir).map((h) => h.id), [first], 'no address of it')
  const server = net.createServer()
  await new Promise<void>((r) => server.listen(0, r))
  t.teardown(() => server.close())
  const held = (server.address() as net.AddressInfo).port
  await t.rejects(attach(dataDir, { uuid: second, netns: netns2, networks: [{ name: 'bridge', ports: [{ hostPort: held, containerPort: 80, protocol: 'tcp', hostIP: '' }] }], hostname: 'b' }, env), {
    code: 'EBADSTATE',
    message: `host port ${held}/tcp is taken: process ${process.pid} (node) holds it`,
  })
  t.same(ruleLines(second), [], 'no rule of the refused pod')
  for (const u of [first, second]) await detach(dataDir, u, env)
})

t.test('a reservation (before the namespace exists) claims its host port at once; cancelled, or added where there is no namespace, it leaves nothing', async (t) => {
  const dataDir = netDataDir(t)
  const env = testEnv(t)
  const port = freePort()
  const ports = [{ hostPort: port, containerPort: 80, protocol: 'tcp' as const, hostIP: '' }]
  const first = randomUUID()
  const pending = await reserveAttach(dataDir, { uuid: first, name: 'early', networks: [{ name: 'bridge', ports }], hostname: 'early' }, env)
  t.ok(fs.existsSync(recordFile(dataDir, first)), 'the record is written before any ADD')
  t.same(ipamHolders(dataDir), [], 'no address is taken before the namespace exists')
  const second = randomUUID()
  await t.rejects(reserveAttach(dataDir, { uuid: second, networks: [{ name: 'bridge', ports }], hostname: 'b' }, env), {
    code: 'EBADSTATE',
    message: `host port ${port}/tcp is taken: pod ${first.slice(0, 8)} (early) holds it`,
  })
  const gc = await gcNetworks(dataDir, env)
  t.same([gc.detached, gc.failed], [[], []], 'gc leaves a reservation alone: its network lock is held')
  t.ok(fs.existsSync(recordFile(dataDir, first)))
  pending.cancel()
  t.notOk(fs.existsSync(recordFile(dataDir, first)), 'cancelled: no record')
  t.throws(() => pending.cancel(), /once/, 'a reservation ends once')
  const again = await reserveAttach(dataDir, { uuid: second, networks: [{ name: 'bridge', ports }], hostname: 'b' }, env)
  await t.rejects(again.add(`/run/netns/podctl-gone-${second.slice(0, 8)}`), { code: 'EFAILED', message: /network namespace .* does not exist/ })
  t.notOk(fs.existsSync(recordFile(dataDir, second)), 'no namespace: no record, and the port is free again')
  t.same(ipamHolders(dataDir), [])
  const netns = await createPodNetns(dataDir, first)
  const elsewhere = await reserveAttach(dataDir, { uuid: first, networks: [{ name: 'bridge', ports }], hostname: 'early' }, env)
  await t.rejects(elsewhere.add(`/run/netns/podctl-other-${first.slice(0, 8)}`), { code: 'EBADSTATE' }, 'added in a namespace other than the one made for the pod: refused')
  const other = await reserveAttach(dataDir, { uuid: second, networks: [{ name: 'bridge', ports }], hostname: 'b' }, env)
  other.cancel()
  t.pass('that refusal left the port free: another pod reserves it')
  const late = await reserveAttach(dataDir, { uuid: first, networks: [{ name: 'bridge', ports }], hostname: 'early' }, env)
  const [a] = await late.add(netns)
  t.match(a, { name: 'bridge', ip: /^10\.9[01]\./ }, 'added in the namespace made before')
  await detach(dataDir, first, env)
  t.notOk(netnsNames().includes(`podctl-${first}`), 'detach removes that namespace')
})

t.test('DEL after the namespace is gone (the infra died with it): no address, no rule, no veth', async (t) => {
  const dataDir = netDataDir(t)
  const env = testEnv(t)
  const uuid = randomUUID()
  // A namespace of the test's own, as a runtime's /proc/PID/ns/net would be: nothing keeps it once it goes.
  const name = `podctl-t${uuid.slice(0, 8)}`
  t.equal(spawnSync('ip', ['netns', 'add', name]).status, 0)
  t.teardown(() => void spawnSync('ip', ['netns', 'del', name]))
  const [a] = await attach(dataDir, { uuid, netns: `/run/netns/${name}`, networks: [{ name: 'bridge', ports: [{ hostPort: freePort(), containerPort: 80, protocol: 'tcp', hostIP: '' }] }], hostname: 'web' }, env)
  t.ok(ruleLines(uuid).length > 0)
  t.equal(spawnSync('ip', ['netns', 'del', name]).status, 0)
  // The kernel takes a namespace apart in a work queue of its own: its veth goes soon after `ip netns del`, not
  // always before it returns (a loaded CI run saw it still on the bridge).
  const bridge = await bridgeOfNet(dataDir, 'bridge', t)
  await pollUntil('the veth gone', () => bridgePorts(bridge).length === 0, { intervalMs: 50, polls: 200 }).catch(() => undefined)
  t.same(bridgePorts(bridge), [], 'the veth went with the namespace')
  await detach(dataDir, uuid, env)
  t.same(ruleLines(uuid), [], 'no rule of the pod: the masquerade is the network\'s, and portmap deletes by container id')
  t.same(ipamHolders(dataDir), [], `${a!.ip} is free`)
  t.notOk(fs.existsSync(recordFile(dataDir, uuid)))
})

t.test("a plugin's failure on the second network deletes the first: nothing half-set", async (t) => {
  const dataDir = netDataDir(t)
  const env = testEnv(t)
  // An operator's network whose second plugin fails: tuning cannot set a sysctl that does not exist.
  const broken = {
    cniVersion: '1.0.0',
    name: 'broken',
    plugins: [
      { type: 'bridge', bridge: 'podctlbroken0', ipam: { type: 'host-local', dataDir: path.join(scratch(t), 'ipam'), ranges: [[{ subnet: '172.31.99.0/24' }]] } },
      { type: 'tuning', sysctl: { 'net.ipv4.conf.eth1.nosuch': '1' } },
    ],
  }
  fs.writeFileSync(path.join(env.configDir, '50-broken.conflist'), JSON.stringify(broken))
  const uuid = randomUUID()
  const netns = await createPodNetns(dataDir, uuid)
  await t.rejects(attach(dataDir, { uuid, netns, networks: [{ name: 'bridge', ports: [{ hostPort: freePort(), containerPort: 80, protocol: 'tcp', hostIP: '' }] }, { name: 'broken' }], hostname: 'x' }, env), {
    code: 'EFAILED',
    message: new RegExp(`^network broken: the "tuning" plugin could not add pod ${uuid.slice(0, 8)}: .*nosuch`),
  })
  t.same(bridgePorts(await bridgeOfNet(dataDir, 'bridge', t)), [], 'no veth on the first network')
  t.same(ipamHolders(dataDir), [], 'no address held')
  t.same(fs.readdirSync(path.join(scratch(t), 'ipam', 'broken')).filter((f) => f.startsWith('172.')), [], 'nor on the second network')
  t.same(ruleLines(uuid), [], 'no rule')
  t.ok(netnsNames().includes(`podctl-${uuid}`), "the namespace stays the pod's, for its detach")
  await detach(dataDir, uuid, env)
  t.notOk(netnsNames().includes(`podctl-${uuid}`))
  spawnSync('ip', ['link', 'del', 'podctlbroken0'])
})

/**
 * An operator's network `name` in the test's config dir, as podman writes
 * one: a bridge with ipMasq and host-local on PREFIX.0/24, then `more`
 * plugins. Its bridge (removed at teardown).
 */
const operatorNetwork = (t: Test, env: { configDir: string }, name: string, prefix: string, more: object[]): string => {
  const bridge = `podctlop${randomUUID().slice(0, 7)}`
  t.teardown(() => void spawnSync('ip', ['link', 'del', bridge]))
  const ipam = { type: 'host-local', dataDir: path.join(scratch(t), 'ipam'), routes: [{ dst: '0.0.0.0/0' }], ranges: [[{ subnet: `${prefix}.0/24`, gateway: `${prefix}.1` }]] }
  const conflist = { cniVersion: '0.4.0', name, plugins: [{ type: 'bridge', bridge, isGateway: true, ipMasq: true, hairpinMode: true, ipam }, ...more] }
  fs.writeFileSync(path.join(env.configDir, `87-${name}.conflist`), JSON.stringify(conflist))
  return bridge
}

t.test("an operator's conflist as podman writes it (ipMasq, firewall, tuning) is used as it is, and leaves nothing", async (t) => {
  const dataDir = netDataDir(t)
  const env = testEnv(t)
  const bridge = operatorNetwork(t, env, 'lab', '172.31.98', [{ type: 'portmap', capabilities: { portMappings: true } }, { type: 'firewall' }, { type: 'tuning' }])
  const uuid = randomUUID()
  const [a] = await attach(dataDir, { uuid, netns: await createPodNetns(dataDir, uuid), networks: [{ name: 'lab', ports: [{ hostPort: freePort(), containerPort: 80, protocol: 'tcp', hostIP: '' }] }], hostname: 'x' }, env)
  t.match(a, { name: 'lab', ip: /^172\.31\.98\.\d+$/, iface: 'eth0' })
  t.ok(ruleLines(uuid).length > 0, 'its ipMasq, firewall and portmap rules')
  await detach(dataDir, uuid, env)
  t.same(ruleLines(uuid), [], 'all gone: its namespace was still there for DEL')
  t.same(fs.readdirSync(path.join(scratch(t), 'ipam', 'lab')).filter((f) => f.startsWith('172.')), [])
  t.same(bridgePorts(bridge), [])
})

t.test("DEL while the pod ends: podctl's own network at once without the namespace, an operator's in the namespace held for it, or after the end", async (t) => {
  const dataDir = netDataDir(t)
  const env = testEnv(t)
  // ipMasq and firewall rules are undone only by a DEL that finds the pod's interface in its namespace.
  const bridge = operatorNetwork(t, env, 'lab2', '172.31.97', [{ type: 'firewall' }])
  const cases = [
    { network: 'bridge', hold: false, atOnce: true },
    { network: 'lab2', hold: true, atOnce: true },
    { network: 'lab2', hold: false, atOnce: false },
  ]
  for (const c of cases) {
    const what = `${c.network}${c.hold ? ', held' : ''}`
    const uuid = randomUUID()
    const name = `podctl-t${uuid.slice(0, 8)}`
    t.equal(spawnSync('ip', ['netns', 'add', name]).status, 0)
    t.teardown(() => {
      spawnSync('ip', ['netns', 'del', name])
      // A DEL after the namespace went cannot undo the bridge plugin's ipMasq (its chain and jump): the test's, removed here.
      removeRulesHolding(uuid)
    })
    await attach(dataDir, { uuid, netns: `/run/netns/${name}`, networks: [{ name: c.network }], hostname: 'web' }, env)
    if (c.network === 'lab2') t.ok(ruleLines(uuid).length > 0, `${what}: its ipMasq and firewall rules`)
    const held = c.hold ? holdNetns(`/run/netns/${name}`) : undefined
    // The pod's end, held open by the test: the namespace goes when it settles, as an infra's does (but for the fd held).
    let settle!: () => void
    const ending = new Promise<void>((resolve) => (settle = resolve)).then(() => void spawnSync('ip', ['netns', 'del', name]))
    let done = false
    const detached = detach(dataDir, uuid, env, { podEnding: ending, ...(held ? { netns: held.path } : {}) }).then(() => (done = true))
    for (let i = 0; i < 100 && !done; i++) await new Promise((r) => setTimeout(r, 50))
    if (c.atOnce) {
      t.ok(done, `${what}: deleted before the end settled`)
      t.notOk(fs.existsSync(recordFile(dataDir, uuid)), `${what}: no record left`)
      t.same(ruleLines(uuid), [], `${what}: no rule of the pod left`)
    } else {
      t.notOk(done, `${what}: the DEL waits for the end`)
      t.ok(fs.existsSync(recordFile(dataDir, uuid)), `${what}: the record stays meanwhile`)
    }
    settle()
    await detached
    held?.release()
    t.notOk(fs.existsSync(recordFile(dataDir, uuid)), `${what}: no record`)
  }
  t.same(ipamHolders(dataDir), [], "no address held on podctl's network")
  t.same(fs.readdirSync(path.join(scratch(t), 'ipam', 'lab2')).filter((f) => f.startsWith('172.')), [], 'nor on the operator\'s')
  t.same(bridgePorts(bridge), [])
})

t.test('a pod may ask for an address of the subnet', async (t) => {
  const dataDir = netDataDir(t)
  const env = testEnv(t)
  const n = await createNetwork(dataDir, 'front', {}, env)
  const want = n.subnet!.replace(/0\/24$/, '77')
  const uuid = randomUUID()
  const [a] = await attach(dataDir, { uuid, netns: await createPodNetns(dataDir, uuid), networks: [{ name: 'front', ip: want }], hostname: 'x' }, env)
  t.equal(a!.ip, want)
  await detach(dataDir, uuid, env)
})

t.test('gc frees an address whose record was lost, and attach to an unknown network writes nothing', async (t) => {
  const dataDir = netDataDir(t)
  const env = testEnv(t)
  const uuid = randomUUID()
  const netns = await createPodNetns(dataDir, uuid)
  const [a] = await attach(dataDir, { uuid, netns, networks: [{ name: 'bridge' }], hostname: 'x' }, env)
  fs.rmSync(recordFile(dataDir, uuid))
  const r = await gcNetworks(dataDir, env)
  t.same(r.released, [`bridge/${a!.ip}`])
  t.same(ipamHolders(dataDir), [])
  spawnSync('ip', ['netns', 'del', path.basename(netns)])
  const other = randomUUID()
  await t.rejects(attach(dataDir, { uuid: other, netns: '/proc/self/ns/net', networks: [{ name: 'nosuch' }], hostname: 'x' }, env), { code: 'ENONETWORK', message: 'no such network: "nosuch"' })
  t.notOk(fs.existsSync(recordFile(dataDir, other)))
})
