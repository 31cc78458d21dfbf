/**
 * Go's time.ParseDuration syntax ("300ms", "1h30m", "90s", "0"), which rkt
 * users type. Returns milliseconds; sub-millisecond units are accepted and
 * rounded.
 */
import { PodctlError } from './errors.js'

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  'µs': 1e-3,
  'μs': 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
}

const PART_RE = /^(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/

/** Parses a Go duration; throws EUSAGE naming `what` when it is not one. */
export const parseDuration = (text: string, what = 'duration'): number => {
  const bad = (why: string): PodctlError =>
    new PodctlError('EUSAGE', `invalid ${what} ${JSON.stringify(text)}: ${why}`, 'durations look like 90s, 30m, 1h30m or 0s')
  // No trimming: Go refuses " 5s", and so does every other tool that reads these durations.
  let s = text
  let sign = 1
  if (s.startsWith('-') || s.startsWith('+')) {
    if (s[0] === '-') sign = -1
    s = s.slice(1)
  }
  // As in Go, a bare zero needs no unit, with or without a sign.
  if (s === '0') return 0
  if (s === '') throw bad('it is empty')
  let total = 0
  while (s !== '') {
    const m = PART_RE.exec(s)
    if (!m) {
      throw bad(/^\d+(\.\d*)?$/.test(s) ? 'a unit is missing (ns, us, ms, s, m, h)' : 'not a duration')
    }
    total += Number(m[1]) * UNIT_MS[m[2]!]!
    s = s.slice(m[0].length)
  }
  if (!Number.isFinite(total)) throw bad('too large')
  return Math.round(sign * total) || 0 // never -0
}

/** Parses a duration that must not be negative. */
export const parseNonNegativeDuration = (text: string, what = 'duration'): number => {
  const ms = parseDuration(text, what)
  if (ms < 0) {
    throw new PodctlError('EUSAGE', `invalid ${what} ${JSON.stringify(text)}: must not be negative`)
  }
  return ms
}

/** Formats milliseconds in Go's style (1h30m0s, 90ms). */
export const formatDuration = (ms: number): string => {
  if (ms === 0) return '0s'
  if (ms < 1000) return `${ms}ms`
  let rest = Math.round(ms / 1000)
  const h = Math.floor(rest / 3600)
  rest -= h * 3600
  const m = Math.floor(rest / 60)
  const s = rest - m * 60
  return `${h ? `${h}h` : ''}${h || m ? `${m}m` : ''}${s}s`
}
