/**
 * The firewall rules of a data dir's bridge networks, made per network and
 * never per pod (lib/network/config.ts says why): one chain per table and
 * data dir, named after the data dir (`PODCTL-FWD-<tag>`, `PODCTL-IN-<tag>`,
 * `PODCTL-NAT-<tag>`), jumped to from FORWARD, INPUT and POSTROUTING, and
 * rewritten whole by one iptables-restore whenever the data dir's networks
 * change. Per network:
 *
 * - forwarding within its bridge is accepted; from it to another podctl
 *   bridge (`podctl+`, any data dir's) dropped: two networks do not reach
 *   each other;
 * - out of it: accepted, or dropped for an `--internal` network, which
 *   also has no masquerade and gives its pods no default route;
 * - into it: replies accepted, the rest left to the host's policy;
 * - a published port's connections (conntrack DNAT, either way) accepted
 *   first, from whichever network: what is published is public;
 * - to 127.0.0.0/8 from it: dropped in INPUT. portmap turns on
 *   route_localnet on a bridge that publishes ports, which would let a pod
 *   that can forge packets reach the host's loopback services; only the
 *   replies of a connection the host made to a published port at
 *   127.0.0.1 pass (conntrack: DNAT, reply direction);
 * - masquerade of what leaves its subnet.
 *
 * Rules vanish with a reboot; `rules.json` notes the boot and the rules it
 * applied, so that the next attach puts them back and otherwise costs one
 * small read.
 */
import fs from 'node:fs'
import { writeFileAtomic } from '../fs/atomic.js'
import { readOwnText } from '../fs/read.js'
import { readBootId } from '../proc/identity.js'
import { formatCidr, type Cidr, type Family } from './cidr.js'
import { networksDir, rulesStampFile } from './layout.js'
import { mustRun, runTool } from './tool.js'

/** What the rules of one network need to know. */
export interface FirewallNet {
  bridge: string
  subnet: Cidr
  internal: boolean
}

/** The prefix of every bridge podctl makes, in any data dir. */
export const BRIDGE_PREFIX = 'podctl'

/** FNV-1a, 64 bits, as 16 hex digits: a short, stable name part (not a secret). */
export const fnv64 = (text: string): string => {
  let h = 0xcbf29ce484222325n
  for (const b of Buffer.from(text)) {
    h ^= BigInt(b)
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn
  }
  return h.toString(16).padStart(16, '0')
}

/** The data dir's path as the kernel sees it (links resolved), so that one data dir reached two ways is one. */
const realPath = (p: string): string => {
  try {
    return fs.realpathSync(p)
  } catch {
    return p
  }
}

/** The data dir's tag in chain names. */
export const dataDirTag = (dataDir: string): string => fnv64(realPath(dataDir)).slice(0, 8).toUpperCase()

/** The bridge of a data dir's network: `podctl` and 9 hex digits of the data dir and the name (15 characters, the kernel's most). */
export const bridgeName = (dataDir: string, network: string): string => `${BRIDGE_PREFIX}${fnv64(`${realPath(dataDir)}\0${network}`).slice(0, 9)}`

const chains = (tag: string) => ({ fwd: `PODCTL-FWD-${tag}`, input: `PODCTL-IN-${tag}`, nat: `PODCTL-NAT-${tag}` })

/** The iptables-restore input (without --noflush's flush of other chains) for one family. Pure. */
export const rulesText = (tag: string, nets: readonly FirewallNet[], family: Family): string => {
  const c = chains(tag)
  const mine = nets.filter((n) => n.subnet.family === family)
  const filter = [`*filter`, `:${c.fwd} - [0:0]`, ...(family === 4 ? [`:${c.input} - [0:0]`] : [])]
  const nat = ['*nat', `:${c.nat} - [0:0]`]
  // A published port is public: its connections (both ways) pass whichever network they come from.
  for (const n of mine) filter.push(`-A ${c.fwd} -o ${n.bridge} -m conntrack --ctstate DNAT -j ACCEPT`, `-A ${c.fwd} -i ${n.bridge} -m conntrack --ctstate DNAT -j ACCEPT`)
  for (const n of mine) {
    const b = n.bridge
    const s = formatCidr(n.subnet)
    filter.push(`-A ${c.fwd} -i ${b} -o ${b} -j ACCEPT`)
    filter.push(`-A ${c.fwd} -i ${b} -o ${BRIDGE_PREFIX}+ -j DROP`)
    filter.push(`-A ${c.fwd} -i ${b} -j ${n.internal ? 'DROP' : 'ACCEPT'}`)
    filter.push(`-A ${c.fwd} -o ${b} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`)
    // The replies of the host's own connections to a published port at 127.0.0.1 come back to 127.0.0.1 (portmap's SNAT undone): let those in.
    if (family === 4) filter.push(`-A ${c.input} -i ${b} -d 127.0.0.0/8 -m conntrack --ctstate DNAT --ctdir REPLY -j ACCEPT`, `-A ${c.input} -i ${b} -d 127.0.0.0/8 -j DROP`)
    if (!n.internal) nat.push(`-A ${c.nat} -s ${s} ! -d ${s} -j MASQUERADE`)
  }
  return `${[...filter, 'COMMIT', ...nat, 'COMMIT'].join('\n')}\n`
}

const tools = (family: Family) => (family === 4 ? { restore: 'iptables-restore', cmd: 'iptables' } : { restore: 'ip6tables-restore', cmd: 'ip6tables' })

/** The jumps into the data dir's chains: table, hook chain, rule. */
const jumpsOf = (tag: string, family: Family): { table: string; chain: string; rule: string[] }[] => {
  const c = chains(tag)
  const hooks: [string, string, string][] = [['filter', 'FORWARD', c.fwd], ['nat', 'POSTROUTING', c.nat], ...(family === 4 ? ([['filter', 'INPUT', c.input]] as [string, string, string][]) : [])]
  return hooks.map(([table, from, to]) => ({ table, chain: to, rule: [from, '-m', 'comment', '--comment', 'podctl networks', '-j', to] }))
}

/** The jumps into the data dir's chains, each inserted once at the top of its hook's chain. */
const ensureJumps = async (tag: string, family: Family): Promise<void> => {
  const { cmd } = tools(family)
  for (const { table, rule } of jumpsOf(tag, family)) {
    const has = await runTool(cmd, ['-w', '-t', table, '-C', ...rule])
    if (has.status !== 0) await mustRun(cmd, ['-w', '-t', table, '-I', rule[0]!, '1', ...rule.slice(1)])
  }
}

/** How many copies of one jump are deleted at most (one is made; more only by hand). */
const MAX_JUMP_COPIES = 16

/**
 * Removes the data dir's chains of one family and the jumps into them: a
 * data dir with no bridge network left keeps nothing in the host's
 * tables. A chain that is not there is not an error.
 */
const removeChains = async (tag: string, family: Family): Promise<void> => {
  const { cmd } = tools(family)
  for (const { table, chain, rule } of jumpsOf(tag, family)) {
    for (let i = 0; i < MAX_JUMP_COPIES; i++) if ((await runTool(cmd, ['-w', '-t', table, '-D', ...rule])).status !== 0) break
    if ((await runTool(cmd, ['-w', '-t', table, '-S', chain])).status !== 0) continue
    await mustRun(cmd, ['-w', '-t', table, '-F', chain])
    await mustRun(cmd, ['-w', '-t', table, '-X', chain])
  }
}

interface Stamp {
  boot: string
  rules: string
}

/** The stamp of a set of rules in this boot. */
const stampOf = (texts: string): Stamp => ({ boot: readBootId(), rules: fnv64(texts) })

const families = (nets: readonly FirewallNet[]): Family[] => [4, ...(nets.some((n) => n.subnet.family === 6) ? [6 as const] : [])]

const allText = (tag: string, nets: readonly FirewallNet[]): string => families(nets).map((f) => rulesText(tag, nets, f)).join('')

/**
 * Applies the data dir's rules for `nets` (all its bridge networks), then
 * notes them in rules.json. With none left, its chains and their jumps
 * go, and the note with them. The caller holds the data dir's networks
 * lock.
 */
export const applyRules = async (dataDir: string, nets: readonly FirewallNet[]): Promise<void> => {
  const tag = dataDirTag(dataDir)
  const old = readStamp(dataDir)
  const fams = nets.length > 0 ? families(nets) : []
  for (const f of fams) {
    await mustRun(tools(f).restore, ['-w', '5', '--noflush'], rulesText(tag, nets, f))
    await ensureJumps(tag, f)
  }
  // A family that had networks before and has none now keeps no chain (no note: none were made).
  const gone: Family[] = old === undefined ? [] : [...(fams.includes(4) ? [] : [4 as const]), ...(old.v6 && !fams.includes(6) ? [6 as const] : [])]
  for (const f of gone) await removeChains(tag, f)
  if (fams.length === 0) {
    fs.rmSync(rulesStampFile(dataDir), { force: true })
    return
  }
  fs.mkdirSync(networksDir(dataDir), { recursive: true, mode: 0o750 })
  writeFileAtomic(networksDir(dataDir), 'rules.json', `${JSON.stringify({ ...stampOf(allText(tag, nets)), v6: fams.includes(6) })}\n`)
}

const readStamp = (dataDir: string): (Stamp & { v6?: boolean }) | undefined => {
  const t = readOwnText(rulesStampFile(dataDir))
  if (t === undefined) return undefined
  try {
    return JSON.parse(t) as Stamp & { v6?: boolean }
  } catch {
    return undefined
  }
}

/** Whether the rules for `nets` were applied in this boot (one small read). */
export const rulesCurrent = (dataDir: string, nets: readonly FirewallNet[]): boolean => {
  const s = readStamp(dataDir)
  const want = stampOf(allText(dataDirTag(dataDir), nets))
  return s !== undefined && s.boot === want.boot && s.rules === want.rules
}
