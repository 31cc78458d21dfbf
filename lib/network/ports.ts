/**
 * Published ports (their rules, `-p` and the manifest's `ports`, are
 * lib/pod/network-rules.ts's, re-exported here), and who holds a host port already:
 * another pod of the data dir that publishes it (its record), or a process
 * of the host that listens on it (/proc/net/{tcp,tcp6,udp,udp6}, and the
 * process whose descriptor is that socket, from /proc/PID/fd). CNI's
 * portmap DNATs the port and binds nothing, so nothing else would notice.
 */
import fs from 'node:fs'
import os from 'node:os'
import { PodctlError, shortId } from '../errors.js'
import { isObj } from '../pod/manifest.js'
import { parseIp } from './cidr.js'
import { clashes, describeHostPort, normalizePort, type Protocol, type PublishedPort } from '../pod/network-rules.js'
import type { PodNetworkRecord } from './records.js'

// The rules of a published port (parsing -p, the manifest's defaults, what
// clashes) are the pod room's, so that the manifest's checks and the flags
// of prepare and run read a port as attach does.
export { clashes, describeHostPort, normalizePort, parsePublish, type Protocol } from '../pod/network-rules.js'

/** portmap's `portMappings` entry (CNI's convention), as the manifest writes it too. */
export type PortMapping = PublishedPort

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

/** A host port someone holds: EBADSTATE (exit 4), naming the holder. */
export const portTaken = (m: PortMapping, holder: string): PodctlError =>
  new PodctlError('EBADSTATE', `host port ${describeHostPort(m)} is taken: ${holder} holds it`, 'publish another host port, or stop what holds it')

/**
 * Checks that nobody holds the host ports a pod asks for; EBADSTATE
 * (exit 4) naming the first port taken and who holds it.
 */
export const checkPortsFree = (mappings: readonly PortMapping[], others: readonly PodNetworkRecord[]): void => {
  for (const m of mappings) {
    const holder = portHolder(m, others)
    if (holder !== undefined) throw portTaken(m, holder)
  }
}
