// Black-box tests of `podctl network create|list|inspect|rm|prune`
// (Documentation/subcommands/network.md, CONTRACT §14): spawns bin/podctl
// as root (network create is root's), against data dirs whose firewall
// chains are removed after; and as an unprivileged user, who may list but
// not create.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { STACK_RE } from '../helpers/common.js'
import { jsonErrors, parseTable, podctl, preparedPod, garbagePod } from '../helpers/cli-util.js'
import { hostRoutes } from '../../lib/network/host.js'
import { RECORD_FILE } from '../../lib/pod/record.js'
import { podPath } from '../../lib/pod/layout.js'
import { netDataDir, networkMissing, ruleLines, scratch } from '../helpers/network.js'
import { unprivileged } from '../helpers/oci-util.js'
import { dataDirTag } from '../../lib/network/firewall.js'
import { toolPath } from '../../lib/network/tool.js'
import type { Test } from '../helpers/common.js'

const missing = networkMissing()
if (missing !== undefined) t.plan(0, `network create needs root and the CNI plugins: ${missing}`)

const KEYS = ['driver', 'file', 'gateway', 'interface', 'internal', 'name', 'subnet']

/** A refusal: the exit code, one "podctl: ..." message, no stack, nothing on stdout. */
const refused = (t: Test, r: ReturnType<typeof podctl>, status: number, message: RegExp | string, what: string): void => {
  t.equal(r.status, status, `${what}: exit ${status}`)
  t.match(r.stderr, message, `${what}: the message`)
  t.match(r.stderr, /^podctl: /, `${what}: starts with podctl:`)
  t.notMatch(r.stderr, STACK_RE, `${what}: no stack trace`)
  t.equal(r.stdout, '', `${what}: nothing on stdout`)
}

/** The test's own config dir of the operator's networks: podman's conflist, as Debian ships it. */
const configDir = (t: Test): string => {
  const dir = path.join(scratch(t), 'net.d')
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(
    path.join(dir, '87-podman-bridge.conflist'),
    JSON.stringify({ cniVersion: '0.4.0', name: 'podman', plugins: [{ type: 'bridge', bridge: 'cni-podman0', isGateway: true, ipMasq: true, ipam: { type: 'host-local', routes: [{ dst: '0.0.0.0/0' }], ranges: [[{ subnet: '10.88.0.0/16', gateway: '10.88.0.1' }]] } }, { type: 'portmap', capabilities: { portMappings: true } }] }),
  )
  return dir
}
const net = (dir: string, conf: string, args: string[]) => podctl(dir, ['network', ...args, '--cni-config-dir', conf])

t.test('list makes the default network first; create prints the name; JSON has the contract\'s fields', async (t) => {
  const dir = netDataDir(t)
  const conf = configDir(t)
  const l = net(dir, conf, ['list', '--format', 'json'])
  t.equal(l.status, 0, l.stderr)
  const nets = JSON.parse(l.stdout)
  t.same(nets.map((n: { name: string }) => n.name), ['bridge', 'podman'], "the default network, then the operator's")
  t.same(Object.keys(nets[0]).sort(), KEYS)
  t.match(nets[0], { driver: 'bridge', subnet: /^10\.9[01]\.\d+\.0\/24$/, gateway: /^10\.9[01]\.\d+\.1$/, internal: false, file: path.join(dir, 'networks', 'bridge.conflist'), interface: /^podctl[0-9a-f]{9}$/ })
  t.match(nets[1], { name: 'podman', subnet: '10.88.0.0/16', file: path.join(conf, '87-podman-bridge.conflist') })
  const c = net(dir, conf, ['create', 'front'])
  t.equal(c.status, 0, c.stderr)
  t.equal(c.stdout, 'front\n')
  const j = net(dir, conf, ['create', 'back', '--subnet', '172.31.7.0/24', '--gateway', '172.31.7.254', '--internal', '--opt', 'mtu=1300', '--format', 'json'])
  t.equal(j.status, 0, j.stderr)
  t.same(JSON.parse(j.stdout), { name: 'back', driver: 'bridge', subnet: '172.31.7.0/24', gateway: '172.31.7.254', internal: true, file: path.join(dir, 'networks', 'back.conflist'), interface: JSON.parse(j.stdout).interface })
  const table = parseTable(net(dir, conf, ['list']).stdout)
  t.same(table.map((r) => [r.NAME, r.DRIVER, r.INTERNAL]), [['bridge', 'bridge', 'no'], ['back', 'bridge', 'yes'], ['front', 'bridge', 'no'], ['podman', 'bridge', 'no']])
  t.equal(net(dir, conf, ['list', '--quiet']).stdout, 'bridge\nback\nfront\npodman\n')
  t.equal(net(dir, conf, ['list', '--no-legend']).stdout.split('\n')[0]!.split(/\s+/)[0], 'bridge')
  const conflist = JSON.parse(fs.readFileSync(path.join(dir, 'networks', 'back.conflist'), 'utf8'))
  t.match(conflist.plugins[0], { type: 'bridge', mtu: 1300, ipMasq: false, ipam: { routes: [] } }, 'the options are in the conflist')
  t.equal(ruleLines(`-A PODCTL-NAT-${dataDirTag(dir)} -s 172.31.7.0/24`).length, 0, 'an internal network has no masquerade')
  t.equal(ruleLines(`-A PODCTL-FWD-${dataDirTag(dir)} -i ${JSON.parse(j.stdout).interface} -j DROP`).length, 1, 'and nothing leaves its bridge')
})

t.test('create: exit 2 for bad input, 4 for a name that exists, 1 for a clash, naming it', async (t) => {
  const dir = netDataDir(t)
  const conf = configDir(t)
  t.equal(net(dir, conf, ['create', 'front', '--subnet', '172.31.8.0/24']).status, 0)
  const before = fs.readdirSync(path.join(dir, 'networks')).sort()
  refused(t, net(dir, conf, ['create', 'Front']), 2, 'podctl: invalid network name "Front"', 'an upper-case name')
  refused(t, net(dir, conf, ['create', 'host']), 2, /a network mode's word/, 'a mode')
  refused(t, net(dir, conf, ['create', 'x', '--subnet', '10.1.2.0']), 2, 'podctl: invalid --subnet "10.1.2.0": not a CIDR', 'a subnet without a length')
  refused(t, net(dir, conf, ['create', 'x', '--subnet', '10.1.2.0/31']), 2, /too small/, 'a subnet too small')
  refused(t, net(dir, conf, ['create', 'x', '--subnet', '10.1.2.0/24', '--gateway', '10.1.3.1']), 2, 'podctl: invalid --gateway: 10.1.3.1 is not in the subnet 10.1.2.0/24', 'a gateway outside')
  refused(t, net(dir, conf, ['create', 'x', '--gateway', '10.1.3.1']), 2, /--gateway needs --subnet/, 'a gateway alone')
  refused(t, net(dir, conf, ['create', 'x', '--opt', 'color=blue']), 2, /invalid --opt color: a bridge network takes mtu, vlan/, 'an unknown option')
  refused(t, net(dir, conf, ['create', 'x', '--opt', 'mtu']), 2, /expected KEY=VALUE/, 'an option without a value')
  refused(t, net(dir, conf, ['create', 'x', '--driver', 'macvlan', '--subnet', '10.1.2.0/24']), 2, /needs its parent link: --opt parent=IFACE/, 'macvlan without a parent')
  refused(t, net(dir, conf, ['create', 'x', '--driver', 'vxlan']), 2, /argument 'vxlan' is invalid/, 'an unknown driver')
  refused(t, net(dir, conf, ['create', 'front']), 4, 'podctl: network front exists', 'a name that exists')
  refused(t, net(dir, conf, ['create', 'bridge']), 4, 'podctl: network bridge exists', 'the default network')
  refused(t, net(dir, conf, ['create', 'podman']), 4, `podctl: network podman exists: ${path.join(conf, '87-podman-bridge.conflist')}`, "the operator's network")
  refused(t, net(dir, conf, ['create', 'x', '--subnet', '172.31.8.128/25']), 1, 'podctl: subnet 172.31.8.128/25 clashes with network front (172.31.8.0/24', 'a subnet of another network')
  refused(t, net(dir, conf, ['create', 'x', '--subnet', '10.88.3.0/24']), 1, /clashes with (podman's default network|network podman)/, "podman's default")
  refused(t, net(dir, conf, ['create', 'x', '--subnet', '172.16.28.0/22']), 1, "podctl: subnet 172.16.28.0/22 clashes with rkt's default network (172.16.28.0/24)", "rkt's default")
  const route = hostRoutes().find((r) => r.cidr.family === 4 && r.cidr.prefix > 0 && !r.dev.startsWith('podctl') && !r.dev.startsWith('cni'))
  if (route !== undefined) {
    const text = `${[24n, 16n, 8n, 0n].map((s) => ((route.cidr.base >> s) & 0xffn).toString()).join('.')}/${route.cidr.prefix}`
    refused(t, net(dir, conf, ['create', 'x', '--subnet', text]), 1, `clashes with the host's route ${text} dev ${route.dev}`, "a route of the host")
  }
  refused(t, podctl(dir, ['network', 'create', 'x', '--cni-plugin-dir', path.join(dir, 'nowhere'), '--cni-config-dir', conf]), 1, `podctl: network x needs the CNI plugin "bridge", which is not in ${path.join(dir, 'nowhere')}\ninstall the CNI plugins (Debian: apt-get install containernetworking-plugins)`, 'no plugins')
  t.same(fs.readdirSync(path.join(dir, 'networks')).sort(), before, 'nothing was written by a refused create')
  const j = podctl(dir, ['network', 'create', 'Front', '--format', 'json'])
  t.same(jsonErrors(j.stderr), [{ error: { code: 'EUSAGE', message: 'invalid network name "Front": 1 to 63 characters of a-z, 0-9 and "-", starting with a letter or digit' } }])
})

t.test('inspect: key=value lines, or JSON with the plugins and the pods; an unknown network is exit 3', async (t) => {
  const dir = netDataDir(t)
  const conf = configDir(t)
  t.equal(net(dir, conf, ['create', 'front', '--subnet', '172.31.9.0/24']).status, 0)
  const r = net(dir, conf, ['inspect', 'front'])
  t.equal(r.status, 0, r.stderr)
  t.match(r.stdout, /^name=front\ndriver=bridge\nsubnet=172\.31\.9\.0\/24\ngateway=172\.31\.9\.1\ninternal=false\ninterface=podctl[0-9a-f]{9}\nfile=\S+\/networks\/front\.conflist\nplugins=bridge,portmap\ncni-version=1\.0\.0\npods=\n$/)
  const j = JSON.parse(net(dir, conf, ['inspect', 'podman', '--format', 'json']).stdout)
  t.match(j, { name: 'podman', plugins: ['bridge', 'portmap'], cni_version: '0.4.0', pods: [] })
  refused(t, net(dir, conf, ['inspect', 'nosuch']), 3, 'podctl: no such network: "nosuch"', 'an unknown network')
})

t.test('rm and prune: a network a pod uses is refused with exit 4 naming the pod, until the pod is garbage', async (t) => {
  const dir = netDataDir(t)
  const conf = configDir(t)
  for (const [n, s] of [['front', '172.31.10.0/24'], ['back', '172.31.11.0/24'], ['spare', '172.31.12.0/24']]) t.equal(net(dir, conf, ['create', n!, '--subnet', s!]).status, 0)
  // A pod names its networks in its record (`networks`), as the runtime writes them.
  const uuid = await preparedPod(dir)
  const rec = path.join(podPath(dir, 'prepared', uuid), RECORD_FILE)
  fs.writeFileSync(rec, JSON.stringify({ ...JSON.parse(fs.readFileSync(rec, 'utf8')), networks: [{ name: 'front', ip: null, ip6: null, iface: 'eth0', mac: null }, 'back'] }))
  refused(t, net(dir, conf, ['rm', 'front']), 4, `podctl: network front is used by pod ${uuid.slice(0, 8)}\nremove the pod first: podctl rm ${uuid.slice(0, 8)}`, 'a network in use')
  refused(t, net(dir, conf, ['rm', 'podman']), 4, /is the operator's/, "the operator's network")
  refused(t, net(dir, conf, ['rm', 'nosuch']), 3, 'no such network', 'an unknown network')
  const p = net(dir, conf, ['prune', '--format', 'json'])
  t.equal(p.status, 0, p.stderr)
  t.same(JSON.parse(p.stdout), { deleted: ['spare'] }, 'prune removes only what no pod uses, and never the default')
  const several = net(dir, conf, ['rm', 'nosuch', 'back'])
  t.equal(several.status, 3, 'rm goes past a bad name and exits with the first failure')
  t.match(several.stderr, /network back is used by pod/)
  t.equal(podctl(dir, ['rm', uuid]).status, 0, 'the pod is removed')
  const g = await garbagePod(dir)
  fs.writeFileSync(path.join(podPath(dir, 'garbage', g), RECORD_FILE), JSON.stringify({ networks: ['front'] }))
  const r = net(dir, conf, ['rm', 'front', 'back'])
  t.equal(r.status, 0, `a garbage pod does not hold a network: ${r.stderr}`)
  t.equal(r.stdout, 'front\nback\n')
  t.same(fs.readdirSync(path.join(dir, 'networks')).filter((f) => f.endsWith('.conflist')), [], 'their conflists are gone')
  t.equal(ruleLines('172.31.10.0/24').length, 0, "a removed network's rules are gone")
})


t.test("rm of a data dir's last bridge network takes its chains and their jumps off the host; a family's last network takes that family's", async (t) => {
  const dir = netDataDir(t)
  const conf = configDir(t)
  const tag = dataDirTag(dir)
  const v6Lines = (): string[] => spawnSync('ip6tables-save', [], { encoding: 'utf8', env: { ...process.env, PATH: toolPath() } }).stdout.split('\n').filter((l) => l.includes(tag))
  t.equal(net(dir, conf, ['create', 'four', '--subnet', '172.31.13.0/24']).status, 0)
  t.equal(net(dir, conf, ['create', 'six', '--subnet', 'fd00:31:13::/64']).status, 0)
  t.not(v6Lines().length, 0, 'an IPv6 network has chains in ip6tables')
  t.equal(net(dir, conf, ['rm', 'six']).status, 0)
  t.same(v6Lines(), [], 'the last IPv6 network gone: no chain or jump of the data dir in ip6tables')
  t.match(ruleLines(tag).join('\n'), /-A FORWARD .*-j PODCTL-FWD-/, 'the IPv4 chains stay for the networks left')
  const left = net(dir, conf, ['list', '--quiet']).stdout.split('\n').filter((n) => n !== '' && n !== 'podman')
  const r = net(dir, conf, ['rm', ...left])
  t.equal(r.status, 0, r.stderr)
  t.same(ruleLines(tag), [], 'no chain, jump or rule of the data dir in any table')
  t.notOk(fs.existsSync(path.join(dir, 'networks', 'rules.json')), 'nor the note of rules applied')
  t.equal(net(dir, conf, ['create', 'again', '--subnet', '172.31.14.0/24']).status, 0, 'a network made after')
  t.equal(ruleLines(`-A FORWARD -m comment --comment "podctl networks" -j PODCTL-FWD-${tag}`).length, 1, 'has its chains and one jump again')
})
t.test('as a user who is not root: list works, create is exit 1 saying it needs root', async (t) => {
  const who = unprivileged()
  if (typeof who === 'string') return void t.pass(`no unprivileged user: ${who}`)
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-net-'))
  fs.chmodSync(base, 0o755)
  fs.chownSync(base, who.uid, who.gid)
  t.teardown(() => fs.rmSync(base, { recursive: true, force: true }))
  const dir = path.join(base, 'data')
  const l = podctl(dir, ['network', 'list', '--format', 'json', '--cni-config-dir', '/nonexistent'], who.opts)
  t.equal(l.status, 0, l.stderr)
  t.same(JSON.parse(l.stdout), [{ name: 'bridge', driver: 'bridge', subnet: null, gateway: null, internal: false, file: null, interface: null }], 'the default network, not made yet')
  refused(t, podctl(dir, ['network', 'create', 'front'], who.opts), 1, 'podctl: network create needs root', 'create')
  t.notOk(fs.existsSync(path.join(dir, 'networks')), 'nothing written')
})
