/**
 * A data dir's networks (`network create|list|inspect|rm|prune`), the
 * default one made on first use, and the operator's conflists beside
 * them. A network of the data dir is its conflist, `networks/NAME.conflist`,
 * written once by atomic replace under the data dir's networks lock; its
 * bridge and subnet are its own (Documentation/devel/networks.md):
 *
 * - the bridge is `podctl` and 9 hex digits of the data dir's path and the
 *   network's name, and must not exist on the host when the network is made;
 * - a subnet given must not overlap another network of the data dir or of
 *   the config dir, nor a route of the host; one picked is the first /24
 *   of 10.90.0.0/15 (podman's networks take 10.88.0.0/16 and 10.89.0.0/16)
 *   that overlaps none of those, counting from a place that the data dir's
 *   path decides, so that two data dirs start apart. Networks of other data
 *   dirs show as routes once used; a clash with one not yet used is caught
 *   when a pod attaches (a route of the subnet on another device).
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, oneLine, unlessNotFound } from '../errors.js'
import { writeFileAtomic } from '../fs/atomic.js'
import { DIR_MODE } from '../fs/modes.js'
import { MAX_MANIFEST_BYTES, readOwnFile } from '../fs/read.js'
import { acquireLockIn } from '../lock/with-lock.js'
import { ensureDataDir } from '../pod/layout.js'
import { MANIFEST_FILE, RECORD_FILE } from '../pod/record.js'
import { Include, listPods } from '../pod/walk.js'
import { formatCidr, overlaps, parseCidr, size, type Cidr } from './cidr.js'
import type { Conflist } from './cni.js'
import { findPlugin, pluginVersions } from './cni.js'
import {
  CNI_VERSION,
  DRIVERS,
  FOREIGN_NAME_RE,
  NETWORK_NAME_RE,
  RESERVED_NAMES,
  bridgeOf,
  buildConflist,
  conflistSubnets,
  defaultGateway,
  describeConflist,
  gatewayProblem,
  parseConflist,
  subnetProblem,
  type Driver,
  type NetworkInfo,
  type NetworkSpec,
} from './config.js'
import { applyRules, bridgeName, fnv64, type FirewallNet } from './firewall.js'
import { defaultRouteDevice, describeRoute, hostRoutes, linkExists, linkMtu, type HostRoute } from './host.js'
import { DEFAULT_NETWORK, conflistFile, ipamDir, networksDir, networksLock, type NetworkEnv } from './layout.js'
import { allRecords } from './records.js'
import { runTool } from './tool.js'

/** A network podctl can attach pods to: its conflist, what is shown of it, and whose it is. */
export interface Network {
  conflist: Conflist
  info: NetworkInfo
  /** The data dir's own (podctl made it), or the operator's (config dir). */
  own: boolean
}

/** A conflist that could not be read, as list shows it. */
export interface DamagedNetwork {
  name: string
  file: string
  damaged: string
}

const LOCK_WAIT_MS = 30_000
/** Takes the data dir's networks lock around `fn`; the lock is released when it settles. */
export const withNetworksLock = async <T>(dataDir: string, fn: () => Promise<T> | T): Promise<T> => {
  const held = acquireLockIn(networksLock(dataDir), 'the networks of this data dir', { wait: true, timeoutMs: LOCK_WAIT_MS })
  try {
    return await fn()
  } finally {
    held.release()
  }
}

/** Reads one conflist file; a damaged one says why. */
const readConflistFile = (file: string, own: boolean): Network | DamagedNetwork => {
  const name = path.basename(file).replace(/\.(conflist|conf|json)$/, '')
  const f = own ? readOwnFile(file, MAX_MANIFEST_BYTES) : readForeign(file)
  if ('missing' in f) return { name, file, damaged: `${file} is gone` }
  if ('damaged' in f) return { name, file, damaged: f.damaged }
  try {
    const conflist = parseConflist(f.bytes.toString('utf8'), !file.endsWith('.conflist'))
    if (own && conflist.name !== name) throw new Error(`it names network ${JSON.stringify(conflist.name)}, not ${JSON.stringify(name)}`)
    return { conflist, info: describeConflist(conflist, file), own }
  } catch (er) {
    return { name, file, damaged: `${file}: ${oneLine((er as Error).message)}` }
  }
}

/** The operator's files are read as the plugins would: through links, but bounded. */
const readForeign = (file: string): { bytes: Buffer } | { damaged: string } | { missing: true } => {
  try {
    const st = fs.statSync(file)
    if (!st.isFile()) return { damaged: `${file} is not a regular file` }
    if (st.size > MAX_MANIFEST_BYTES) return { damaged: `${file} is larger than 4 MiB` }
    return { bytes: fs.readFileSync(file) }
  } catch (er) {
    return (er as NodeJS.ErrnoException).code === 'ENOENT' ? { missing: true } : { damaged: `${file}: ${(er as Error).message}` }
  }
}

/** The data dir's own networks, by name. */
export const ownNetworks = (dataDir: string): (Network | DamagedNetwork)[] =>
  (unlessNotFound(() => fs.readdirSync(networksDir(dataDir))) ?? [])
    .filter((n) => n.endsWith('.conflist') && !n.startsWith('.'))
    .sort()
    .map((n) => readConflistFile(path.join(networksDir(dataDir), n), true))

/** The operator's networks (libcni's order: file names sorted, the first of a name wins). */
export const configDirNetworks = (configDir: string): Network[] => {
  const files = (unlessNotFound(() => fs.readdirSync(configDir)) ?? []).filter((n) => /\.(conflist|conf|json)$/.test(n)).sort()
  const seen = new Set<string>()
  const out: Network[] = []
  for (const f of files) {
    const n = readConflistFile(path.join(configDir, f), false)
    if ('damaged' in n || seen.has(n.info.name) || !FOREIGN_NAME_RE.test(n.info.name)) continue
    seen.add(n.info.name)
    out.push(n)
  }
  return out
}

const isNetwork = (n: Network | DamagedNetwork): n is Network => !('damaged' in n)

/**
 * Every network: the data dir's (the default one first, made if this
 * process may write the data dir and it is missing) and then the operator's
 * whose names the data dir does not use.
 */
export const listNetworks = async (dataDir: string, env: NetworkEnv, opts: { makeDefault?: boolean } = {}): Promise<(Network | DamagedNetwork)[]> => {
  if (opts.makeDefault === true && !fs.existsSync(conflistFile(dataDir, DEFAULT_NETWORK))) await ensureDefaultNetwork(dataDir, env)
  const own = ownNetworks(dataDir)
  const nameOf = (n: Network | DamagedNetwork): string => ('damaged' in n ? n.name : n.info.name)
  own.sort((a, b) => (nameOf(a) === DEFAULT_NETWORK ? -1 : nameOf(b) === DEFAULT_NETWORK ? 1 : 0))
  const names = new Set(own.map(nameOf))
  return [...own, ...configDirNetworks(env.configDir).filter((n) => !names.has(n.info.name))]
}

const noSuchNetwork = (name: string): PodctlError =>
  new PodctlError('ENONETWORK', `no such network: ${JSON.stringify(name)}`, 'list the networks: podctl network list; make one: podctl network create NAME')

/** The network called `name`: the data dir's, else the operator's. The default one is made on first use. ENONETWORK (exit 3) if none. */
export const findNetwork = async (dataDir: string, name: string, env: NetworkEnv): Promise<Network> => {
  if (name === DEFAULT_NETWORK && !fs.existsSync(conflistFile(dataDir, name))) return ensureDefaultNetwork(dataDir, env)
  const file = conflistFile(dataDir, name)
  if (NETWORK_NAME_RE.test(name) && fs.existsSync(file)) {
    const n = readConflistFile(file, true)
    if (!isNetwork(n)) throw new PodctlError('EFAILED', `network ${name} is damaged: ${n.damaged}`, `remove it (podctl network rm ${name}) and make it again`)
    return n
  }
  const foreign = configDirNetworks(env.configDir).find((n) => n.info.name === name)
  if (foreign === undefined) throw noSuchNetwork(name)
  return foreign
}

/** Options of network create, as typed. */
export interface CreateOptions {
  subnet?: string
  gateway?: string
  internal?: boolean
  driver?: string
  opts?: Record<string, string>
}

const usage = (message: string, hint?: string): PodctlError => new PodctlError('EUSAGE', message, hint)

/** Checks a name for network create: EUSAGE for a bad one. */
export const checkNetworkName = (name: string): void => {
  if (!NETWORK_NAME_RE.test(name)) throw usage(`invalid network name ${JSON.stringify(name)}: 1 to 63 characters of a-z, 0-9 and "-", starting with a letter or digit`)
  if (RESERVED_NAMES.includes(name)) throw usage(`invalid network name ${JSON.stringify(name)}: it is a network mode's word`, `choose another name; --network ${name} already means something`)
}

const OPTS: Record<Driver, readonly string[]> = { bridge: ['mtu', 'vlan'], macvlan: ['parent', 'mode', 'mtu'], ipvlan: ['parent', 'mode', 'mtu'] }
const MODES: Record<string, readonly string[]> = { macvlan: ['bridge', 'private', 'vepa', 'passthru'], ipvlan: ['l2', 'l3', 'l3s'] }

const intOpt = (key: string, v: string, min: number, max: number): number => {
  const n = /^\d+$/.test(v) ? Number(v) : NaN
  if (!(n >= min && n <= max)) throw usage(`invalid --opt ${key}=${v}: a whole number from ${min} to ${max}`)
  return n
}

/** What stands in a new subnet's way: another network, the host's routes, the defaults of podman and rkt. */
interface Taken {
  what: string
  cidr: Cidr
}

const PODMAN_DEFAULT = parseCidr('10.88.0.0/16')!
const RKT_DEFAULT = parseCidr('172.16.28.0/24')!
/** Where podctl picks subnets: 512 /24s, past podman's 10.88/16 (its default) and 10.89/16 (its network create's). */
const POOL = parseCidr('10.90.0.0/15')!

const takenSubnets = (dataDir: string, env: NetworkEnv, routes: readonly HostRoute[], except?: string): Taken[] => {
  const out: Taken[] = [
    { what: "podman's default network (10.88.0.0/16)", cidr: PODMAN_DEFAULT },
    { what: "rkt's default network (172.16.28.0/24)", cidr: RKT_DEFAULT },
  ]
  for (const n of [...ownNetworks(dataDir).filter(isNetwork), ...configDirNetworks(env.configDir)]) {
    if (n.info.name === except) continue
    for (const c of conflistSubnets(n.conflist)) out.push({ what: `network ${n.info.name} (${formatCidr(c)}, ${n.info.file})`, cidr: c })
  }
  for (const r of routes) if (r.cidr.prefix > 0) out.push({ what: `the host's route ${describeRoute(r)}`, cidr: r.cidr })
  return out
}

/** The first /24 of the pool that nothing takes, starting where the data dir's path and the name point. */
const pickSubnet = (dataDir: string, name: string, taken: readonly Taken[]): Cidr => {
  const count = Number(size(POOL) / 256n)
  const start = Number(BigInt(`0x${fnv64(`${dataDir}\0${name}`)}`) % BigInt(count))
  for (let i = 0; i < count; i++) {
    const c: Cidr = { family: 4, base: POOL.base + BigInt(((start + i) % count) * 256), prefix: 24 }
    if (!taken.some((t) => overlaps(t.cidr, c))) return c
  }
  throw new PodctlError('EFAILED', `no free subnet left in ${formatCidr(POOL)}: every /24 of it is used by a network or a route of the host`, 'give one: podctl network create NAME --subnet CIDR')
}

/**
 * The highest spec version podctl writes that the driver's plugin speaks
 * (its VERSION answer); a plugin of the network that is not installed
 * fails here, naming the package, rather than at the first pod.
 */
const versionFor = async (conflist: Conflist, env: NetworkEnv): Promise<string> => {
  for (const p of [...conflist.plugins.map((x) => x.type), 'host-local']) {
    if (findPlugin(p, env.pluginDirs) === undefined) {
      throw new PodctlError('EFAILED', `network ${conflist.name} needs the CNI plugin ${JSON.stringify(p)}, which is not in ${env.pluginDirs.join(', ')}`, 'install the CNI plugins (Debian: apt-get install containernetworking-plugins), or say where they are: --cni-plugin-dir DIR or PODCTL_CNI_PLUGIN_DIR')
    }
  }
  const v = await pluginVersions(conflist.plugins[0]!.type, env)
  return [CNI_VERSION, '0.4.0'].find((w) => v.includes(w)) ?? CNI_VERSION
}

/** Turns network create's options into a checked spec. EUSAGE (exit 2) for anything malformed. */
const specOf = (dataDir: string, name: string, o: CreateOptions): Omit<NetworkSpec, 'subnet' | 'gateway'> & { subnet?: Cidr; gateway?: string } => {
  checkNetworkName(name)
  const driver = (o.driver ?? 'bridge') as Driver
  if (!DRIVERS.includes(driver)) throw usage(`invalid --driver ${JSON.stringify(o.driver)}: bridge, macvlan or ipvlan`)
  const opts = o.opts ?? {}
  for (const k of Object.keys(opts)) if (!OPTS[driver].includes(k)) throw usage(`invalid --opt ${k}: a ${driver} network takes ${OPTS[driver].join(', ')}`)
  let subnet: Cidr | undefined
  if (o.subnet !== undefined) {
    subnet = parseCidr(o.subnet)
    if (subnet === undefined) throw usage(`invalid --subnet ${JSON.stringify(o.subnet)}: not a CIDR such as 10.91.3.0/24 or fd00:1::/64`)
    const small = subnetProblem(subnet)
    if (small) throw usage(`invalid --subnet ${o.subnet}: ${small}`)
  }
  if (o.gateway !== undefined) {
    if (subnet === undefined) throw usage('--gateway needs --subnet: the gateway is an address of the subnet')
    const bad = gatewayProblem(subnet, o.gateway)
    if (bad) throw usage(`invalid --gateway: ${bad}`)
  }
  if (driver !== 'bridge') {
    if (o.internal === true) throw usage(`--internal is for bridge networks: a ${driver} network's pods are on the parent's own network`)
    if (opts.parent === undefined) throw usage(`a ${driver} network needs its parent link: --opt parent=IFACE`, 'e.g. --opt parent=eth0')
    if (!/^[A-Za-z0-9_.:-]{1,15}$/.test(opts.parent) || !linkExists(opts.parent)) throw usage(`invalid --opt parent=${opts.parent}: the host has no such link`)
    if (subnet === undefined) throw usage(`a ${driver} network needs --subnet: the subnet of its parent's network`, 'e.g. --subnet 192.168.1.0/24 --gateway 192.168.1.1')
    if (opts.mode !== undefined && !MODES[driver]!.includes(opts.mode)) throw usage(`invalid --opt mode=${opts.mode}: a ${driver} network's mode is ${MODES[driver]!.join(', ')}`)
  }
  const mtu = opts.mtu !== undefined ? intOpt('mtu', opts.mtu, 576, 65535) : undefined
  const vlan = opts.vlan !== undefined ? intOpt('vlan', opts.vlan, 1, 4094) : undefined
  return {
    name,
    driver,
    internal: o.internal === true,
    iface: driver === 'bridge' ? bridgeName(dataDir, name) : opts.parent!,
    ...(subnet !== undefined ? { subnet } : {}),
    ...(o.gateway !== undefined ? { gateway: o.gateway } : {}),
    ...(mtu !== undefined ? { mtu } : {}),
    ...(vlan !== undefined ? { vlan } : {}),
    ...(opts.mode !== undefined ? { mode: opts.mode } : {}),
  }
}

const requireRoot = (what: string): void => {
  if ((process.geteuid?.() ?? 0) !== 0) {
    throw new PodctlError('EFAILED', `${what} needs root: a network's bridge and firewall rules are the host's`, 'run it as root; a podctl that is not root gives its pods a user-mode network instead')
  }
}

/**
 * Makes a network of the data dir (network create): checks its options
 * (EUSAGE), root (EFAILED), its name (EBADSTATE if taken, here or in the
 * config dir), its subnet and bridge against the host (EFAILED naming
 * the clash); writes its conflist and its firewall rules. The network.
 */
export const createNetwork = async (dataDir: string, name: string, o: CreateOptions, env: NetworkEnv): Promise<NetworkInfo> => {
  const partial = specOf(dataDir, name, o)
  requireRoot('network create')
  ensureDataDir(dataDir)
  return withNetworksLock(dataDir, async () => {
    if (fs.existsSync(conflistFile(dataDir, name)) || name === DEFAULT_NETWORK) throw new PodctlError('EBADSTATE', `network ${name} exists`, `inspect it: podctl network inspect ${name}`)
    const foreign = configDirNetworks(env.configDir).find((n) => n.info.name === name)
    if (foreign) throw new PodctlError('EBADSTATE', `network ${name} exists: ${foreign.info.file}`, 'choose another name')
    return (await makeNetwork(dataDir, partial, env)).info
  })
}

/**
 * Writes a network's conflist after its host checks, and its rules; the
 * caller holds the networks lock. The subnet and the bridge must clash with
 * nothing (EFAILED naming what).
 */
const makeNetwork = async (dataDir: string, partial: ReturnType<typeof specOf>, env: NetworkEnv): Promise<Network> => {
  const routes = hostRoutes()
  const taken = takenSubnets(dataDir, env, routes, partial.name)
  let subnet = partial.subnet
  if (subnet !== undefined) {
    const clash = taken.find((t) => overlaps(t.cidr, subnet!))
    // A macvlan or ipvlan network shares its parent's subnet by design: its own route is no clash.
    const ownRoute = (t: Taken): boolean => partial.driver !== 'bridge' && t.what.startsWith("the host's route") && t.what.endsWith(`dev ${partial.iface}`)
    if (clash && !ownRoute(clash)) throw new PodctlError('EFAILED', `subnet ${formatCidr(subnet)} clashes with ${clash.what}`, 'choose another subnet with --subnet, or leave it out and podctl picks a free one')
  } else {
    subnet = pickSubnet(dataDir, partial.name, taken)
  }
  if (partial.driver === 'bridge' && linkExists(partial.iface)) {
    throw new PodctlError('EFAILED', `the bridge ${partial.iface} of network ${partial.name} exists on the host already (another data dir's network, or one left behind)`, `remove it if it is not in use: ip link del ${partial.iface}`)
  }
  const uplink = defaultRouteDevice()
  // Pods' packets leave through the host's way out: a bridge no wider than it fragments nothing.
  const mtu = partial.mtu ?? (partial.driver === 'bridge' && uplink !== undefined ? linkMtu(uplink) : undefined)
  const spec: NetworkSpec = { ...partial, subnet, gateway: partial.gateway ?? defaultGateway(subnet), ...(mtu !== undefined && mtu !== 1500 ? { mtu } : {}) }
  const conflist = buildConflist(spec, ipamDir(dataDir))
  conflist.cniVersion = await versionFor(conflist, env)
  fs.mkdirSync(networksDir(dataDir), { recursive: true, mode: DIR_MODE })
  const file = conflistFile(dataDir, spec.name)
  writeFileAtomic(networksDir(dataDir), path.basename(file), `${JSON.stringify(conflist, null, 2)}\n`, { sync: true })
  try {
    await applyRules(dataDir, firewallNets(dataDir))
  } catch (er) {
    // No network without its rules: the next attach would fail on them anyway.
    fs.rmSync(file, { force: true })
    throw er
  }
  return { conflist, info: describeConflist(conflist, file), own: true }
}

/**
 * The default network, `bridge`, made on first use as network create
 * would make it (a subnet picked as above); needs root like it.
 */
export const ensureDefaultNetwork = async (dataDir: string, env: NetworkEnv): Promise<Network> => {
  const file = conflistFile(dataDir, DEFAULT_NETWORK)
  const read = (): Network | undefined => {
    if (!fs.existsSync(file)) return undefined
    const n = readConflistFile(file, true)
    if (!isNetwork(n)) throw new PodctlError('EFAILED', `the default network is damaged: ${n.damaged}`, `remove ${file} and it is made again`)
    return n
  }
  const there = read()
  if (there) return there
  requireRoot('the default network')
  ensureDataDir(dataDir)
  return withNetworksLock(dataDir, async () => read() ?? makeNetwork(dataDir, { name: DEFAULT_NETWORK, driver: 'bridge', internal: false, iface: bridgeName(dataDir, DEFAULT_NETWORK) }, env))
}

/** The firewall view of the data dir's bridge networks. */
export const firewallNets = (dataDir: string): FirewallNet[] =>
  ownNetworks(dataDir)
    .filter(isNetwork)
    .flatMap((n) => {
      const bridge = bridgeOf(n.conflist)
      const subnet = conflistSubnets(n.conflist)[0]
      return bridge !== undefined && subnet !== undefined ? [{ bridge, subnet, internal: n.info.internal }] : []
    })

/** A pod that names a network, or is attached to one. */
export interface NetworkUser {
  uuid: string
  garbage: boolean
}

/** The network names a pod file holds: `network` (a name) and `networks` (names, or objects with a `name`). */
const namesIn = (file: string): string[] => {
  const f = readOwnFile(file, MAX_MANIFEST_BYTES)
  if (!('bytes' in f)) return []
  try {
    const v = JSON.parse(f.bytes.toString('utf8')) as { network?: unknown; networks?: unknown }
    const out: string[] = []
    if (typeof v.network === 'string') out.push(v.network)
    if (Array.isArray(v.networks)) {
      for (const n of v.networks) {
        if (typeof n === 'string') out.push(n)
        else if (n !== null && typeof n === 'object' && typeof (n as { name?: unknown }).name === 'string') out.push((n as { name: string }).name)
      }
    }
    return out
  } catch {
    return []
  }
}

/**
 * The pods that use each network: those whose record or manifest names
 * it (`network`, `networks`; an absent field names none) and those
 * attached to it now.
 */
export const networkUsers = (dataDir: string): Map<string, NetworkUser[]> => {
  const users = new Map<string, NetworkUser[]>()
  const add = (net: string, u: NetworkUser): void => {
    const list = users.get(net) ?? []
    if (!list.some((x) => x.uuid === u.uuid)) list.push(u)
    users.set(net, list)
  }
  const garbage = new Map<string, boolean>()
  for (const pod of listPods(dataDir, Include.all)) {
    try {
      const g = pod.dir === 'garbage' || pod.dir === 'exited-garbage'
      garbage.set(pod.uuid, g)
      for (const n of new Set([...namesIn(path.join(pod.path, RECORD_FILE)), ...namesIn(path.join(pod.path, MANIFEST_FILE))])) add(n, { uuid: pod.uuid, garbage: g })
    } finally {
      pod.close()
    }
  }
  for (const rec of allRecords(dataDir)) for (const a of rec.attachments) add(a.network, { uuid: rec.uuid, garbage: garbage.get(rec.uuid) ?? true })
  return users
}

/** Deletes a network's bridge (if no pod's interface is on it) and its address state. */
const removeNetworkLeftovers = async (dataDir: string, n: Network): Promise<void> => {
  const bridge = bridgeOf(n.conflist)
  if (bridge !== undefined && linkExists(bridge)) await runTool('ip', ['link', 'del', bridge])
  fs.rmSync(path.join(ipamDir(dataDir), n.info.name), { recursive: true, force: true })
}

/**
 * Removes a network of the data dir (network rm): EBADSTATE naming the
 * pods that use it (garbage aside), or for the operator's networks, which
 * are not podctl's to remove; ENONETWORK if there is none. The default
 * network can be removed while unused; it is made again on next use.
 */
export const removeNetwork = async (dataDir: string, name: string, env: NetworkEnv): Promise<void> => {
  const file = conflistFile(dataDir, name)
  if (!NETWORK_NAME_RE.test(name) || !fs.existsSync(file)) {
    const foreign = configDirNetworks(env.configDir).find((n) => n.info.name === name)
    if (foreign) throw new PodctlError('EBADSTATE', `network ${name} is the operator's (${foreign.info.file}), not this data dir's`, 'remove that file yourself if it should go')
    throw noSuchNetwork(name)
  }
  requireRoot('network rm')
  await withNetworksLock(dataDir, async () => {
    const inUse = (networkUsers(dataDir).get(name) ?? []).filter((u) => !u.garbage)
    if (inUse.length > 0) {
      const pods = inUse.map((u) => u.uuid.slice(0, 8))
      throw new PodctlError('EBADSTATE', `network ${name} is used by pod${pods.length > 1 ? 's' : ''} ${pods.join(', ')}`, `remove the pod${pods.length > 1 ? 's' : ''} first: podctl rm ${pods.join(' ')}`)
    }
    const n = readConflistFile(file, true)
    fs.rmSync(file, { force: true })
    await applyRules(dataDir, firewallNets(dataDir))
    if (isNetwork(n)) await removeNetworkLeftovers(dataDir, n)
  })
}

/** Removes every network of the data dir that no pod uses (the default one aside). The names removed. */
export const pruneNetworks = async (dataDir: string): Promise<string[]> => {
  if (!fs.existsSync(networksDir(dataDir))) return []
  requireRoot('network prune')
  return withNetworksLock(dataDir, async () => {
    const users = networkUsers(dataDir)
    const removed: Network[] = []
    for (const n of ownNetworks(dataDir).filter(isNetwork)) {
      if (n.info.name === DEFAULT_NETWORK || (users.get(n.info.name) ?? []).some((u) => !u.garbage)) continue
      fs.rmSync(conflistFile(dataDir, n.info.name), { force: true })
      removed.push(n)
    }
    if (removed.length > 0) await applyRules(dataDir, firewallNets(dataDir))
    for (const n of removed) await removeNetworkLeftovers(dataDir, n)
    return removed.map((n) => n.info.name)
  })
}

/**
 * Checks, when a pod attaches, that the network's subnet is routed to
 * its own bridge or not at all: another data dir that made a network with
 * the same subnet and used it first owns the route. EFAILED naming it.
 */
export const checkRoute = (n: Network): void => {
  const bridge = bridgeOf(n.conflist)
  if (bridge === undefined || !n.own) return
  for (const subnet of conflistSubnets(n.conflist)) {
    const r = hostRoutes().find((x) => x.cidr.prefix > 0 && x.dev !== bridge && overlaps(x.cidr, subnet))
    if (r) throw new PodctlError('EFAILED', `network ${n.info.name}'s subnet ${formatCidr(subnet)} clashes with the host's route ${describeRoute(r)}`, `remove the network and make it again with another subnet: podctl network rm ${n.info.name}`)
  }
}
