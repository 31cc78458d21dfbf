/**
 * An app's log: its stdout and stderr, interleaved as they arrive, kept in
 * `<pod>/logs/<app>.log`. Size-capped and rotating: when the current file
 * reaches `maxBytes` it becomes `<app>.log.1` (and .1 becomes .2, ...), so
 * a chatty app never holds more than (keep + 1) × maxBytes of disk.
 *
 * Beside each log file, `<file>.times` says when its output arrived (for
 * `logs --timestamps` and `--since`), so that the log itself stays exactly
 * what the app wrote: records of 16 bytes, the file offset where a piece
 * of output starts and the time it was received (two little-endian
 * float64s, ms since the epoch). A record is written for a piece whose
 * millisecond differs from the last record's, so a byte's time is that of
 * the last record at or before it, to the millisecond, and a chatty app
 * adds at most 1,000 records a second.
 */
import fs from 'node:fs'
import path from 'node:path'
import { unlessNotFound } from '../errors.js'
import { resourceReason } from '../fs/errors.js'
import { DIR_MODE, FILE_MODE } from '../fs/modes.js'

export const LOGS_DIR = 'logs'
export const DEFAULT_LOG_MAX_BYTES = 1024 * 1024
export const DEFAULT_LOG_KEEP = 2

export const logPath = (podPath: string, app: string): string => path.join(podPath, LOGS_DIR, `${app}.log`)

/** The times file of a log file (see above). */
export const timesPath = (logFile: string): string => `${logFile}.times`
export const TIME_RECORD_BYTES = 16
/** A times file is rotated with its log, or when it reaches this many times the log's cap. */
export const TIMES_CAP_FACTOR = 4

/** The log files of an app, oldest first (for `podctl logs`). */
export const logFiles = (podPath: string, app: string, keep = DEFAULT_LOG_KEEP): string[] => {
  const base = logPath(podPath, app)
  const files: string[] = []
  for (let i = keep; i >= 1; i--) if (fs.existsSync(`${base}.${i}`)) files.push(`${base}.${i}`)
  if (fs.existsSync(base)) files.push(base)
  return files
}

// Appended to, never through a link planted in the pod's logs/; readable too, for its last byte.
const APPEND = fs.constants.O_RDWR | fs.constants.O_APPEND | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW
const openLog = (file: string): number => fs.openSync(file, APPEND, FILE_MODE)
const openTimes = (logFile: string): number =>
  fs.openSync(timesPath(logFile), fs.constants.O_WRONLY | fs.constants.O_APPEND | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW, FILE_MODE)

const endsWithNewline = (fd: number, size: number): boolean => {
  const b = Buffer.alloc(1)
  return fs.readSync(fd, b, 0, 1, size - 1) === 1 && b[0] === 0x0a
}

const renameIfThere = (from: string, to: string): void => void unlessNotFound(() => fs.renameSync(from, to))

export interface LogWriterOptions {
  maxBytes?: number
  keep?: number
  /**
   * Told when writing fails (a full disk) and output is dropped, and again
   * when writing works again; the app runs on either way.
   */
  onTrouble?: (message: string) => void
}

export class LogWriter {
  readonly path: string
  #fd: number
  #size: number
  #timesFd: number
  #timesSize: number
  /** The time of the last record in the current times file; undefined when it has none yet. */
  #lastRecorded: number | undefined
  readonly #maxBytes: number
  readonly #keep: number
  readonly #onTrouble: ((message: string) => void) | undefined
  /** Output dropped since writing last failed, and why. */
  #dropped = 0
  #failure: string | undefined

  constructor(podPath: string, app: string, opts: LogWriterOptions = {}) {
    fs.mkdirSync(path.join(podPath, LOGS_DIR), { recursive: true, mode: DIR_MODE })
    this.path = logPath(podPath, app)
    this.#maxBytes = opts.maxBytes ?? DEFAULT_LOG_MAX_BYTES
    this.#keep = opts.keep ?? DEFAULT_LOG_KEEP
    this.#onTrouble = opts.onTrouble
    this.#fd = openLog(this.path)
    this.#size = fs.fstatSync(this.#fd).size
    this.#timesFd = openTimes(this.path)
    this.#timesSize = fs.fstatSync(this.#timesFd).size
    // An app started again (a mutable pod) whose last run ended mid-line: its output starts on a line of its own.
    if (this.#size > 0 && !endsWithNewline(this.#fd, this.#size)) this.write(Buffer.from('\n'))
  }

  /**
   * Appends output. A failed write (ENOSPC, EIO) drops the output and is
   * reported once, not thrown: a full disk must not stop the pod. When a
   * write works again, the log says how much was lost.
   */
  write(chunk: Buffer): void {
    try {
      if (this.#failure !== undefined) this.#recover()
      // The times file is capped too, at 4 times the log's cap: a record
      // (16 bytes) per piece of output that arrives in a millisecond of its
      // own outgrows a log of short lines written slowly.
      if (this.#timesSize + TIME_RECORD_BYTES > TIMES_CAP_FACTOR * this.#maxBytes) this.#rotate()
      this.#write(chunk)
    } catch (er) {
      this.#dropped += chunk.length
      if (this.#failure === undefined) {
        const code = (er as NodeJS.ErrnoException).code ?? 'error'
        this.#failure = `${resourceReason(code)?.what ?? (er as Error).message} (${code})`
        this.#onTrouble?.(`cannot write ${this.path}: ${this.#failure}; output is dropped until it can be written again`)
      }
    }
  }

  /** Notes in the log what was lost while writing failed, once it works again. */
  #recover(): void {
    const note = Buffer.from(`podctl: ${this.#dropped} bytes of output were dropped: ${this.#failure}\n`)
    this.#write(note)
    this.#onTrouble?.(`${this.path} is written again; ${this.#dropped} bytes were dropped`)
    this.#failure = undefined
    this.#dropped = 0
  }

  /**
   * Files are cut on line ends: a line that does not fit in what is left of
   * the current file starts the next one, and only a line longer than a
   * whole file is split.
   */
  #write(chunk: Buffer): void {
    let rest = chunk
    while (rest.length > 0) {
      const room = this.#maxBytes - this.#size
      if (rest.length <= room) {
        this.#append(rest)
        return
      }
      const nl = room > 0 ? rest.lastIndexOf(10, room - 1) : -1
      if (nl >= 0) {
        this.#append(rest.subarray(0, nl + 1))
        rest = rest.subarray(nl + 1)
      } else if (this.#size === 0) {
        this.#append(rest.subarray(0, room)) // longer than a whole file
        rest = rest.subarray(room)
      }
      this.#rotate()
    }
  }

  #append(part: Buffer): void {
    const now = Date.now()
    if (now !== this.#lastRecorded) this.#record(this.#size, now)
    fs.writeSync(this.#fd, part)
    this.#size += part.length
  }

  /**
   * Appends a record to the times file. Its failure (a full disk) loses
   * only the time: the output is still written, and its lines take the
   * time of the record before.
   */
  #record(offset: number, time: number): void {
    const rec = Buffer.alloc(TIME_RECORD_BYTES)
    rec.writeDoubleLE(offset, 0)
    rec.writeDoubleLE(time, 8)
    try {
      fs.writeSync(this.#timesFd, rec)
      this.#timesSize += TIME_RECORD_BYTES
      this.#lastRecorded = time
    } catch {
      // see above
    }
  }

  #rotate(): void {
    fs.closeSync(this.#fd)
    fs.closeSync(this.#timesFd)
    for (let i = this.#keep - 1; i >= 1; i--) {
      for (const [from, to] of [
        [`${this.path}.${i}`, `${this.path}.${i + 1}`],
        [timesPath(`${this.path}.${i}`), timesPath(`${this.path}.${i + 1}`)],
      ] as const) {
        try {
          fs.renameSync(from, to)
        } catch {
          // not there yet
        }
      }
    }
    // The times file first: a reader that sees the new log sees the right times, or none.
    if (this.#keep >= 1) {
      renameIfThere(timesPath(this.path), timesPath(`${this.path}.1`))
      fs.renameSync(this.path, `${this.path}.1`)
    } else {
      fs.rmSync(timesPath(this.path), { force: true })
      fs.unlinkSync(this.path)
    }
    this.#fd = openLog(this.path)
    this.#size = 0
    this.#timesFd = openTimes(this.path)
    this.#timesSize = 0
    this.#lastRecorded = undefined
  }

  close(): void {
    for (const fd of [this.#fd, this.#timesFd]) {
      try {
        fs.closeSync(fd)
      } catch {
        // already closed
      }
    }
  }
}
