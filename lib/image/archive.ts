/**
 * Reading an image archive (an OCI archive: a tar of an OCI layout; or a
 * Docker archive: what `docker save` and `podman save` write) in one pass,
 * from a file or from stdin, never seeking: the archive's index may come
 * after its blobs, so every file in it is staged in the work dir as it
 * streams by, hashed on the way (a blob named by its digest must match
 * it), and the small JSON files that say what is what are kept in memory
 * (at most 4 MiB each). A gzip-compressed archive (`docker save | gzip`)
 * is read through node:zlib.
 */
import fs from 'node:fs'
import path from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import zlib from 'node:zlib'
import { PodctlError, isPodctlError } from '../errors.js'
import { stageBlob, type StagedBlob } from './blobs.js'
import type { StageBudget } from './hostile.js'
import type { StageContext } from './image-source.js'
import { MAX_DOCUMENT_BYTES, type Descriptor } from './oci.js'
import { HEX_RE, digestHex, digestOf } from './reference.js'
import { checkSize, stagedOrStored, type StageDesc } from './stage.js'
import { tarExtract } from './tar.js'
import type { WorkDir } from './work.js'

/** What an archive held. */
export interface ArchiveContents {
  /** The small JSON files at its top: index.json, oci-layout, manifest.json, repositories. */
  documents: Map<string, Buffer>
  /** Every regular file, by its path in the archive (no leading "./"), staged. */
  files: Map<string, StagedBlob>
  /** Symbolic links between its files (older `docker save` links repeated layers), by path. */
  links: Map<string, string>
}

const DOCUMENTS = new Set(['index.json', 'oci-layout', 'manifest.json', 'repositories'])

const normalize = (name: string): string => path.posix.normalize(name.replace(/^(\.\/)+/, '')).replace(/\/+$/, '')

/** The archive's bytes: a file (a fifo too: `<(docker save …)`) or stdin. */
const openInput = (file: string): Readable => {
  if (file === '-') return process.stdin
  let fd: number
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY)
  } catch (er) {
    const code = (er as NodeJS.ErrnoException).code
    throw new PodctlError('EUSAGE', `cannot read image archive ${file}: ${code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (er as Error).message}`, undefined, { cause: er })
  }
  if (fs.fstatSync(fd).isDirectory()) {
    fs.closeSync(fd)
    throw new PodctlError('EUSAGE', `image archive ${file} is a directory`, `an OCI layout directory is imported as oci:${file}`)
  }
  return fs.createReadStream('', { fd, highWaterMark: 256 * 1024 })
}

/** `input` as it is, or gunzipped if it starts like gzip. */
const decompressed = async (input: Readable): Promise<Readable> => {
  const it = input[Symbol.asyncIterator]()
  const first = (await it.next()) as IteratorResult<Buffer>
  const rest = Readable.from(
    (async function* () {
      if (!first.done) yield first.value
      for (;;) {
        const n = (await it.next()) as IteratorResult<Buffer>
        if (n.done) return
        yield n.value
      }
    })(),
    { objectMode: false },
  )
  if (!first.done && first.value[0] === 0x1f && first.value[1] === 0x8b) return rest.pipe(zlib.createGunzip({ chunkSize: 64 * 1024 }))
  return rest
}

const readDocument = async (entry: AsyncIterable<Buffer>, name: string, where: string): Promise<Buffer> => {
  const chunks: Buffer[] = []
  let n = 0
  for await (const c of entry) {
    n += c.length
    if (n > MAX_DOCUMENT_BYTES) throw new PodctlError('EUSAGE', `${name} in ${where} is larger than 4 MiB`, 'podctl reads manifests, indexes and configs of at most 4 MiB; the archive is damaged or hostile')
    chunks.push(c)
  }
  return Buffer.concat(chunks)
}

const drain = async (entry: AsyncIterable<Buffer>): Promise<void> => {
  for await (const _ of entry) void _
}

/**
 * Reads the archive at `file` (or stdin for "-") to its end, staging its
 * files in `work`, each byte counted against `budget`. `where` names it
 * in messages; `onBytes` counts what is staged (progress).
 */
export const readArchive = async (work: WorkDir, file: string, where: string, budget: StageBudget, onBytes?: (n: number) => void): Promise<ArchiveContents> => {
  const contents: ArchiveContents = { documents: new Map(), files: new Map(), links: new Map() }
  const extract = tarExtract()
  const input = await decompressed(openInput(file))
  const feeding = pipeline(input, extract)
  let failed: unknown
  feeding.catch((er: unknown) => {
    failed = er
  })
  try {
    for await (const e of extract) {
      const h = e.header
      const entry = e as unknown as AsyncIterable<Buffer>
      const name = normalize(h.name)
      if (h.type === 'file' || h.type === 'contiguous-file') {
        if (DOCUMENTS.has(name)) {
          contents.documents.set(name, await readDocument(entry, name, where))
          continue
        }
        const m = /^blobs\/sha256\/(.+)$/.exec(name)
        if (m !== null && !HEX_RE.test(m[1]!)) {
          throw new PodctlError('EUSAGE', `${where} holds ${name}, which is not named by a sha256 digest`, 'the archive is damaged or not an OCI or Docker archive')
        }
        const what = m !== null ? `blob ${digestOf(m[1]!)} of ${where}` : `${name} in ${where}`
        contents.files.set(name, await stageBlob(work, entry, { ...(m !== null ? { hex: m[1]! } : {}), size: h.size, what, entry: name }, budget, onBytes))
      } else if (h.type === 'symlink') {
        contents.links.set(name, normalize(path.posix.join(path.posix.dirname(name), h.linkname)))
        await drain(entry)
      } else {
        await drain(entry)
      }
    }
    await feeding
  } catch (er) {
    input.destroy()
    throw archiveError(failed ?? er, where)
  }
  if (failed !== undefined) throw archiveError(failed, where)
  return contents
}

/** A tar or gzip error of the archive itself: exit 2, naming it. A system error (ENOSPC, EIO) passes as it is. */
const archiveError = (er: unknown, where: string): unknown => {
  if (isPodctlError(er) || typeof (er as { syscall?: unknown }).syscall === 'string') return er
  return new PodctlError('EUSAGE', `${where} is not a readable tar archive: ${(er as Error).message}`, 'give an archive written by skopeo, podman save or docker save (gzip-compressed or not)', { cause: er })
}

/** The staged file at `name` in the archive, following its links (a few at most). */
export const archiveFile = (contents: ArchiveContents, name: string): StagedBlob | undefined => {
  let n = normalize(name)
  for (let i = 0; i < 8; i++) {
    const f = contents.files.get(n)
    if (f !== undefined) return f
    const to = contents.links.get(n)
    if (to === undefined) return undefined
    n = to
  }
  return undefined
}

/** How messages name the archive at `file`: what the user typed, or stdin. */
export const archiveWhere = (file: string, text: string): string => (file === '-' ? 'the archive on stdin' : text)

/** Refuses stdin that is a terminal: an archive is piped in, never typed. */
export const checkArchiveInput = (file: string): void => {
  if (file === '-' && process.stdin.isTTY) throw new PodctlError('EUSAGE', 'no archive on stdin: it is a terminal', 'pipe one in: docker save IMAGE | podctl image import -')
}

/** Reads the archive at `file` (or stdin) into the context's work dir, its size told to progress when it has one. */
export const stageArchive = (ctx: StageContext, file: string, where: string): Promise<ArchiveContents> => {
  const total = file === '-' ? undefined : fs.statSync(file, { throwIfNoEntry: false })?.size
  return readArchive(ctx.work, file, where, ctx.budget, (n) => ctx.onBytes(n, total))
}

/** A descriptor's blob among the archive's staged files (or the store's): the archive was read whole already. */
export const archiveBlobs = (ctx: StageContext, where: string): StageDesc => async (desc: Descriptor, what: string): Promise<StagedBlob> => {
  const have = stagedOrStored(ctx, digestHex(desc.digest)!)
  if (have === undefined) throw new PodctlError('EUSAGE', `${where} lacks ${what}`, 'the archive is incomplete; write it again')
  return checkSize(have, desc, what)
}
