/**
 * Published ports: `-p [HOSTIP:]HOSTPORT:PORT[/tcp|udp]` as podman spells
 * it, the manifest's `ports` entries, and who holds a host port already:
 * another pod of the data dir that publishes it (its record), or a process
 * of the host that listens on it (/proc/net/{tcp,tcp6,udp,udp6}, and the
 * process whose descriptor is that socket, from /proc/PID/fd). CNI's
 * portmap DNATs the port and binds nothing, so nothing else would notice.
 */
import fs from 'node:fs'
import os from 'node:os'
import { PodctlError, shortId } from '../errors.js'
import { Checker, describe, isObj, join, type ManifestProblem } from '../pod/manifest.js'
import { parseIp } from './cidr.js'
import type { PodNetworkRecord } from './records.js'

export type Protocol = 'tcp' | 'udp'

/** portmap's `portMappings` entry (CNI's convention), as the manifest writes it too. */
export interface PortMapping {
  hostPort: number
  containerPort: number
  protocol: Protocol
  /** "" for every address of the host. */
  hostIP: string
}

const PORT_RE = /^\d{1,5}$/

const port = (text: string, what: string, flag: string): number => {
  const n = PORT_RE.test(text) ? Number(text) : NaN
  if (!(n >= 1 && n <= 65535)) throw new PodctlError('EUSAGE', `invalid ${flag} ${JSON.stringify(what)}: ${JSON.stringify(text)} is not a port (1 to 65535)`, 'publish as [HOSTIP:]HOSTPORT:PORT[/tcp|udp], e.g. -p 8080:80')
  return n
}

/** A port or a range of ports (`8000-8009`). */
const ports = (text: string, what: string, flag: string): number[] => {
  const m = /^(\d+)-(\d+)$/.exec(text)
  if (!m) return [port(text, what, flag)]
  const a = port(m[1]!, what, flag)
  const b = port(m[2]!, what, flag)
  if (b < a) throw new PodctlError('EUSAGE', `invalid ${flag} ${JSON.stringify(what)}: the range ${text} ends before it starts`)
  return Array.from({ length: b - a + 1 }, (_, i) => a + i)
}

/**
 * One `-p` value as port mappings: `[HOSTIP:]HOSTPORT:PORT[/PROTO]`, a host
 * IP of IPv6 in brackets (`[::1]:8080:80`), ranges of equal length on both
 * sides (`8000-8001:80-81`). EUSAGE naming what is wrong.
 */
export const parsePublish = (text: string, flag = '--publish'): PortMapping[] => {
  const bad = (why: string): PodctlError => new PodctlError('EUSAGE', `invalid ${flag} ${JSON.stringify(text)}: ${why}`, 'publish as [HOSTIP:]HOSTPORT:PORT[/tcp|udp], e.g. -p 8080:80 or -p 127.0.0.1:5353:53/udp')
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
    if (parseIp(hostIP)?.family !== 6) throw bad(`${JSON.stringify(hostIP)} is not an IPv6 address`)
  }
  const parts = rest.split(':')
  if (!v6 && parts.length === 3) {
    hostIP = parts.shift()!
    if (hostIP !== '' && parseIp(hostIP)?.family !== 4) throw bad(`${JSON.stringify(hostIP)} is not an IP address (an IPv6 address goes in brackets: [::1]:8080:80)`)
  }
  if (parts.length !== 2) throw bad(parts.length === 1 ? 'it names no host port: give HOSTPORT:PORT' : 'too many ":"')
  if (parts[0] === '') throw bad('it names no host port: give HOSTPORT:PORT')
  const host = ports(parts[0]!, text, flag)
  const cont = ports(parts[1]!, text, flag)
  if (host.length !== cont.length) throw bad(`the host range has ${host.length} ports and the pod's ${cont.length}`)
  if (hostIP === '0.0.0.0' || hostIP === '::') hostIP = ''
  return host.map((h, i) => ({ hostPort: h, containerPort: cont[i]!, protocol, hostIP }))
}

const PORT_FIELDS = ['hostPort', 'containerPort', 'protocol', 'hostIP']
const isPort = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 65535

/** The problems of a manifest's `ports` (at `at`): a list of {hostPort, containerPort, protocol, hostIP}, no host port twice. */
export const portsProblems = (value: unknown, at = 'ports'): ManifestProblem[] => {
  const c = new Checker()
  if (!Array.isArray(value)) {
    c.add(at, `must be an array of {"hostPort", "containerPort", "protocol", "hostIP"}, not ${describe(value)}`)
    return c.problems
  }
  const seen: PortMapping[] = []
  for (const [i, p] of value.entries()) {
    const pat = join(at, i)
    if (!isObj(p)) {
      c.add(pat, `must be an object, not ${describe(p)}`)
      continue
    }
    c.fields(p, pat, PORT_FIELDS)
    if (!isPort(p.hostPort)) c.add(join(pat, 'hostPort'), `must be a port, 1 to 65535, not ${describe(p.hostPort)}`)
    if (!isPort(p.containerPort)) c.add(join(pat, 'containerPort'), `must be a port, 1 to 65535, not ${describe(p.containerPort)}`)
    if (p.protocol !== undefined && p.protocol !== 'tcp' && p.protocol !== 'udp') c.add(join(pat, 'protocol'), `must be "tcp" or "udp", not ${describe(p.protocol)}`)
    if (p.hostIP !== undefined && (typeof p.hostIP !== 'string' || (p.hostIP !== '' && parseIp(p.hostIP) === undefined))) c.add(join(pat, 'hostIP'), `must be an IP address of the host, or "" for all, not ${describe(p.hostIP)}`)
    if (isPort(p.hostPort) && isPort(p.containerPort)) {
      const m = normalizePort(p as unknown as Partial<PortMapping> & { hostPort: number; containerPort: number })
      const twin = seen.find((s) => clashes(s, m))
      if (twin) c.add(join(pat, 'hostPort'), `${m.hostPort}/${m.protocol} is published twice`)
      seen.push(m)
    }
  }
  return c.problems
}

/** A manifest entry with its defaults: tcp, every address. */
export const normalizePort = (p: Partial<PortMapping> & { hostPort: number; containerPort: number }): PortMapping => {
  const hostIP = p.hostIP === undefined || p.hostIP === '0.0.0.0' || p.hostIP === '::' ? '' : p.hostIP
  return { hostPort: p.hostPort, containerPort: p.containerPort, protocol: p.protocol ?? 'tcp', hostIP }
}

/** Whether two mappings want one host port: the same number and protocol, on the same address or one of them on all. */
export const clashes = (a: PortMapping, b: PortMapping): boolean => a.hostPort === b.hostPort && a.protocol === b.protocol && (a.hostIP === '' || b.hostIP === '' || a.hostIP === b.hostIP)

/** `8080/tcp`, `127.0.0.1:8080/tcp`: a host port in messages. */
export const describeHostPort = (p: PortMapping): string => `${p.hostIP === '' ? '' : p.hostIP.includes(':') ? `[${p.hostIP}]:` : `${p.hostIP}:`}${p.hostPort}/${p.protocol}`

/** A socket of the host bound to a port: its address ("" for any), and its inode. */
interface HostSocket {
  ip: string
  port: number
  inode: string
}

/** An address field of /proc/net/tcp*: 32-bit words in memory order, as native hex numbers. */
const procAddress = (hex: string): string => {
  const words = hex.match(/.{8}/g) ?? []
  const bytes = Buffer.alloc(words.length * 4)
  words.forEach((w, i) => (os.endianness() === 'LE' ? bytes.writeUInt32LE(parseInt(w, 16) >>> 0, i * 4) : bytes.writeUInt32BE(parseInt(w, 16) >>> 0, i * 4)))
  if (bytes.length === 4) return [...bytes].join('.')
  const groups = Array.from({ length: 8 }, (_, i) => bytes.readUInt16BE(i * 2).toString(16))
  return groups.join(':')
}

/** The host's sockets listening (tcp, state 0A) or bound (udp, state 07) on `port`. */
const boundSockets = (protocol: Protocol, port: number): HostSocket[] => {
  const out: HostSocket[] = []
  for (const file of [`/proc/net/${protocol}`, `/proc/net/${protocol}6`]) {
    let text: string
    try {
      text = fs.readFileSync(file, 'latin1')
    } catch {
      continue
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/)
      if (f.length < 10) continue
      const [addr, portHex] = f[1]!.split(':')
      if (parseInt(portHex ?? '', 16) !== port) continue
      if (f[3] !== (protocol === 'tcp' ? '0A' : '07')) continue
      const ip = procAddress(addr!)
      out.push({ ip: parseIp(ip)?.value === 0n ? '' : ip, port, inode: f[9]! })
    }
  }
  return out
}

/** The process that holds the socket with that inode: its pid and command, or undefined. */
const socketOwner = (inode: string): { pid: number; command: string } | undefined => {
  const target = `socket:[${inode}]`
  let pids: string[]
  try {
    pids = fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))
  } catch {
    return undefined
  }
  for (const pid of pids) {
    let fds: string[]
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`)
    } catch {
      continue
    }
    for (const fd of fds) {
      try {
        if (fs.readlinkSync(`/proc/${pid}/fd/${fd}`) === target) {
          let command = '?'
          try {
            command = fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim()
          } catch {
            // gone meanwhile
          }
          return { pid: Number(pid), command }
        }
      } catch {
        // closed meanwhile
      }
    }
  }
  return undefined
}

/** Whether a host socket bound at `ip` takes traffic for the mapping's address. */
const sameAddress = (socketIp: string, want: string): boolean => socketIp === '' || want === '' || parseIp(socketIp)?.value === parseIp(want)?.value

/**
 * Who holds the host port of `m` already, in words ("pod 3f2a1c0e (web)",
 * "process 4242 (nginx)"), or undefined. Another pod's port comes first:
 * `records` are the data dir's other pods.
 */
export const portHolder = (m: PortMapping, records: readonly PodNetworkRecord[]): string | undefined => {
  for (const rec of records) {
    for (const a of rec.attachments) {
      const theirs = a.capabilityArgs.portMappings
      if (!Array.isArray(theirs)) continue
      if (theirs.some((t) => isObj(t) && clashes(m, normalizePort(t as unknown as PortMapping)))) return `pod ${shortId(rec.uuid)}${rec.name ? ` (${rec.name})` : ''}`
    }
  }
  for (const s of boundSockets(m.protocol, m.hostPort)) {
    if (!sameAddress(s.ip, m.hostIP)) continue
    const owner = socketOwner(s.inode)
    return owner ? `process ${owner.pid} (${owner.command})` : `a socket of the host (inode ${s.inode}, owner not found)`
  }
  return undefined
}

/**
 * Checks that nobody holds the host ports a pod asks for; EBADSTATE
 * (exit 4) naming the first port taken and who holds it.
 */
export const checkPortsFree = (mappings: readonly PortMapping[], others: readonly PodNetworkRecord[]): void => {
  for (const m of mappings) {
    const holder = portHolder(m, others)
    if (holder !== undefined) {
      throw new PodctlError('EBADSTATE', `host port ${describeHostPort(m)} is taken: ${holder} holds it`, 'publish another host port, or stop what holds it')
    }
  }
}
