/**
 * Addresses and subnets, IPv4 and IPv6, as numbers: what network create
 * checks (a subnet, a gateway inside it, a clash with another subnet or a
 * route) and what it picks (the default network's /24). Node's net module
 * says what is an address; the arithmetic is BigInt's. Pure.
 */
import net from 'node:net'

export type Family = 4 | 6

export interface Cidr {
  family: Family
  /** The network address (host bits cleared). */
  base: bigint
  prefix: number
}

const BITS: Record<Family, number> = { 4: 32, 6: 128 }

/** An address as a number, or undefined if `text` is not an IPv4 or IPv6 address. */
export const parseIp = (text: string): { family: Family; value: bigint } | undefined => {
  const family = net.isIP(text)
  if (family === 4) return { family, value: text.split('.').reduce((n, part) => (n << 8n) | BigInt(Number(part)), 0n) }
  if (family !== 6) return undefined
  // An embedded IPv4 tail (::ffff:1.2.3.4) becomes two groups.
  let t = text
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(t)
  if (v4) {
    const n = parseIp(v4[1]!)!.value
    t = `${t.slice(0, v4.index)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`
  }
  const [head, tail] = t.includes('::') ? t.split('::') : [t, undefined]
  const hs = head === '' ? [] : head!.split(':')
  const ts = tail === undefined || tail === '' ? [] : tail.split(':')
  const groups = tail === undefined ? hs : [...hs, ...Array<string>(8 - hs.length - ts.length).fill('0'), ...ts]
  return { family, value: groups.reduce((n, g) => (n << 16n) | BigInt(parseInt(g, 16)), 0n) }
}

/** An address as text: dotted for IPv4, RFC 5952's shortest form for IPv6. */
export const formatIp = (family: Family, value: bigint): string => {
  if (family === 4) return [24n, 16n, 8n, 0n].map((s) => ((value >> s) & 0xffn).toString()).join('.')
  const groups = Array.from({ length: 8 }, (_, i) => Number((value >> BigInt(112 - 16 * i)) & 0xffffn))
  // The longest run of two or more zero groups becomes "::".
  let best = -1
  let bestLen = 1
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < 8 && groups[j] === 0) j++
    if (j - i > bestLen) {
      best = i
      bestLen = j - i
    }
    i = j
  }
  const hex = groups.map((g) => g.toString(16))
  if (best < 0) return hex.join(':')
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`
}

const mask = (family: Family, prefix: number): bigint => {
  const bits = BigInt(BITS[family])
  return ((1n << bits) - 1n) ^ ((1n << (bits - BigInt(prefix))) - 1n)
}

/** `ADDR/PREFIX` as a subnet, host bits cleared; undefined if it is not one. */
export const parseCidr = (text: string): Cidr | undefined => {
  const m = /^([^/]+)\/(\d{1,3})$/.exec(text)
  if (!m) return undefined
  const ip = parseIp(m[1]!)
  const prefix = Number(m[2])
  if (ip === undefined || prefix > BITS[ip.family]) return undefined
  return { family: ip.family, base: ip.value & mask(ip.family, prefix), prefix }
}

export const formatCidr = (c: Cidr): string => `${formatIp(c.family, c.base)}/${c.prefix}`

/** Whether `c` holds the address `value` of its family. */
export const contains = (c: Cidr, family: Family, value: bigint): boolean => family === c.family && (value & mask(c.family, c.prefix)) === c.base

/** Whether two subnets share an address: one holds the other's network address. */
export const overlaps = (a: Cidr, b: Cidr): boolean => a.family === b.family && (contains(a, b.family, b.base) || contains(b, a.family, a.base))

/** How many addresses the subnet spans. */
export const size = (c: Cidr): bigint => 1n << BigInt(BITS[c.family] - c.prefix)

/** The n-th address of the subnet (0 is the network address). */
export const nth = (c: Cidr, n: bigint): string => formatIp(c.family, c.base + n)

/** The address of the broadcast of an IPv4 subnet (its last); IPv6 has none, but its last is left out all the same. */
export const last = (c: Cidr): bigint => c.base + size(c) - 1n
