/**
 * The rules of a pod's network fields (CONTRACT §14), pure: published
 * ports as podman spells them (`-p [HOSTIP:]HOSTPORT:PORT[/tcp|udp]`) and
 * as the manifest writes them, name servers, search domains, resolver
 * options and `--add-host NAME:IP` entries. They live here, below the
 * network room, so that the manifest's checks (manifest.ts), the flags of
 * prepare and run (lib/cli/) and the network room's attach (lib/network/,
 * which re-exports the port rules from ports.ts) read a value alike.
 */
import net from 'node:net'
import { PodctlError } from '../errors.js'

export type Protocol = 'tcp' | 'udp'

/** A published port with its defaults filled in: portmap's `portMappings` entry (CNI's convention). */
export interface PublishedPort {
  hostPort: number
  containerPort: number
  protocol: Protocol
  /** "" for every address of the host. */
  hostIP: string
}

/** Whether `text` is an IPv4 or IPv6 address (Node's rule: a zone after "%" is taken). */
export const isIpAddress = (text: string): boolean => net.isIP(text) !== 0

/** Whether `v` is a port number, 1 to 65535. */
export const isPort = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 65535

const PORT_RE = /^\d{1,5}$/
const PUBLISH_HINT = 'publish as [HOSTIP:]HOSTPORT:PORT[/tcp|udp], e.g. -p 8080:80 or -p 127.0.0.1:5353:53/udp'

/**
 * One `-p` value as published ports: `[HOSTIP:]HOSTPORT:PORT[/PROTO]`, a
 * host IP of IPv6 in brackets (`[::1]:8080:80`), ranges of equal length on
 * both sides (`8000-8001:80-81`). EUSAGE naming the flag and what is
 * wrong, with `hint` (by default, how a value is spelled).
 */
export const parsePublish = (text: string, flag = '--publish', hint = PUBLISH_HINT): PublishedPort[] => {
  const bad = (why: string): PodctlError => new PodctlError('EUSAGE', `invalid ${flag} ${JSON.stringify(text)}: ${why}`, hint)
  const port = (part: string): number => {
    const n = PORT_RE.test(part) ? Number(part) : NaN
    if (!isPort(n)) throw bad(`${JSON.stringify(part)} is not a port (1 to 65535)`)
    return n
  }
  // A port or a range of ports (`8000-8009`).
  const ports = (part: string): number[] => {
    const m = /^(\d+)-(\d+)$/.exec(part)
    if (!m) return [port(part)]
    const a = port(m[1]!)
    const b = port(m[2]!)
    if (b < a) throw bad(`the range ${part} ends before it starts`)
    return Array.from({ length: b - a + 1 }, (_, i) => a + i)
  }
  let rest = text
  let protocol: Protocol = 'tcp'
  const slash = rest.lastIndexOf('/')
  if (slash >= 0) {
    const p = rest.slice(slash + 1)
    if (p !== 'tcp' && p !== 'udp') throw bad(`the protocol must be tcp or udp, not ${JSON.stringify(p)}`)
    protocol = p
    rest = rest.slice(0, slash)
  }
  let hostIP = ''
  const v6 = /^\[([^\]]*)\]:(.*)$/.exec(rest)
  if (v6) {
    hostIP = v6[1]!
    rest = v6[2]!
    if (net.isIP(hostIP) !== 6) throw bad(`${JSON.stringify(hostIP)} is not an IPv6 address`)
  }
  const parts = rest.split(':')
  if (!v6 && parts.length === 3) {
    hostIP = parts.shift()!
    if (hostIP !== '' && net.isIP(hostIP) !== 4) throw bad(`${JSON.stringify(hostIP)} is not an IP address (an IPv6 address goes in brackets: [::1]:8080:80)`)
  }
  if (parts.length !== 2) throw bad(parts.length === 1 ? 'it names no host port: give HOSTPORT:PORT' : 'too many ":"')
  if (parts[0] === '') throw bad('it names no host port: give HOSTPORT:PORT')
  const host = ports(parts[0]!)
  const cont = ports(parts[1]!)
  if (host.length !== cont.length) throw bad(`the host range has ${host.length} ports and the pod's ${cont.length}`)
  return host.map((h, i) => normalizePort({ hostPort: h, containerPort: cont[i]!, protocol, hostIP }))
}

/** A manifest's entry with its defaults: tcp, every address ("0.0.0.0" and "::" are every address too). */
export const normalizePort = (p: { hostPort: number; containerPort: number; protocol?: Protocol | undefined; hostIP?: string | undefined }): PublishedPort => {
  const hostIP = p.hostIP === undefined || p.hostIP === '0.0.0.0' || p.hostIP === '::' ? '' : p.hostIP
  return { hostPort: p.hostPort, containerPort: p.containerPort, protocol: p.protocol ?? 'tcp', hostIP }
}

/** Whether two ports want one host port: the same number and protocol, on the same address or one of them on all. */
export const clashes = (a: PublishedPort, b: PublishedPort): boolean => a.hostPort === b.hostPort && a.protocol === b.protocol && (a.hostIP === '' || b.hostIP === '' || a.hostIP === b.hostIP)

/** `8080/tcp`, `127.0.0.1:8080/tcp`, `[::1]:8080/tcp`: a host port in messages. */
export const describeHostPort = (p: PublishedPort): string => `${p.hostIP === '' ? '' : p.hostIP.includes(':') ? `[${p.hostIP}]:` : `${p.hostIP}:`}${p.hostPort}/${p.protocol}`

/**
 * A search domain as podman's --dns-search takes it: labels of letters,
 * digits and inner hyphens joined by dots, a dot at the end allowed; or
 * "." alone, for none.
 */
const DOMAIN_RE = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.?$/
export const isSearchDomain = (text: string): boolean => text === '.' || DOMAIN_RE.test(text)

/**
 * A resolver option (`ndots:2`, `edns0`): one word of resolv.conf's
 * `options` line, so no space, and no "#" or ";", which start a comment there.
 */
export const isDnsOption = (text: string): boolean => /^[!-~]{1,255}$/.test(text) && !/[#;]/.test(text)

/** A name of /etc/hosts: labels of letters, digits, "_" and inner hyphens, joined by dots. */
const HOSTS_NAME_RE = /^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?)*$/

/**
 * An `--add-host` entry, NAME:IP, split at the first ":" as podman splits
 * it (so an IPv6 address follows as it is: `db:fd00::5`); the reason it is
 * not one, or the entry.
 */
export const parseAddHost = (text: string): { name: string; ip: string } | { problem: string } => {
  const colon = text.indexOf(':')
  if (colon < 0) return { problem: 'must be NAME:IP' }
  const name = text.slice(0, colon)
  const ip = text.slice(colon + 1)
  if (!HOSTS_NAME_RE.test(name)) return { problem: `${JSON.stringify(name)} is not a host name (letters, digits, "_" and "-" in labels joined by ".")` }
  if (!isIpAddress(ip)) return { problem: `${JSON.stringify(ip)} is not an IP address` }
  return { name, ip }
}
