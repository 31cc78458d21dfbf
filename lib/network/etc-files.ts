/**
 * The files a pod is given (CONTRACT §14): /etc/hosts, /etc/resolv.conf
 * and /etc/hostname, made by pure functions from what the pod is, and
 * written into a directory of the pod that the runtime binds them from.
 *
 * /etc/hosts is kept current as pods come and go on a named network
 * (Documentation/networks.md, "Names"): it is rewritten in place, never
 * replaced. A file bound into a container is the inode that was bound; a
 * rename puts a new inode at the path and the container keeps reading the
 * old one. The rewrite is one pwrite of the whole text from offset 0 and
 * an ftruncate to its length. A reader between the two sees the new text
 * followed by the old text's tail; the new text ends with a comment that
 * has no newline, so the first, partial line of that tail is part of the
 * comment, and what follows are whole lines of the old file: never a line
 * made of two.
 */
import fs from 'node:fs'
import { Dir } from '../fs/dir.js'
import { writeFileAtomic } from '../fs/atomic.js'
import { parseIp } from './cidr.js'
import type { HostEntry } from './records.js'

/** A pod's addresses and names on one network, as another pod's /etc/hosts lists them. */
export interface HostsPeer {
  ip: string
  names: string[]
}

export interface HostsInput {
  hostname: string
  /** The pod's own addresses, its hostname's. */
  addresses: string[]
  /** More names for those addresses: the pod's name, its apps' names, aliases. */
  names?: string[]
  /** `--add-host NAME:IP`: first, so that they win over anything below. */
  addHosts?: readonly HostEntry[]
  /** The host, as the pod reaches it (a bridge's gateway): `host.containers.internal`, as podman names it. */
  hostAddress?: string
  /** The other pods of the pod's named networks. */
  peers?: readonly HostsPeer[]
  /** The host's /etc/hosts, whose entries come first, as podman's base hosts file. */
  base?: string
  /** Never rewritten in place (no network of the pod's own): podman's text exactly, without the closing comment (see the header). */
  final?: boolean
}

/** The last line of a hosts file podctl writes: a comment with no newline (see the header). */
export const HOSTS_END = '# end of podctl\'s entries'

/** The entries of a hosts file, as podman reads the host's: comments cut, a line without a name skipped. */
const parseHosts = (text: string): HostsPeer[] =>
  text
    .split('\n')
    .map((l) => l.replace(/#.*$/, '').trim().split(/\s+/))
    .filter((f) => f.length >= 2)
    .map(([ip, ...names]) => ({ ip: ip!, names }))

/**
 * /etc/hosts of a pod, as podman 4 writes a container's (containers/
 * common's etchosts): `--add-host` entries first, then the host's entries
 * (`base`), one `IP<TAB>NAMES` line each, then localhost (v4 and v6), the
 * pod's own names at its addresses, `host.containers.internal` and the
 * pods of its named networks, each with only the names the given lines
 * lack; a comment without a newline ends it (see the header).
 */
export const hostsFile = (h: HostsInput): string => {
  const own = [h.hostname, ...(h.names ?? []).filter((n) => n !== h.hostname)]
  const given: HostsPeer[] = [...(h.addHosts ?? []).map((e) => ({ ip: e.ip, names: [e.name] })), ...parseHosts(h.base ?? '')]
  const seen = new Set(given.flatMap((e) => e.names))
  const made: HostsPeer[] = [
    { ip: '127.0.0.1', names: ['localhost'] },
    { ip: '::1', names: ['localhost'] },
    // The host before the pod's own entries, in podman's order (containers/common's etchosts).
    ...(h.hostAddress !== undefined ? [{ ip: h.hostAddress, names: ['host.containers.internal'] }] : []),
    // A pod without an address of its own (network none, host) still knows its name.
    ...(h.addresses.length > 0 ? h.addresses : ['127.0.1.1']).map((ip) => ({ ip, names: own })),
    ...(h.peers ?? []),
  ]
  const lines = [
    ...given.map((e) => `${e.ip}\t${[...new Set(e.names)].join(' ')}`),
    // What podctl adds holds only names the given lines lack.
    ...made.flatMap((e) => {
      const names = [...new Set(e.names)].filter((n) => !seen.has(n))
      return names.length > 0 ? [`${e.ip}\t${names.join(' ')}`] : []
    }),
  ]
  return `${lines.join('\n')}\n${h.final === true ? '' : HOSTS_END}`
}

/** What a pod's resolv.conf holds beyond the host's: podman's --dns, --dns-search, --dns-option. */
export interface ResolvOptions {
  /** Name servers in the place of the host's. */
  dns?: readonly string[]
  /** Search domains in the place of the host's; ["."] for none. */
  search?: readonly string[]
  /** Options in the place of the host's. */
  options?: readonly string[]
  /** A pod on the host's network reaches the host's loopback resolver; keep it. */
  keepLoopback?: boolean
}

/** Name servers when the host has none a pod can reach: podman's. */
export const FALLBACK_DNS = ['8.8.8.8', '8.8.4.4']

const isLoopback = (ip: string): boolean => {
  const a = parseIp(ip.split('%')[0]!)
  if (a === undefined) return false
  return a.family === 4 ? a.value >> 24n === 127n : a.value === 1n
}

/** The parts of a resolv.conf that a pod's own is made of. */
export const parseResolvConf = (text: string): { nameservers: string[]; search: string[]; options: string[] } => {
  const nameservers: string[] = []
  let search: string[] = []
  const options: string[] = []
  for (const raw of text.split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim()
    const [key, ...rest] = line.split(/\s+/)
    if (key === 'nameserver' && rest[0] !== undefined) nameservers.push(rest[0])
    // The last of search and domain wins, as in the resolver.
    else if (key === 'search' || key === 'domain') search = rest
    else if (key === 'options') options.push(...rest)
  }
  return { nameservers, search, options }
}

/**
 * A pod's /etc/resolv.conf from the host's: loopback name servers left
 * out (the pod's loopback is its own; systemd-resolved's stub is the
 * caller's to replace by its upstream file), or the given ones.
 */
export const resolvConf = (hostText: string, o: ResolvOptions = {}): string => {
  const host = parseResolvConf(hostText)
  let servers = o.dns !== undefined && o.dns.length > 0 ? [...o.dns] : host.nameservers.filter((s) => o.keepLoopback === true || !isLoopback(s))
  if (servers.length === 0) servers = FALLBACK_DNS
  const search = o.search !== undefined && o.search.length > 0 ? o.search.filter((s) => s !== '.') : host.search
  const options = o.options !== undefined && o.options.length > 0 ? [...o.options] : host.options
  const lines = [...(search.length > 0 ? [`search ${search.join(' ')}`] : []), ...servers.map((s) => `nameserver ${s}`), ...(options.length > 0 ? [`options ${options.join(' ')}`] : [])]
  return `${lines.join('\n')}\n`
}

/**
 * The host's resolv.conf as a pod should start from: /etc/resolv.conf, or,
 * when that names only systemd-resolved's stub, resolved's upstream file
 * (as podman does).
 */
export const hostResolvConf = (): string => {
  const read = (f: string): string | undefined => {
    try {
      return fs.readFileSync(f, 'utf8').slice(0, 64 * 1024)
    } catch {
      return undefined
    }
  }
  const etc = read('/etc/resolv.conf') ?? ''
  const servers = parseResolvConf(etc).nameservers
  if (servers.length > 0 && servers.every(isLoopback)) return read('/run/systemd/resolve/resolv.conf') ?? etc
  return etc
}

/** /etc/hostname as podman 4.3 writes it: the name, with no newline (`cat /etc/hostname; hostname` prints them on one line there). */
export const hostnameFile = (hostname: string): string => hostname

/** The host's /etc/hosts (at most 64 KiB), which a pod's starts from, as podman's does; empty if unreadable. */
export const hostHosts = (): string => {
  try {
    return fs.readFileSync('/etc/hosts', 'utf8').slice(0, 64 * 1024)
  } catch {
    return ''
  }
}

/** The three files, by name. */
export interface EtcFiles {
  hosts: string
  'resolv.conf': string
  hostname: string
}

/**
 * Writes a pod's files into `dir` (made if missing), each by atomic
 * replace: what the runtime binds is whole. Before the pod's apps run only;
 * later changes to hosts go through rewriteInPlace.
 */
export const writeEtcFiles = (dir: string, files: EtcFiles): void => {
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 })
  for (const [name, text] of Object.entries(files)) writeFileAtomic(dir, name, text, { mode: 0o644 })
}

/**
 * Rewrites `name` in `dir` in place (same inode, so a bind mount of it
 * sees the change), never through a link. False when it is not there (the
 * pod has gone), true when rewritten.
 */
export const rewriteInPlace = (dir: string, name: string, text: string): boolean => {
  let d: Dir
  try {
    d = Dir.open(dir)
  } catch {
    return false
  }
  try {
    let fd: number
    try {
      fd = d.openFile(name, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK)
    } catch {
      return false
    }
    try {
      if (!fs.fstatSync(fd).isFile()) return false
      const bytes = Buffer.from(text)
      fs.writeSync(fd, bytes, 0, bytes.length, 0)
      fs.ftruncateSync(fd, bytes.length)
    } finally {
      fs.closeSync(fd)
    }
    return true
  } finally {
    d.close()
  }
}
