/**
 * What the host's network looks like, read from /proc and /sys (no
 * program run): its routes, its links, the MTU of the way out. What
 * network create checks a subnet and a bridge name against, and what a
 * test checks after a pod is gone.
 */
import fs from 'node:fs'
import os from 'node:os'
import { formatCidr, type Cidr } from './cidr.js'

/** A route of the host's main table: where to, through which device. */
export interface HostRoute {
  dev: string
  cidr: Cidr
}

const popcount = (n: number): number => {
  let c = 0
  for (let v = n >>> 0; v !== 0; v >>>= 1) c += v & 1
  return c
}

const readText = (file: string): string => {
  try {
    return fs.readFileSync(file, 'latin1')
  } catch {
    return ''
  }
}

/** A 32-bit field of /proc/net/route: the address in memory order, printed as a native number. */
const routeWord = (hex: string): bigint => {
  const n = parseInt(hex, 16) >>> 0
  const b = Buffer.alloc(4)
  if (os.endianness() === 'LE') b.writeUInt32LE(n)
  else b.writeUInt32BE(n)
  return BigInt(b.readUInt32BE())
}

/** The host's IPv4 and IPv6 routes (default routes included: a caller that compares subnets leaves out prefix 0). */
export const hostRoutes = (): HostRoute[] => {
  const out: HostRoute[] = []
  for (const line of readText('/proc/net/route').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/)
    if (f.length < 8) continue
    const prefix = popcount(Number(routeWord(f[7]!)))
    out.push({ dev: f[0]!, cidr: { family: 4, base: routeWord(f[1]!), prefix } })
  }
  for (const line of readText('/proc/net/ipv6_route').split('\n')) {
    const f = line.trim().split(/\s+/)
    if (f.length < 10) continue
    const dev = f[9]!
    if (dev === 'lo') continue // the kernel's local and multicast entries
    out.push({ dev, cidr: { family: 6, base: BigInt(`0x${f[0]}`), prefix: parseInt(f[1]!, 16) } })
  }
  return out
}

/** A route as users read it: `10.90.0.0/24 dev podctl3fa2b1c0`. */
export const describeRoute = (r: HostRoute): string => `${formatCidr(r.cidr)} dev ${r.dev}`

/** Whether the host has a network link of that name. */
export const linkExists = (name: string): boolean => fs.existsSync(`/sys/class/net/${name}`)

/** A link's MTU, or undefined if there is no such link. */
export const linkMtu = (name: string): number | undefined => {
  const t = readText(`/sys/class/net/${name}/mtu`).trim()
  return t === '' ? undefined : Number(t)
}

/** The links enslaved to a bridge (a pod's veth is one while it is attached). */
export const bridgePorts = (bridge: string): string[] => {
  try {
    return fs.readdirSync(`/sys/class/net/${bridge}/brif`)
  } catch {
    return []
  }
}

/** The device of the host's IPv4 default route, if it has one. */
export const defaultRouteDevice = (): string | undefined => hostRoutes().find((r) => r.cidr.family === 4 && r.cidr.prefix === 0)?.dev
