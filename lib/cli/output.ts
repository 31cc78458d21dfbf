/**
 * Output helpers: tables, JSON, times, progress. Results go to stdout;
 * diagnostics and progress go to stderr.
 */
import { isatty } from 'node:tty'
import { styleText } from 'node:util'
import { oneLine } from '../errors.js'
import { stdout } from './stdout.js'

export type Format = 'table' | 'json' | 'json-pretty'

export interface Io {
  out: (s: string | Uint8Array) => void
  err: (s: string | Uint8Array) => void
  /** Whether stderr is a terminal (progress is shown only then). */
  errIsTTY: boolean
  /** Whether stdout gets colour (states in list and status). */
  colour?: boolean
}

/**
 * Colour on stdout: never with NO_COLOR (no-color.org), always with
 * FORCE_COLOR (unless it is 0 or false), else when stdout is a terminal.
 */
export const wantsColour = (env: NodeJS.ProcessEnv, stdoutIsTTY: boolean): boolean => {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false
  const force = env.FORCE_COLOR
  if (force !== undefined) return force !== '0' && force !== 'false'
  return stdoutIsTTY
}

export const processIo = (): Io => ({
  out: (s) => void stdout().write(s),
  err: (s) => void process.stderr.write(s),
  // isatty, not process.stderr.isTTY: creating the stream costs start-up time.
  errIsTTY: isatty(2),
  colour: wantsColour(process.env, isatty(1)),
})

type Style = Parameters<typeof styleText>[0]
const STATE_STYLES: Record<string, Style> = {
  running: 'green',
  prepared: 'cyan',
  preparing: 'cyan',
  embryo: 'yellow',
  'aborted prepare': 'yellow',
  exited: 'blue',
  'exited garbage': 'gray',
  garbage: 'gray',
  deleting: 'gray',
  'exited deleting': 'gray',
  unknown: 'red',
}

/** A pod state as text, coloured when `colour` (podctl decides when, not the stream: validateStream off). */
export const styleState = (text: string, colour: boolean | undefined, state = text.trim()): string => {
  const style = STATE_STYLES[state]
  return colour && style ? styleText(style, text, { validateStream: false }) : text
}

/** The options of a command that prints data: --format's choice. */
export interface FormatOptions {
  format: string
}

export const isJson = (f: Format | string | undefined): boolean => f === 'json' || f === 'json-pretty'

export const toJson = (value: unknown, format: Format | string | undefined): string =>
  `${format === 'json-pretty' ? JSON.stringify(value, null, 2) : JSON.stringify(value)}\n`

/**
 * Left-aligned columns separated by three spaces, like rkt's tabwriter
 * output. Each cell is one line, its control characters escaped: a value
 * from outside (a name in etcd, a provisioner's message) cannot add a row
 * or drive the terminal.
 */
export const formatTable = (header: string[] | undefined, rows: string[][], style?: (column: number, cell: string) => string): string => {
  const all = (header ? [header, ...rows] : rows).map((r) => r.map(oneLine))
  if (all.length === 0) return ''
  const widths = all[0]!.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)))
  // Styled after padding, so that escape sequences do not count as width.
  const cell = (c: string, i: number, last: boolean, body: boolean): string => {
    const padded = last ? c : c.padEnd(widths[i]!)
    return body && style ? style(i, padded) : padded
  }
  return all
    .map((r, n) => r.map((c, i) => cell(c, i, i === r.length - 1, !(header && n === 0))).join('   ').trimEnd())
    .join('\n')
    .concat('\n')
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB']

/** A byte count as a person reads it, as podman prints sizes: "1.5MiB", "512B". */
export const humanBytes = (n: number): string => {
  let v = n
  let u = 0
  while (v >= 1024 && u < BYTE_UNITS.length - 1) {
    v /= 1024
    u++
  }
  return `${u === 0 ? v : v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0)}${BYTE_UNITS[u]}`
}

/** `key=value` lines as `status` prints them: each one line, its control characters escaped. */
export const keyValueLines = (lines: string[]): string => `${lines.map(oneLine).join('\n')}\n`

const UNITS: [number, string][] = [
  [365 * 24 * 3600, 'year'],
  [30 * 24 * 3600, 'month'],
  [7 * 24 * 3600, 'week'],
  [24 * 3600, 'day'],
  [3600, 'hour'],
  [60, 'minute'],
  [1, 'second'],
]

/** "4 minutes ago", "just now", "in 3 seconds" (clock skew). */
export const relativeTime = (iso: string | null, now = Date.now()): string => {
  if (!iso) return '-'
  const t = Date.parse(iso)
  if (Number.isNaN(t)) return '-'
  const secs = Math.round((now - t) / 1000)
  const abs = Math.abs(secs)
  if (abs < 1) return 'just now'
  for (const [size, name] of UNITS) {
    if (abs >= size) {
      const n = Math.floor(abs / size)
      const word = `${n} ${name}${n === 1 ? '' : 's'}`
      return secs >= 0 ? `${word} ago` : `in ${word}`
    }
  }
  return 'just now'
}

/** Back to the start of the line, and erase it. */
const ERASE_LINE = '\r\u001b[K'

/**
 * A progress line on stderr for long operations, shown only when stderr
 * is a terminal, for at least `threshold` items, redrawn at most every
 * 100 ms. It is erased before anything else is printed (use `io`, which
 * does that, for the command's output), so that stdout lines on the same
 * terminal never run into it, and it is gone at the end.
 */
/** `parent`, with `clear` called before anything is printed (a line on stderr that output must not run into). */
const clearingFirst = (parent: Io, clear: () => void): Io => ({
  ...parent,
  out: (s) => {
    clear()
    parent.out(s)
  },
  err: (s) => {
    clear()
    parent.err(s)
  },
})

export const progressReporter = (parent: Io, label: string, enabled: boolean, threshold = 50) => {
  let last = 0
  let shown = false
  const clear = (): void => {
    if (shown) parent.err(ERASE_LINE)
    shown = false
  }
  const report = (done: number, total: number): void => {
    if (!enabled || !parent.errIsTTY || total < threshold) return
    const now = Date.now()
    if (done < total && now - last < 100) return
    last = now
    parent.err(`${ERASE_LINE}${label}: ${done}/${total} pods`)
    shown = true
  }
  const io = clearingFirst(parent, clear)
  return { report, finish: clear, io }
}

const SPINNER = ['|', '/', '-', '\\']

/**
 * One line on a terminal's stderr while a command waits with nothing to
 * print (status --wait, stop, app start): what it waits for, a spinner and
 * the seconds so far, redrawn four times a second and erased before any
 * other output and at the end. Nothing when stderr is not a terminal.
 */
export const waitingLine = (parent: Io) => {
  let text: string | undefined
  let shown = false
  let frame = 0
  let timer: NodeJS.Timeout | undefined
  const started = Date.now()
  const clear = (): void => {
    if (shown) parent.err(ERASE_LINE)
    shown = false
  }
  const draw = (): void => {
    if (text === undefined) return
    parent.err(`${ERASE_LINE}${SPINNER[frame++ % SPINNER.length]} ${text} (${Math.floor((Date.now() - started) / 1000)}s)`)
    shown = true
  }
  /** Shows `what` from now on. */
  const set = (what: string): void => {
    if (!parent.errIsTTY) return
    text = what
    timer ??= setInterval(draw, 250).unref()
    draw()
  }
  const finish = (): void => {
    if (timer !== undefined) clearInterval(timer)
    timer = undefined
    text = undefined
    clear()
  }
  const io = clearingFirst(parent, clear)
  return { set, finish, io }
}

/** Whether a table gets its header line: rkt's --no-legend drops it (--no-legacy, podctl's first spelling, still does). */
export interface LegendOptions {
  legend?: boolean
  legacy?: boolean
}
export const wantsHeader = (o: LegendOptions): boolean => o.legend !== false && o.legacy !== false

/**
 * One line of progress on a terminal's stderr for work measured in bytes
 * (an image import): redrawn at most every 100 ms, erased before any other
 * output and at the end. Nothing when stderr is not a terminal.
 */
export const progressLine = (parent: Io) => {
  let shown = false
  let last = 0
  const clear = (): void => {
    if (shown) parent.err(ERASE_LINE)
    shown = false
  }
  /** Shows `text` unless a line was drawn less than 100 ms ago. */
  const set = (text: string): void => {
    if (!parent.errIsTTY) return
    const now = Date.now()
    if (now - last < 100) return
    last = now
    parent.err(`${ERASE_LINE}${text}`)
    shown = true
  }
  return { set, finish: clear, io: clearingFirst(parent, clear) }
}
