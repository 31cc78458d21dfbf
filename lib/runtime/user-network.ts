/**
 * The network of a rootless pod (CONTRACT §14), as rootless podman gives
 * one: slirp4netns, a user-mode TCP/IP stack, attached to the pod's
 * network namespace (its infra's) through a tap device, with the host
 * reached through it as through a NAT, published ports forwarded by its
 * API, and no way to the host's loopback (`--disable-host-loopback`).
 * No root, no CNI, no address of a host network. (`--enable-sandbox`,
 * which podman adds, needs slirp4netns to be root in the pod's user
 * namespace; podctl starts it as the user, who joins that namespace.)
 *
 * It ends with its supervisor however the supervisor ends: fd 3 is its
 * exit fd, one end of a socket pair only the supervisor holds the other
 * end of (slirp4netns exits at its end of file), and its namespace goes
 * with the infra anyway. Nothing of it outlives the pod.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { PodctlError, shortId } from '../errors.js'
import { hostnameFile, hostsFile, hostHosts, resolvConf, writeEtcFiles, type ResolvOptions } from '../network/etc-files.js'
import { describeHostPort, normalizePort, portHolder, portTaken, type PortMapping } from '../network/ports.js'
import type { Attachment, HostEntry } from '../network/records.js'
import { DEFAULT_NETWORK } from '../pod/manifest.js'
import { findProgram } from '../proc/executable.js'

/** slirp4netns's own addresses in its default 10.0.2.0/24: the pod's, the host's (its gateway) and its DNS forwarder. */
export const SLIRP_POD_IP = '10.0.2.100'
const SLIRP_GATEWAY = '10.0.2.2'
const SLIRP_DNS = '10.0.2.3'
const TAP = 'tap0'

/** How long slirp4netns may take to bring the pod's interface up. */
const READY_MS = 10_000

const INSTALL_HINT = 'install it: apt-get install slirp4netns (Fedora: dnf install slirp4netns), or run the pod with --network none'

export interface UserNetworkInput {
  podDir: string
  uuid: string
  hostname: string
  names: readonly string[]
  infraPid: number
  ports: readonly PortMapping[]
  addHosts: readonly HostEntry[]
  resolv: ResolvOptions
  etcDir: string
}

/** A rootless pod on its user-mode network. */
export interface UserNetwork {
  attachments: Attachment[]
  leave(): Promise<void>
}

/** Why a user that is not root cannot open the tun device here, or undefined. */
const tunProblem = (): string | undefined => {
  try {
    fs.accessSync('/dev/net/tun', fs.constants.R_OK | fs.constants.W_OK)
    return undefined
  } catch {
    return '/dev/net/tun cannot be opened by this user (a host without udev leaves it 0600; Debian\'s udev makes it 0666: chmod 0666 /dev/net/tun)'
  }
}

/** One call of slirp4netns's API (a JSON request on its socket, a JSON answer). */
const apiCall = (socket: string, request: unknown): Promise<{ return?: unknown; error?: { desc?: string } }> =>
  new Promise((resolve, reject) => {
    const c = net.connect(socket)
    let text = ''
    c.setEncoding('utf8')
    c.on('data', (d: string) => {
      text += d
    })
    c.on('error', reject)
    c.on('end', () => {
      try {
        resolve(JSON.parse(text) as { return?: unknown; error?: { desc?: string } })
      } catch (er) {
        reject(er)
      }
    })
    c.end(JSON.stringify(request))
  })

/** Waits for slirp4netns to say it is ready (its ready fd), or to fail. */
const ready = (child: ChildProcess, stderr: () => string): Promise<void> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`it was not ready within ${READY_MS / 1000}s`)), READY_MS)
    const done = (er?: Error): void => {
      clearTimeout(timer)
      if (er) reject(er)
      else resolve()
    }
    child.stdio[4]?.once('data', () => done())
    child.once('error', (er) => done(er))
    child.once('exit', (code, signal) => done(new Error(stderr().trim().split('\n').pop() || `it exited (${code ?? signal})`)))
  })

/** The host's slirp4netns; EFAILED naming the package when there is none. */
export const userNetworkProgram = (): string => {
  const program = findProgram('slirp4netns')
  if (program === undefined) throw new PodctlError('EFAILED', 'a rootless pod on a network needs slirp4netns, and this host has none', INSTALL_HINT)
  return program
}

/** The lowest port a user that is not root may bind (the kernel's default: 1024). */
const unprivilegedPortStart = (): number => {
  try {
    const n = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_unprivileged_port_start', 'utf8').trim())
    return Number.isSafeInteger(n) ? n : 1024
  } catch {
    return 1024
  }
}

/**
 * Why slirp4netns could not bind a host port, in the words of a root
 * pod's: a port below the unprivileged start is root's (EFAILED, as
 * rootless podman refuses it); a port held names its holder (EBADSTATE,
 * exit 4); else what slirp4netns said.
 */
const hostPortRefused = (p: PortMapping, said: string): PodctlError => {
  const start = unprivilegedPortStart()
  if (p.hostPort < start) {
    return new PodctlError('EFAILED', `host port ${describeHostPort(p)} cannot be published by a user that is not root: ports below ${start} are root's (net.ipv4.ip_unprivileged_port_start)`, `publish a port of ${start} or above, or let users bind it: sysctl -w net.ipv4.ip_unprivileged_port_start=${p.hostPort}`)
  }
  const holder = portHolder(p, [])
  if (holder !== undefined) return portTaken(p, holder)
  return new PodctlError('EBADSTATE', `host port ${describeHostPort(p)} cannot be published: ${said}`, 'choose another host port, or stop what holds it')
}

/**
 * Attaches slirp4netns to the pod's namespace, forwards its ports and
 * writes its /etc files. EFAILED when slirp4netns is missing or cannot
 * start, EBADSTATE (4) for a host port it cannot bind (taken).
 */
export const joinUserNetwork = async (input: UserNetworkInput): Promise<UserNetwork> => {
  const program = userNetworkProgram()
  const tun = tunProblem()
  if (tun !== undefined) throw new PodctlError('EFAILED', `pod ${shortId(input.uuid)} cannot have a user-mode network: ${tun}`, 'or run the pod with --network none')
  const socket = path.join(input.podDir, 'slirp4netns.sock')
  fs.rmSync(socket, { force: true })
  const ns = `/proc/${input.infraPid}`
  const child = spawn(
    program,
    ['--configure', '--mtu=65520', '--disable-host-loopback', '--enable-seccomp', '--exit-fd=3', '--ready-fd=4', `--api-socket=${socket}`, '--netns-type=path', `--userns-path=${ns}/ns/user`, `${ns}/ns/net`, TAP],
    { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'], detached: true },
  )
  child.stdio[3]?.on('error', () => {})
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (s: string) => {
    if (stderr.length < 4000) stderr += s
  })
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()))
  const leave = async (): Promise<void> => {
    ;(child.stdio[3] as { destroy?: () => void } | null)?.destroy?.()
    await exited
  }
  try {
    await ready(child, () => stderr)
  } catch (er) {
    child.kill('SIGKILL')
    await leave()
    throw new PodctlError('EFAILED', `slirp4netns could not give pod ${shortId(input.uuid)} its network: ${(er as Error).message}`, INSTALL_HINT)
  }
  try {
    for (const p of input.ports.map(normalizePort)) {
      const r = await apiCall(socket, { execute: 'add_hostfwd', arguments: { proto: p.protocol, host_addr: p.hostIP === '' ? '0.0.0.0' : p.hostIP, host_port: p.hostPort, guest_port: p.containerPort } })
      if (r.error !== undefined) throw hostPortRefused(p, r.error.desc ?? 'slirp4netns refused it')
    }
    writeEtcFiles(input.etcDir, {
      hosts: hostsFile({ hostname: input.hostname, addresses: [SLIRP_POD_IP], names: [...input.names], addHosts: input.addHosts, hostAddress: SLIRP_GATEWAY, base: hostHosts() }),
      'resolv.conf': resolvConf(`nameserver ${SLIRP_DNS}\n`, input.resolv),
      hostname: hostnameFile(input.hostname),
    })
  } catch (er) {
    await leave()
    throw er
  }
  return { attachments: [{ name: DEFAULT_NETWORK, ip: SLIRP_POD_IP, ip6: null, iface: TAP, mac: null }], leave }
}
