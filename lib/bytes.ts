/**
 * Sizes as users type them, the one reader of every size podctl takes
 * (memory limits, volume sizes and size limits, --max-size): podman's
 * units (go-units' RAMInBytes, which `podman run --memory` uses) plus the
 * Ki, Mi, Gi of Kubernetes. Every unit is a power of 1024, whatever its
 * case and whether a `b`, `i` or `ib` follows it: 64m, 64M, 64mb, 64MB,
 * 64Mi and 64MiB are all 67108864 bytes. Documentation/commands.md, Sizes.
 */
import { PodctlError } from './errors.js'

const UNITS: Record<string, number> = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4, p: 1024 ** 5 }

/** A number (a fraction too, as podman takes `1.5g`), at most one space, then a unit letter with an optional i and b, or a lone b. */
const SIZE_RE = /^(\d+(?:\.\d+)?) ?(?:([kmgtp])i?b?|b)?$/i

/** A size's whole number of bytes (a fraction is cut, as podman cuts it), or undefined when `text` is not a size. */
export const sizeBytes = (text: string): number | undefined => {
  const m = SIZE_RE.exec(text.trim())
  if (!m) return undefined
  const n = Math.floor(Number(m[1]) * UNITS[(m[2] ?? '').toLowerCase()]!)
  return Number.isSafeInteger(n) ? n : undefined
}

/** What every size error says a size is. */
export const SIZE_UNITS = 'a number of bytes, or with a unit: 512k, 64m, 1g, 1Gi (k, m, g, t: 1024, 1024², 1024³, 1024⁴ bytes, any case, with or without i and b)'

/** Parses a size; EUSAGE naming `what` when it is not one. */
export const parseBytes = (text: string, what = 'size'): number => {
  const n = sizeBytes(text)
  if (n === undefined) throw new PodctlError('EUSAGE', `invalid ${what} ${JSON.stringify(text)}: expected ${SIZE_UNITS}`)
  return n
}
