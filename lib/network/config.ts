/**
 * Networks as conflists: the ones podctl writes (bridge, macvlan, ipvlan,
 * each with host-local addresses and portmap), and what `network list`
 * shows of any conflist, podctl's or the operator's. Pure.
 *
 * podctl's bridge networks leave out the bridge plugin's ipMasq: its
 * masquerade rule is made per pod, and a DEL whose network namespace is
 * already gone (a crash) does not remove it (plugins/main/bridge cmdDel
 * returns before its ipMasq teardown when the namespace is gone). The
 * masquerade and forwarding rules of podctl's networks are made per
 * network instead (lib/network/firewall.ts), so that nothing of a pod's
 * outlives its DEL.
 */
import { formatCidr, last, nth, parseCidr, parseIp, size, type Cidr } from './cidr.js'
import type { Conflist, PluginConf } from './cni.js'

export type Driver = 'bridge' | 'macvlan' | 'ipvlan'
export const DRIVERS: readonly Driver[] = ['bridge', 'macvlan', 'ipvlan']

/** What list and inspect show of a network (CONTRACT §14's JSON, and `interface`). */
export interface NetworkInfo {
  name: string
  /** The first plugin's type: bridge, macvlan, ipvlan, or whatever an operator's conflist uses. */
  driver: string
  subnet: string | null
  gateway: string | null
  /** No route out: the network's addresses come with no default route. */
  internal: boolean
  /** The conflist; null for the default network until it is made. */
  file: string | null
  /** The bridge, or the parent of a macvlan or ipvlan network. */
  interface: string | null
}

/** A network's name: a pod or volume name's rule, and not a mode's word. */
export const NETWORK_NAME_RE = /^[a-z0-9][a-z0-9-]{0,62}$/
export const RESERVED_NAMES = ['host', 'none', 'private', 'slirp4netns', 'pasta', 'container', 'ns']
/** What an operator's network may be called to be usable: a plain file name (records and host-local's state are named after it). */
export const FOREIGN_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/

/** The spec version of the conflists podctl writes, the highest Debian's plugins (1.1.1) speak. */
export const CNI_VERSION = '1.0.0'

/** How a network is made: network create's flags, checked. */
export interface NetworkSpec {
  name: string
  driver: Driver
  subnet: Cidr
  gateway: string
  internal: boolean
  /** The bridge's name, or the parent link of macvlan/ipvlan. */
  iface: string
  mtu?: number
  vlan?: number
  /** macvlan: bridge, private, vepa, passthru; ipvlan: l2, l3, l3s. */
  mode?: string
}

/** The first usable address of a subnet: its gateway when none is given. */
export const defaultGateway = (c: Cidr): string => nth(c, 1n)

/** Why `gateway` cannot be the gateway of `subnet`, or undefined. */
export const gatewayProblem = (subnet: Cidr, gateway: string): string | undefined => {
  const ip = parseIp(gateway)
  if (ip === undefined) return `${JSON.stringify(gateway)} is not an IP address`
  if (ip.family !== subnet.family || ip.value < subnet.base || ip.value > last(subnet)) return `${gateway} is not in the subnet ${formatCidr(subnet)}`
  if (ip.value === subnet.base) return `${gateway} is the subnet's network address`
  if (subnet.family === 4 && ip.value === last(subnet)) return `${gateway} is the subnet's broadcast address`
  return undefined
}

/** Why a subnet cannot be a network's (too small for a gateway and a pod), or undefined. */
export const subnetProblem = (c: Cidr): string | undefined => (size(c) < 4n ? `${formatCidr(c)} is too small: a network needs at least a /${c.family === 4 ? 30 : 126}` : undefined)

const ipam = (spec: NetworkSpec, ipamDataDir: string): Record<string, unknown> => ({
  type: 'host-local',
  dataDir: ipamDataDir,
  ranges: [[{ subnet: formatCidr(spec.subnet), gateway: spec.gateway }]],
  // An internal network's pods have no default route: no way out, whatever the host forwards.
  routes: spec.internal ? [] : [{ dst: spec.subnet.family === 4 ? '0.0.0.0/0' : '::/0' }],
})

/** The conflist of a network podctl makes: the driver's plugin with host-local addresses, then portmap for published ports. */
export const buildConflist = (spec: NetworkSpec, ipamDataDir: string): Conflist => {
  const main: PluginConf =
    spec.driver === 'bridge'
      ? {
          type: 'bridge',
          bridge: spec.iface,
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ...(spec.mtu !== undefined ? { mtu: spec.mtu } : {}),
          ...(spec.vlan !== undefined ? { vlan: spec.vlan } : {}),
          ipam: ipam(spec, ipamDataDir),
        }
      : {
          type: spec.driver,
          master: spec.iface,
          mode: spec.mode ?? (spec.driver === 'macvlan' ? 'bridge' : 'l2'),
          ...(spec.mtu !== undefined ? { mtu: spec.mtu } : {}),
          ipam: ipam(spec, ipamDataDir),
        }
  return {
    cniVersion: CNI_VERSION,
    name: spec.name,
    plugins: [main, { type: 'portmap', capabilities: { portMappings: true }, snat: true }],
  }
}

/**
 * Whether DEL of `conflist` can run without the pod's namespace and leave
 * nothing: true for the plugins podctl writes, as it writes them. bridge
 * (without ipMasq), macvlan and ipvlan delete in the namespace only the
 * pod's own interface, which goes with the namespace; host-local and
 * portmap work outside it. Any other conflist (an operator's) may undo
 * there what only a DEL in the namespace finds.
 */
export const delNeedsNetns = (conflist: Conflist): boolean =>
  !conflist.plugins.every((p) => (p.type === 'bridge' && p.ipMasq !== true) || p.type === 'macvlan' || p.type === 'ipvlan' || p.type === 'portmap')

const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

/**
 * A conflist from a file's text: a `.conflist` as it is, a single
 * plugin's `.conf` or `.json` as a list of one (as libcni reads them).
 * Throws an Error saying what is wrong.
 */
export const parseConflist = (text: string, single: boolean): Conflist => {
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch (er) {
    throw new Error(`not JSON: ${(er as Error).message}`)
  }
  if (!isObj(v)) throw new Error('not a JSON object')
  if (typeof v.name !== 'string' || v.name === '') throw new Error('it has no "name"')
  if (typeof v.cniVersion !== 'string') throw new Error('it has no "cniVersion"')
  if (single || !('plugins' in v)) {
    if (typeof v.type !== 'string') throw new Error('it has no "type" and no "plugins"')
    const { name, cniVersion, ...plugin } = v
    return { name, cniVersion, plugins: [plugin as PluginConf] }
  }
  if (!Array.isArray(v.plugins) || v.plugins.length === 0) throw new Error('"plugins" must be a non-empty array')
  for (const [i, p] of v.plugins.entries()) {
    if (!isObj(p) || typeof p.type !== 'string') throw new Error(`plugins[${i}] has no "type"`)
  }
  return v as Conflist
}

/** The first address range of an ipam config (host-local's `ranges`, or its older `subnet`). */
const firstRange = (ipamConf: unknown): { subnet?: string; gateway?: string } => {
  if (!isObj(ipamConf)) return {}
  const ranges = ipamConf.ranges
  if (Array.isArray(ranges) && Array.isArray(ranges[0]) && isObj(ranges[0][0])) {
    const r = ranges[0][0]
    return { ...(typeof r.subnet === 'string' ? { subnet: r.subnet } : {}), ...(typeof r.gateway === 'string' ? { gateway: r.gateway } : {}) }
  }
  return { ...(typeof ipamConf.subnet === 'string' ? { subnet: ipamConf.subnet } : {}), ...(typeof ipamConf.gateway === 'string' ? { gateway: ipamConf.gateway } : {}) }
}

/** The default routes a network's addresses come with. */
const hasDefaultRoute = (ipamConf: unknown): boolean => {
  if (!isObj(ipamConf) || !Array.isArray(ipamConf.routes)) return false
  return ipamConf.routes.some((r) => isObj(r) && (r.dst === '0.0.0.0/0' || r.dst === '::/0'))
}

/** What list and inspect show of a conflist. */
export const describeConflist = (list: Conflist, file: string): NetworkInfo => {
  const main = list.plugins[0]!
  const range = firstRange(main.ipam)
  const subnet = range.subnet !== undefined ? parseCidr(range.subnet) : undefined
  const iface = typeof main.bridge === 'string' ? main.bridge : typeof main.master === 'string' ? main.master : main.type === 'bridge' ? 'cni0' : null
  return {
    name: list.name,
    driver: main.type,
    subnet: subnet !== undefined ? formatCidr(subnet) : (range.subnet ?? null),
    gateway: range.gateway ?? (subnet !== undefined && main.type === 'bridge' && main.isGateway === true ? defaultGateway(subnet) : null),
    internal: isObj(main.ipam) && !hasDefaultRoute(main.ipam),
    file,
    interface: iface,
  }
}

/** The subnets a conflist's addresses come from (every range of its first plugin's ipam), to check a new one against. */
export const conflistSubnets = (list: Conflist): Cidr[] => {
  const ipamConf = list.plugins[0]?.ipam
  if (!isObj(ipamConf)) return []
  const texts: string[] = []
  if (Array.isArray(ipamConf.ranges)) {
    for (const set of ipamConf.ranges) if (Array.isArray(set)) for (const r of set) if (isObj(r) && typeof r.subnet === 'string') texts.push(r.subnet)
  }
  if (typeof ipamConf.subnet === 'string') texts.push(ipamConf.subnet)
  return texts.map(parseCidr).filter((c): c is Cidr => c !== undefined)
}

/** A network's bridge when podctl manages its firewall rules: a bridge network of the data dir. */
export const bridgeOf = (list: Conflist): string | undefined => {
  const main = list.plugins[0]
  return main?.type === 'bridge' && typeof main.bridge === 'string' ? main.bridge : undefined
}
