/**
 * An app's log: its stdout and stderr, interleaved as they arrive, kept in
 * `<pod>/logs/<app>.log`. Size-capped and rotating: when the current file
 * reaches `maxBytes` it becomes `<app>.log.1` (and .1 becomes .2, ...), so
 * a chatty app never holds more than (keep + 1) × maxBytes of disk.
 */
import fs from 'node:fs'
import path from 'node:path'
import { resourceReason } from '../fs/errors.js'
import { DIR_MODE, FILE_MODE } from '../fs/modes.js'

export const LOGS_DIR = 'logs'
export const DEFAULT_LOG_MAX_BYTES = 1024 * 1024
export const DEFAULT_LOG_KEEP = 2

export const logPath = (podPath: string, app: string): string => path.join(podPath, LOGS_DIR, `${app}.log`)

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

const endsWithNewline = (fd: number, size: number): boolean => {
  const b = Buffer.alloc(1)
  return fs.readSync(fd, b, 0, 1, size - 1) === 1 && b[0] === 0x0a
}

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
    fs.writeSync(this.#fd, part)
    this.#size += part.length
  }

  #rotate(): void {
    fs.closeSync(this.#fd)
    for (let i = this.#keep - 1; i >= 1; i--) {
      try {
        fs.renameSync(`${this.path}.${i}`, `${this.path}.${i + 1}`)
      } catch {
        // not there yet
      }
    }
    if (this.#keep >= 1) fs.renameSync(this.path, `${this.path}.1`)
    else fs.unlinkSync(this.path)
    this.#fd = openLog(this.path)
    this.#size = 0
  }

  close(): void {
    try {
      fs.closeSync(this.#fd)
    } catch {
      // already closed
    }
  }
}
