/**
 * Reading with a bound: no file podctl reads can make it hold more than
 * the bound in memory (`--manifest /dev/zero` once grew to 16 GB before it
 * was refused), hang on a fifo, or, under a data dir, follow a link.
 *
 * - readUserFile: a file a user names (a manifest, a UUID file), or "-"
 *   for stdin. Links are followed (it is the user's path); it must be a
 *   regular file, unless it is stdin.
 * - readOwnFile: a file podctl wrote itself in a data dir (pod.json, a
 *   manifest, a record). Never read through a link; anything but a
 *   regular file within the bound is reported as damaged, not thrown.
 */
import fs from 'node:fs'
import { PodctlError, errnoCode, isNotFound } from '../errors.js'

/** The bounds of CONTRACT §10. */
export const MAX_MANIFEST_BYTES = 4 * 1024 * 1024
export const MAX_UUID_FILE_BYTES = 4 * 1024
export const MAX_RECORD_BYTES = 1024 * 1024

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = fs.constants

// Small files are read straight into a shared slab and returned as views
// of it: list reads one small file per pod, and open + read + close into
// the slab costs less than readFileSync's open + fstat + read + close into
// a fresh buffer, with no copy and far less garbage
// (Documentation/performance.md).
const SLAB_BYTES = 256 * 1024
const FIRST_READ_BYTES = 64 * 1024
let slab = Buffer.allocUnsafe(SLAB_BYTES)
let slabUsed = 0

/**
 * Reads `fd` to its end; undefined as soon as it holds more than `max`
 * bytes. A short read is the end only of a regular file (`regular`): a
 * pipe gives what its writer has written so far.
 */
const readToEnd = (fd: number, max: number, regular = true): Buffer | undefined => {
  if (SLAB_BYTES - slabUsed < FIRST_READ_BYTES) {
    slab = Buffer.allocUnsafe(SLAB_BYTES)
    slabUsed = 0
  }
  const room = Math.min(SLAB_BYTES - slabUsed, max + 1)
  const n = fs.readSync(fd, slab, slabUsed, room, null)
  if (n > max) return undefined
  if (n < room && (regular || n === 0)) {
    const bytes = slab.subarray(slabUsed, slabUsed + n)
    slabUsed += n
    return bytes
  }
  const chunks = [Buffer.from(slab.subarray(slabUsed, slabUsed + n))]
  let total = n
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.min(1024 * 1024, max + 1 - total))
    const got = fs.readSync(fd, chunk, 0, chunk.length, null)
    if (got === 0) return Buffer.concat(chunks, total)
    total += got
    if (total > max) return undefined
    chunks.push(chunk.subarray(0, got))
  }
}

const sizeText = (max: number): string => (max >= 1024 * 1024 ? `${max / (1024 * 1024)} MiB` : `${max / 1024} KiB`)

/**
 * Reads a file a user names, or stdin for "-". EUSAGE, saying what `what`
 * is and what is wrong: not a regular file (a fifo, a device, a
 * directory), larger than `max` bytes, or unreadable.
 */
export const readUserFile = (file: string, max: number, what: string): Buffer => {
  const tooLarge = (): PodctlError => new PodctlError('EUSAGE', `${what} ${file} is larger than ${sizeText(max)}`, `give a ${what} of at most ${sizeText(max)}`)
  if (file === '-') {
    let data: Buffer | undefined
    try {
      data = readToEnd(0, max, fs.fstatSync(0).isFile())
    } catch (er) {
      throw new PodctlError('EUSAGE', `cannot read ${what} from stdin: ${(er as Error).message}`, undefined, { cause: er })
    }
    if (data === undefined) throw tooLarge()
    return data
  }
  let fd: number
  try {
    // O_NONBLOCK: opening a fifo with no writer would wait for ever.
    fd = fs.openSync(file, O_RDONLY | O_NONBLOCK)
  } catch (er) {
    const code = errnoCode(er)
    throw new PodctlError('EUSAGE', `cannot read ${what} ${file}: ${code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (er as Error).message}`, undefined, { cause: er })
  }
  try {
    const st = fs.fstatSync(fd)
    if (!st.isFile()) {
      const kind = st.isDirectory() ? 'a directory' : st.isFIFO() ? 'a fifo' : st.isCharacterDevice() || st.isBlockDevice() ? 'a device' : st.isSocket() ? 'a socket' : 'not a regular file'
      throw new PodctlError('EUSAGE', `${what} ${file} is ${kind}, not a regular file`, file === '/dev/stdin' ? 'to read stdin, give -' : `give a regular file${what === 'manifest' ? ', or - for stdin' : ''}`)
    }
    if (st.size > max) throw tooLarge()
    const data = readToEnd(fd, max)
    if (data === undefined) throw tooLarge()
    return data
  } catch (er) {
    if (er instanceof PodctlError) throw er
    throw new PodctlError('EUSAGE', `cannot read ${what} ${file}: ${(er as Error).message}`, undefined, { cause: er })
  } finally {
    fs.closeSync(fd)
  }
}

/** What readOwnFile found: the bytes, nothing, or why the file is damaged. */
export type OwnFile = { bytes: Buffer } | { missing: true } | { damaged: string }

/**
 * Reads a file podctl wrote itself, never through a link and never more
 * than `max` bytes. A missing file (or parent) is `missing`; a link, a
 * directory, a fifo, a device or a file over the bound is `damaged`, with
 * a one-line reason. Other errors (EACCES, EIO) are thrown.
 */
export const readOwnFile = (file: string, max: number = MAX_RECORD_BYTES): OwnFile => {
  let fd: number
  try {
    fd = fs.openSync(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
  } catch (er) {
    if (isNotFound(er)) return { missing: true }
    if (errnoCode(er) === 'ELOOP') return { damaged: `${file} is a symlink` }
    throw er
  }
  try {
    const data = readToEnd(fd, max)
    return data === undefined ? { damaged: `${file} is larger than ${sizeText(max)}` } : { bytes: data }
  } catch (er) {
    const code = errnoCode(er)
    if (code === 'EISDIR') return { damaged: `${file} is a directory` }
    if (code === 'EAGAIN') return { damaged: `${file} is not a regular file` }
    throw er
  } finally {
    fs.closeSync(fd)
  }
}

/** The text of a file podctl wrote itself (see readOwnFile), or undefined if it is missing or damaged. */
export const readOwnText = (file: string, max: number = MAX_RECORD_BYTES): string | undefined => {
  const f = readOwnFile(file, max)
  return 'bytes' in f ? f.bytes.toString('utf8') : undefined
}

/**
 * The text of one of the host's own files (/etc/hosts, /etc/resolv.conf,
 * /proc/net/route), links followed (the host's own, such as a resolver's
 * link to its stub file), never more than `max` bytes; undefined when it
 * cannot be read or is larger.
 */
export const readHostText = (file: string, max: number): string | undefined => {
  let fd: number
  try {
    fd = fs.openSync(file, O_RDONLY | O_NONBLOCK)
  } catch {
    return undefined
  }
  try {
    return readToEnd(fd, max)?.toString('utf8')
  } catch {
    return undefined
  } finally {
    fs.closeSync(fd)
  }
}
