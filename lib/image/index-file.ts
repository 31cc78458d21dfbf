/**
 * The store's index (`<data>/images/index.json`): every image (its record)
 * and every name (NAME:TAG -> the image's digest). It is only ever
 * replaced whole, by atomic rename, under the store lock: a reader sees
 * the index before a change or after it, never an image half-made.
 */
import { PodctlError } from '../errors.js'
import { syncDir, writeFileAtomic } from '../fs/atomic.js'
import { readOwnFile } from '../fs/read.js'
import { acquireLockAt } from '../lock/lock.js'
import { ensureImageDirs, imagesRoot, indexPath, storeLockPath } from './layout.js'
import { HEX_RE, digestHex } from './reference.js'

/** What the store knows of one image without reading its blobs. */
export interface ImageRecord {
  /** The digest of its manifest: the image's digest. */
  digest: string
  /** The digest of its config. */
  config: string
  /** The digests of its layers, bottom first. */
  layers: string[]
  /** What its layers unpack to (tar bytes), as podman shows an image's size. */
  size_bytes: number
  /** When it was built, from its config (null when the config does not say). */
  created: string | null
  /** When it was first imported here. */
  imported_at: string
  os: string | null
  architecture: string | null
}

export interface ImageIndexFile {
  version: 1
  /** By the hex of the image's digest. */
  images: Record<string, ImageRecord>
  /** NAME:TAG -> the hex of the image's digest. */
  names: Record<string, string>
}

/** The index's bound: thousands of images fit in far less. */
const MAX_INDEX_BYTES = 64 * 1024 * 1024

/**
 * A time as podctl's JSON shows times: RFC 3339, UTC, with milliseconds
 * (an image config's `created` may carry nanoseconds or an offset); null
 * when it is none or not a time.
 */
export const utcMillis = (t: string | null | undefined): string | null => {
  if (typeof t !== 'string') return null
  const ms = Date.parse(t)
  return Number.isNaN(ms) ? null : new Date(ms).toISOString()
}

export const emptyIndex = (): ImageIndexFile => ({ version: 1, images: {}, names: {} })

const damaged = (why: string): PodctlError =>
  new PodctlError('EFAILED', `the image index ${why}`, 'move it away and import the images again; podctl image prune then removes what it no longer names')

const isRecord = (v: unknown): v is ImageRecord => {
  if (v === null || typeof v !== 'object') return false
  const r = v as Record<string, unknown>
  return (
    digestHex(r.digest) !== undefined &&
    digestHex(r.config) !== undefined &&
    Array.isArray(r.layers) &&
    r.layers.every((l) => digestHex(l) !== undefined) &&
    typeof r.size_bytes === 'number' &&
    (r.created === null || typeof r.created === 'string') &&
    typeof r.imported_at === 'string'
  )
}

/** Reads the index; an absent one is empty. EFAILED when it is damaged (never guessed at). */
export const readIndex = (dataDir: string): ImageIndexFile => {
  const f = readOwnFile(indexPath(dataDir), MAX_INDEX_BYTES)
  if ('missing' in f) return emptyIndex()
  const where = indexPath(dataDir)
  if ('damaged' in f) throw damaged(`is damaged: ${f.damaged}`)
  let v: unknown
  try {
    v = JSON.parse(f.bytes.toString('utf8'))
  } catch {
    throw damaged(`${where} is not valid JSON`)
  }
  const idx = v as Partial<ImageIndexFile> | null
  if (idx === null || typeof idx !== 'object' || idx.version !== 1 || typeof idx.images !== 'object' || idx.images === null || typeof idx.names !== 'object' || idx.names === null) {
    throw damaged(`${where} is not a podctl image index (version 1)`)
  }
  for (const [hex, r] of Object.entries(idx.images)) {
    if (!HEX_RE.test(hex) || !isRecord(r) || digestHex(r.digest) !== hex) throw damaged(`${where} has an invalid record for ${hex}`)
    r.os ??= null
    r.architecture ??= null
  }
  for (const [name, hex] of Object.entries(idx.names)) {
    if (typeof hex !== 'string' || idx.images[hex] === undefined) throw damaged(`${where} names ${JSON.stringify(name)} for an image it does not hold`)
  }
  return idx as ImageIndexFile
}

/** Replaces the index (atomic rename, fsynced). The store lock must be held. */
export const writeIndex = (dataDir: string, idx: ImageIndexFile): void => {
  const sorted: ImageIndexFile = {
    version: 1,
    images: Object.fromEntries(Object.entries(idx.images).sort(([a], [b]) => a.localeCompare(b))),
    names: Object.fromEntries(Object.entries(idx.names).sort(([a], [b]) => a.localeCompare(b))),
  }
  writeFileAtomic(imagesRoot(dataDir), 'index.json', `${JSON.stringify(sorted, null, 1)}\n`, { sync: true })
  syncDir(imagesRoot(dataDir))
}

/** How long a command waits for another one that changes the store (an import's commit is short). */
const STORE_WAIT_MS = 10 * 60_000

/**
 * Runs `fn` holding the store lock: the index, blobs/ and renders/ change
 * only under it, so a reader of the index and a remover of blobs never
 * see another's work half done.
 */
export const withStoreLock = <T>(dataDir: string, fn: () => T): T => {
  ensureImageDirs(dataDir)
  const held = acquireLockAt(storeLockPath(dataDir), 'the image store', { wait: true, timeoutMs: STORE_WAIT_MS })
  try {
    return fn()
  } finally {
    held.release()
  }
}
