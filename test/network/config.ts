// Networks as conflists (lib/network/config.ts): what podctl writes for
// each driver, and what list shows of any conflist, its own or an
// operator's (podman's own file as Debian ships it).
import t from 'tap'
import { parseCidr } from '../../lib/network/cidr.js'
import { buildConflist, conflistSubnets, delNeedsNetns, describeConflist, gatewayProblem, parseConflist, subnetProblem, type NetworkSpec } from '../../lib/network/config.js'

const spec = (over: Partial<NetworkSpec> = {}): NetworkSpec => ({ name: 'front', driver: 'bridge', subnet: parseCidr('10.90.4.0/24')!, gateway: '10.90.4.1', internal: false, iface: 'podctl0123456789', ...over })

t.test('a bridge network: bridge with host-local under the data dir, no ipMasq, then portmap', async (t) => {
  const c = buildConflist(spec({ mtu: 1400 }), '/data/networks/ipam')
  t.equal(c.cniVersion, '1.0.0')
  t.same(c.plugins.map((p) => p.type), ['bridge', 'portmap'])
  t.match(c.plugins[0], { bridge: 'podctl0123456789', isGateway: true, ipMasq: false, hairpinMode: true, mtu: 1400, ipam: { type: 'host-local', dataDir: '/data/networks/ipam', ranges: [[{ subnet: '10.90.4.0/24', gateway: '10.90.4.1' }]], routes: [{ dst: '0.0.0.0/0' }] } })
  t.same(c.plugins[1], { type: 'portmap', capabilities: { portMappings: true }, snat: true })
  t.same(describeConflist(c, '/f'), { name: 'front', driver: 'bridge', subnet: '10.90.4.0/24', gateway: '10.90.4.1', internal: false, file: '/f', interface: 'podctl0123456789' })
  const internal = buildConflist(spec({ internal: true }), '/d')
  t.same((internal.plugins[0]!.ipam as { routes: unknown }).routes, [], 'an internal network gives no default route')
  t.equal(describeConflist(internal, '/f').internal, true)
})

t.test('macvlan and ipvlan hang off their parent', async (t) => {
  const m = buildConflist(spec({ driver: 'macvlan', iface: 'eth0' }), '/d')
  t.match(m.plugins[0], { type: 'macvlan', master: 'eth0', mode: 'bridge' })
  const i = buildConflist(spec({ driver: 'ipvlan', iface: 'eth0', mode: 'l3' }), '/d')
  t.match(i.plugins[0], { type: 'ipvlan', master: 'eth0', mode: 'l3' })
  t.equal(describeConflist(i, '/f').interface, 'eth0')
})

t.test("a DEL needs the pod's namespace for an operator's plugins, never for what podctl writes", async (t) => {
  for (const driver of ['bridge', 'macvlan', 'ipvlan'] as const) t.equal(delNeedsNetns(buildConflist(spec({ driver, iface: driver === 'bridge' ? 'podctl0123456789' : 'eth0' }), '/d')), false, driver)
  const own = buildConflist(spec(), '/d')
  t.equal(delNeedsNetns({ ...own, plugins: [{ ...own.plugins[0]!, ipMasq: true }, own.plugins[1]!] }), true, 'bridge with ipMasq: its rules are found from the interface in the namespace')
  t.equal(delNeedsNetns({ ...own, plugins: [...own.plugins, { type: 'firewall' }] }), true, 'firewall')
  t.equal(delNeedsNetns({ ...own, plugins: [...own.plugins, { type: 'tuning' }] }), true, 'tuning')
  t.equal(delNeedsNetns({ ...own, plugins: [{ type: 'ptp', ipam: {} }] }), true, 'a plugin podctl does not write')
})

t.test("an operator's conflist, and a single plugin's .conf, read as libcni reads them", async (t) => {
  const podman = `{"cniVersion":"0.4.0","name":"podman","plugins":[{"type":"bridge","bridge":"cni-podman0","isGateway":true,"ipMasq":true,"hairpinMode":true,
    "ipam":{"type":"host-local","routes":[{"dst":"0.0.0.0/0"}],"ranges":[[{"subnet":"10.88.0.0/16","gateway":"10.88.0.1"}]]}},
    {"type":"portmap","capabilities":{"portMappings":true}},{"type":"firewall"},{"type":"tuning"}]}`
  const c = parseConflist(podman, false)
  t.same(describeConflist(c, '/etc/cni/net.d/87-podman-bridge.conflist'), { name: 'podman', driver: 'bridge', subnet: '10.88.0.0/16', gateway: '10.88.0.1', internal: false, file: '/etc/cni/net.d/87-podman-bridge.conflist', interface: 'cni-podman0' })
  const single = parseConflist('{"cniVersion":"0.3.1","name":"old","type":"bridge","bridge":"cni0","isGateway":true,"ipam":{"type":"host-local","subnet":"10.22.0.0/16","routes":[{"dst":"0.0.0.0/0"}]}}', true)
  t.same(single.plugins.map((p) => p.type), ['bridge'])
  t.notOk('name' in single.plugins[0]!, "the list's name is not the plugin's")
  t.match(describeConflist(single, '/x.conf'), { name: 'old', subnet: '10.22.0.0/16', gateway: '10.22.0.1' })
  t.same(conflistSubnets(single).map((x) => x.prefix), [16])
  for (const [bad, why] of [
    ['{', /not JSON/],
    ['[]', /not a JSON object/],
    ['{"cniVersion":"1.0.0","plugins":[]}', /no "name"/],
    ['{"name":"x","plugins":[]}', /no "cniVersion"/],
    ['{"name":"x","cniVersion":"1.0.0","plugins":[]}', /non-empty/],
    ['{"name":"x","cniVersion":"1.0.0","plugins":[{}]}', /plugins\[0\] has no "type"/],
  ] as const) t.throws(() => parseConflist(bad, false), { message: why }, bad)
})

t.test('gateways and subnets a network cannot have', async (t) => {
  const s = parseCidr('10.90.4.0/24')!
  t.equal(gatewayProblem(s, '10.90.4.1'), undefined)
  t.match(gatewayProblem(s, '10.90.5.1'), /not in the subnet/)
  t.match(gatewayProblem(s, '10.90.4.0'), /network address/)
  t.match(gatewayProblem(s, '10.90.4.255'), /broadcast/)
  t.match(gatewayProblem(s, 'fd00::1'), /not in the subnet/)
  t.match(gatewayProblem(s, 'gw'), /not an IP address/)
  t.equal(subnetProblem(parseCidr('10.0.0.0/30')!), undefined)
  t.match(subnetProblem(parseCidr('10.0.0.0/31')!), /too small/)
})
