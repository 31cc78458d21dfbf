/** Byte counts as users type them: 1048576, 512K, 10M, 2G, 1Gi (K = 1000, Ki = 1024). */
import { PodctlError } from './errors.js'

const UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1e3,
  m: 1e6,
  g: 1e9,
  t: 1e12,
  ki: 1024,
  mi: 1024 ** 2,
  gi: 1024 ** 3,
  ti: 1024 ** 4,
}

/** Parses a byte count; EUSAGE naming `what` when it is not one. */
export const parseBytes = (text: string, what = 'size'): number => {
  const m = /^(\d+)\s*([a-zA-Z]*)$/.exec(text.trim())
  // "KB", "KiB" and "K" mean the same; a lone "B" is bytes.
  const suffix = m ? m[2]!.toLowerCase() : ''
  const unit = m ? UNITS[suffix.length > 1 && suffix.endsWith('b') ? suffix.slice(0, -1) : suffix] : undefined
  const n = m && unit !== undefined ? Number(m[1]) * unit : NaN
  if (!Number.isSafeInteger(n)) {
    throw new PodctlError('EUSAGE', `invalid ${what} ${JSON.stringify(text)}: expected a number of bytes, e.g. 1048576, 512K, 10M, 1Gi`)
  }
  return n
}
