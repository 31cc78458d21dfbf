/**
 * Blobs on their way into the store: streamed into a work dir while their
 * sha256 is computed, checked against the digest they must have, and kept
 * there under their digest (`<work>/blobs/<hex>`) until the import commits
 * them by rename. A blob the store holds already is hard-linked into the
 * work dir instead: the link keeps its data even if a prune removes the
 * store's name for it before the commit.
 */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, errnoCode, isNotFound } from '../errors.js'
import { describeFailure } from '../fs/errors.js'
import type { StageBudget } from './hostile.js'
import { blobPath } from './layout.js'
import { shortHex } from './reference.js'
import type { WorkDir } from './work.js'

/** A blob staged in a work dir. */
export interface StagedBlob {
  hex: string
  size: number
  /** Its first bytes (up to 512): enough to tell a compressed stream or a tar from JSON. */
  head: Buffer
  path: string
}

export interface BlobExpectation {
  /** The digest it must have (hex); when absent it is computed and taken as it is. */
  hex?: string
  /** The size it must have. */
  size?: number
  /** What it is, for messages: "layer sha256:… of oci-archive:x.tar". */
  what: string
  /** Its name in the source ("layer.tar", "blobs/sha256/<hex>"), for a refusal. */
  entry: string
}

const HEAD_BYTES = 512
let incoming = 0

const stagedPath = (work: WorkDir, hex: string): string => path.join(work.path, 'blobs', hex)

const ensureBlobsDir = (work: WorkDir): string => {
  const d = path.join(work.path, 'blobs')
  try {
    fs.mkdirSync(d, { mode: 0o700 })
  } catch (er) {
    if (errnoCode(er) !== 'EEXIST') throw er
  }
  return d
}

export const mismatch = (what: string, why: string): PodctlError =>
  new PodctlError('EUSAGE', `${what} does not match its digest: ${why}`, 'the image is damaged or was changed after it was made; nothing of it was kept')

/**
 * Streams `source` into the work dir, hashing it as it goes, and keeps it
 * as `<work>/blobs/<hex>` if it matches `expect` (EUSAGE, nothing kept,
 * if it does not). Every byte written is counted against `budget`
 * (--max-size), and a full disk refuses the image the same way. Calls
 * `onBytes` with each chunk's length (progress).
 */
export const stageBlob = async (work: WorkDir, source: AsyncIterable<Buffer>, expect: BlobExpectation, budget: StageBudget, onBytes?: (n: number) => void): Promise<StagedBlob> => {
  const dir = ensureBlobsDir(work)
  const tmp = path.join(dir, `.in-${incoming++}`)
  const fd = fs.openSync(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, 0o640)
  const hash = createHash('sha256')
  let size = 0
  const heads: Buffer[] = []
  let headBytes = 0
  let closed = false
  try {
    for await (const chunk of source) {
      size += chunk.length
      if (expect.size !== undefined && size > expect.size) throw mismatch(expect.what, `it is longer than the ${expect.size} bytes its descriptor says`)
      if (headBytes < HEAD_BYTES) {
        heads.push(Buffer.from(chunk.subarray(0, HEAD_BYTES - headBytes)))
        headBytes += Math.min(chunk.length, HEAD_BYTES - headBytes)
      }
      hash.update(chunk)
      budget.spend(chunk.length, expect.entry)
      try {
        let off = 0
        while (off < chunk.length) off += fs.writeSync(fd, chunk, off)
      } catch (er) {
        throw describeFailure(budget.failed(er, expect.entry), `cannot store ${expect.what}`)
      }
      onBytes?.(chunk.length)
    }
    if (expect.size !== undefined && size !== expect.size) throw mismatch(expect.what, `it has ${size} bytes, its descriptor says ${expect.size}`)
    const hex = hash.digest('hex')
    if (expect.hex !== undefined && hex !== expect.hex) throw mismatch(expect.what, `its content hashes to sha256:${shortHex(hex)}…`)
    try {
      fs.fsyncSync(fd)
    } catch (er) {
      throw describeFailure(budget.failed(er, expect.entry), `cannot store ${expect.what}`)
    }
    fs.closeSync(fd)
    closed = true
    const final = stagedPath(work, hex)
    if (fs.existsSync(final)) fs.unlinkSync(tmp)
    else fs.renameSync(tmp, final)
    return { hex, size, head: Buffer.concat(heads), path: final }
  } catch (er) {
    if (!closed) fs.closeSync(fd)
    fs.rmSync(tmp, { force: true })
    throw er
  }
}

/** The blob `hex` if it is staged in `work` already. */
export const stagedBlob = (work: WorkDir, hex: string): StagedBlob | undefined => {
  const p = stagedPath(work, hex)
  const st = fs.lstatSync(p, { throwIfNoEntry: false })
  if (st === undefined || !st.isFile()) return undefined
  return { hex, size: st.size, head: readHead(p), path: p }
}

const readHead = (p: string): Buffer => {
  const fd = fs.openSync(p, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW)
  try {
    const b = Buffer.alloc(HEAD_BYTES)
    const n = fs.readSync(fd, b, 0, HEAD_BYTES, 0)
    return b.subarray(0, n)
  } finally {
    fs.closeSync(fd)
  }
}

/**
 * Stages the store's own copy of `hex` by a hard link, if the store has
 * it; undefined otherwise. What the store holds was checked when it came
 * in, so it is not hashed again.
 */
export const linkStoreBlob = (dataDir: string, work: WorkDir, hex: string): StagedBlob | undefined => {
  const dest = stagedPath(work, hex)
  if (fs.existsSync(dest)) return stagedBlob(work, hex)
  ensureBlobsDir(work)
  try {
    fs.linkSync(blobPath(dataDir, hex), dest)
  } catch (er) {
    if (isNotFound(er)) return undefined
    if (errnoCode(er) === 'EEXIST') return stagedBlob(work, hex)
    throw er
  }
  return stagedBlob(work, hex)
}

/** Reads a staged blob of at most `max` bytes whole (a manifest, an index, a config). */
export const readStaged = (blob: StagedBlob, max: number, what: string): Buffer => {
  if (blob.size > max) {
    throw new PodctlError('EUSAGE', `${what} is larger than ${max / (1024 * 1024)} MiB`, 'podctl reads manifests, indexes and configs of at most 4 MiB; the image is damaged or hostile')
  }
  return fs.readFileSync(blob.path)
}

/**
 * Stages `file`, a file of this import's own work dir (the layout a pull
 * had skopeo write), by a hard link after hashing it where it is: checked
 * as stageBlob checks, with no byte written.
 */
export const adoptBlob = async (work: WorkDir, file: string, expect: BlobExpectation): Promise<StagedBlob> => {
  const hash = createHash('sha256')
  let size = 0
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW)
  for await (const chunk of fs.createReadStream('', { fd, highWaterMark: 256 * 1024 }) as AsyncIterable<Buffer>) {
    size += chunk.length
    hash.update(chunk)
  }
  if (expect.size !== undefined && size !== expect.size) throw mismatch(expect.what, `it has ${size} bytes, its descriptor says ${expect.size}`)
  const hex = hash.digest('hex')
  if (expect.hex !== undefined && hex !== expect.hex) throw mismatch(expect.what, `its content hashes to sha256:${shortHex(hex)}…`)
  ensureBlobsDir(work)
  try {
    fs.linkSync(file, stagedPath(work, hex))
  } catch (er) {
    if (errnoCode(er) !== 'EEXIST') throw er
  }
  return stagedBlob(work, hex)!
}
