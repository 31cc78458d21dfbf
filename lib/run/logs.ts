/**
 * Reading app logs for `podctl logs`: each line with the time it arrived
 * (from the log's times file, lib/run/log-writer.ts), the whole log or its
 * last N lines, and following it as it grows (and rotates) until the pod
 * is finished.
 */
import fs from 'node:fs'
import type { Pod } from '../pod/pod.js'
import { POLL_INTERVAL_MS, sleep } from '../poll.js'
import { readOwnFile } from '../fs/read.js'
import { DEFAULT_LOG_KEEP, DEFAULT_LOG_MAX_BYTES, logFiles, logPath, TIME_RECORD_BYTES, TIMES_CAP_FACTOR, timesPath } from './log-writer.js'

/** A log file is rotated at DEFAULT_LOG_MAX_BYTES; one that is much larger is not podctl's. */
const MAX_LOG_READ_BYTES = 4 * DEFAULT_LOG_MAX_BYTES

/** One line of a log. */
export interface LogLine {
  /** The line, with its newline if it has one (the last line of a log may not). */
  text: string
  /** When its first byte arrived (ms since the epoch); undefined where that was lost (a times record a full disk refused). */
  time?: number
}

/** The records of a log file's times file (offset, time, offset, time, ...), or undefined if it has none. */
const readTimes = (logFile: string): Float64Array | undefined => {
  const f = readOwnFile(timesPath(logFile), TIMES_CAP_FACTOR * MAX_LOG_READ_BYTES)
  if (!('bytes' in f)) return undefined
  const n = Math.floor(f.bytes.length / TIME_RECORD_BYTES) // a record cut short by a crash is left out
  const out = new Float64Array(n * 2)
  for (let i = 0; i < n * 2; i++) out[i] = f.bytes.readDoubleLE(i * 8)
  return out
}

/** The time of the byte at `offset`: that of the last record at or before it. */
const timeAt = (times: Float64Array | undefined, offset: number): number | undefined => {
  if (times === undefined || times.length === 0 || times[0]! > offset) return undefined
  let lo = 0
  let hi = times.length / 2 - 1
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1
    if (times[mid * 2]! <= offset) lo = mid
    else hi = mid - 1
  }
  return times[lo * 2 + 1]
}

/** The lines of `bytes`, which start at `start` in a log file whose times are `times`. */
const splitLines = (bytes: Buffer, start: number, times: Float64Array | undefined): LogLine[] => {
  const lines: LogLine[] = []
  let from = 0
  while (from < bytes.length) {
    const nl = bytes.indexOf(10, from)
    const end = nl < 0 ? bytes.length : nl + 1
    const time = timeAt(times, start + from)
    lines.push({ text: bytes.toString('utf8', from, end), ...(time === undefined ? {} : { time }) })
    from = end
  }
  return lines
}

/** Where an app's log ended at one moment: the file (its inode; 0 for none yet) and its size. */
export interface LogEnd {
  app: string
  ino: number
  offset: number
}

/**
 * Where each app's log ends now. `logs --follow` takes them before it
 * reads the history, reads the history up to them and follows from them:
 * a line written in between is then neither lost nor printed twice.
 */
export const logEnds = (pod: Pod, apps: string[]): LogEnd[] =>
  apps.map((app) => {
    const st = statOrUndefined(logPath(pod.path, app))
    return { app, ino: st?.ino ?? 0, offset: st?.size ?? 0 }
  })

/**
 * An app's whole log as lines, oldest rotation first. With `upTo`, only
 * what was written before that end, whole lines only: `upTo.offset` moves
 * back to the start of an unfinished last line, which the follow then
 * reads whole.
 */
export const readAppLogLines = (pod: Pod, app: string, upTo?: LogEnd): LogLine[] => {
  const out: LogLine[] = []
  if (upTo?.ino === 0) return out // no log yet then: all of it is the follow's
  for (const file of logFiles(pod.path, app)) {
    const atEnd = upTo !== undefined && statOrUndefined(file)?.ino === upTo.ino
    const f = readOwnFile(file, MAX_LOG_READ_BYTES)
    if ('bytes' in f) {
      let bytes = f.bytes
      if (atEnd) {
        bytes = bytes.subarray(0, upTo.offset)
        upTo.offset = bytes.lastIndexOf(10) + 1
        bytes = bytes.subarray(0, upTo.offset)
      }
      out.push(...splitLines(bytes, 0, readTimes(file)))
    }
    if (atEnd) break // newer files came after that end
  }
  return out
}

/** An app's whole log as text, oldest rotation first. */
export const readAppLog = (pod: Pod, app: string): string =>
  readAppLogLines(pod, app)
    .map((l) => l.text)
    .join('')

export interface LineFormat {
  /** Prefix each line with `[app] `. */
  app?: string
  /** Prefix each line with the time it arrived (RFC 3339, UTC, ms). */
  timestamps?: boolean
}

/** A line as `logs` prints it; a line without a newline keeps none. */
export const formatLine = (line: LogLine, fmt: LineFormat): string => {
  let prefix = fmt.app === undefined ? '' : `[${fmt.app}] `
  if (fmt.timestamps) prefix += `${line.time === undefined ? '-' : new Date(line.time).toISOString()} `
  return prefix + line.text
}

/** The lines that arrived at `since` or later (lines of unknown time are kept), then the last `tail` of them. */
export const selectLines = (lines: LogLine[], opts: { since?: number; tail?: number }): LogLine[] => {
  const since = opts.since
  const recent = since === undefined ? lines : lines.filter((l) => l.time === undefined || l.time >= since)
  if (opts.tail === undefined) return recent
  return opts.tail <= 0 ? [] : recent.slice(-opts.tail)
}

interface Cursor {
  app: string
  ino: number
  offset: number
  /** The bytes of a line not yet complete. */
  partial: Buffer
  /** The time of the partial line's first byte. */
  partialTime: number | undefined
}

const statOrUndefined = (p: string): fs.Stats | undefined => fs.statSync(p, { throwIfNoEntry: false })

/** The rotated files of a log (`.1`, `.2`, ...), newest first, with their inodes. */
const rotatedFiles = (log: string): { file: string; ino: number }[] => {
  const out: { file: string; ino: number }[] = []
  for (let i = 1; i <= DEFAULT_LOG_KEEP; i++) {
    const st = statOrUndefined(`${log}.${i}`)
    if (!st) break
    out.push({ file: `${log}.${i}`, ino: st.ino })
  }
  return out
}

/**
 * Follows the logs of `apps` from their current ends (or from `ends`
 * taken earlier: logEnds), calling `emit` with
 * complete lines, until the pod is no longer running (then drains once
 * more, and emits unfinished last lines) or the signal aborts.
 */
export const followLogs = async (pod: Pod, from: string[] | LogEnd[], emit: (app: string, line: LogLine) => void, signal?: AbortSignal): Promise<void> => {
  const ends = from.map((x) => (typeof x === 'string' ? logEnds(pod, [x])[0]! : x))
  const cursors: Cursor[] = ends.map((e) => ({ ...e, partial: Buffer.alloc(0), partialTime: undefined }))
  const drain = (): void => {
    for (const c of cursors) {
      const p = logPath(pod.path, c.app)
      const st = statOrUndefined(p)
      if (!st) continue
      if (st.ino !== c.ino) {
        // Rotated, maybe more than once since the last look: finish the
        // file we were reading (now .1, .2, ...), read every newer
        // rotation whole, then start the current file.
        const rotated = rotatedFiles(p) // newest first
        const at = rotated.findIndex((r) => r.ino === c.ino)
        if (at >= 0) readFrom(c, rotated[at]!.file)
        for (let i = (at >= 0 ? at : rotated.length) - 1; i >= 0; i--) {
          c.offset = 0
          readFrom(c, rotated[i]!.file)
        }
        c.ino = st.ino
        c.offset = 0
      }
      readFrom(c, p)
    }
  }
  const readFrom = (c: Cursor, file: string): void => {
    let fd: number
    try {
      fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW)
    } catch {
      return
    }
    let buf: Buffer
    const start = c.offset
    try {
      const size = fs.fstatSync(fd).size
      if (size <= c.offset) return
      buf = Buffer.alloc(size - c.offset)
      fs.readSync(fd, buf, 0, buf.length, c.offset)
      c.offset = size
    } finally {
      fs.closeSync(fd)
    }
    // Written before its output, the times file has a record for all that was read.
    const times = readTimes(file)
    const cut = buf.lastIndexOf(10) + 1
    const lines = splitLines(buf.subarray(0, cut), start, times)
    if (c.partial.length > 0 && cut > 0) {
      // The unfinished line is finished: it keeps the time of its first byte.
      const end = buf.indexOf(10) + 1
      lines[0] = { text: Buffer.concat([c.partial, buf.subarray(0, end)]).toString('utf8'), ...(c.partialTime === undefined ? {} : { time: c.partialTime }) }
      c.partial = Buffer.alloc(0)
    }
    if (cut < buf.length) {
      if (c.partial.length === 0) c.partialTime = timeAt(times, start + cut)
      c.partial = Buffer.concat([c.partial, buf.subarray(cut)])
    }
    for (const l of lines) emit(c.app, l)
  }
  for (;;) {
    drain()
    if (signal?.aborted) return
    pod.refresh()
    if (pod.state !== 'running') {
      drain()
      for (const c of cursors) if (c.partial.length > 0) emit(c.app, { text: `${c.partial.toString('utf8')}\n`, ...(c.partialTime === undefined ? {} : { time: c.partialTime }) })
      return
    }
    await sleep(POLL_INTERVAL_MS)
  }
}
