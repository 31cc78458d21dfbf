/**
 * Renders (rkt's tree store): an image's layers unpacked once, in order,
 * into `<data>/images/renders/<key>/rootfs`, and shared read-only by every
 * pod of the image. A render is made in a work dir and renamed into
 * renders/ only when it is complete, under the store lock: a render that
 * exists is whole, and one a killed process left half-made is never seen
 * there (its work dir goes with the next prune or gc). One render lock per
 * key makes concurrent renders of one image wait for the first instead of
 * doing the work twice.
 *
 * The key is the image's digest (hex), or, for owners shifted into a user
 * namespace, the digest and the map: `<hex>+<uid>-<gid>-<size>`.
 */
import fs from 'node:fs'
import path from 'node:path'
import type { Readable, Transform } from 'node:stream'
import zlib from 'node:zlib'
import { PodctlError, errnoCode } from '../errors.js'
import { syncDir, writeFileAtomic } from '../fs/atomic.js'
import { readOwnFile } from '../fs/read.js'
import { acquireLockAt } from '../lock/lock.js'
import { readIndex, withStoreLock, type ImageRecord } from './index-file.js'
import { RENDER_ROOTFS, blobPath, ensureImageDirs, renderDir, renderLockPath, renderRootfs, rendersDir } from './layout.js'
import { MAX_DOCUMENT_BYTES, checkManifest, layerCompression, parseDocument, type Compression, type ImageManifest } from './oci.js'
import { digestHex, digestOf, shortHex } from './reference.js'
import { HostileImageError, RenderWriter, type IdMap } from './unpack.js'
import { WorkDir } from './work.js'

/** --max-size's default: 10 GiB. */
export const DEFAULT_MAX_BYTES = 10 * 1024 ** 3

/** The name of a render in renders/. */
export const renderKey = (hex: string, idMap?: IdMap): string => (idMap === undefined ? hex : `${hex}+${idMap.uid}-${idMap.gid}-${idMap.size}`)

/** What renders/<key>/render.json says. */
export interface RenderInfo {
  digest: string
  bytes: number
  id_map: IdMap | null
  rendered_at: string
}
const INFO = 'render.json'

/** A layer to unpack: its blob file and media type. */
export interface LayerInput {
  hex: string
  mediaType: string
  path: string
}

export interface RenderProgress {
  layer: number
  layers: number
  bytes: number
}

export interface UnpackImageOptions {
  /** The image, for messages. */
  image: string
  maxBytes: number
  idMap?: IdMap
  /** The config's diff_ids, checked against what each layer unpacks to (when the config has them). */
  diffIds?: readonly string[]
  onProgress?: (p: RenderProgress) => void
  /** Told how many extended attributes could not be set. */
  onSkippedXattrs?: (n: number) => void
}

const hasZstd = (): boolean => typeof (zlib as { createZstdDecompress?: unknown }).createZstdDecompress === 'function'

/** A layer's uncompressed tar stream. */
const openLayer = (file: string, compression: Compression, mediaType: string): Readable => {
  if (compression === 'zstd' && !hasZstd()) {
    throw new PodctlError('EUSAGE', `layer media type ${mediaType} is zstd-compressed, which this Node.js (${process.version}) cannot decompress`, 'run podctl on Node.js 22.15 or later, or convert the image: skopeo copy --dest-compress-format gzip …')
  }
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW)
  const raw = fs.createReadStream('', { fd, highWaterMark: 256 * 1024 })
  if (compression === 'gzip') return raw.pipe(zlib.createGunzip({ chunkSize: 128 * 1024 }))
  if (compression === 'zstd') return raw.pipe((zlib as unknown as { createZstdDecompress(o: object): Transform }).createZstdDecompress({ chunkSize: 128 * 1024 }))
  return raw
}

/**
 * Unpacks `layers` in order into `rootfs` (a new, empty directory).
 * Resolves to the bytes unpacked. HostileImageError (exit 2) for an entry
 * that is refused, or a layer whose content does not match its diff_id.
 */
export const unpackImage = async (rootfs: string, layers: readonly LayerInput[], opts: UnpackImageOptions): Promise<number> => {
  const asRoot = process.geteuid?.() === 0
  const writer = new RenderWriter(rootfs, {
    image: opts.image,
    maxBytes: opts.maxBytes,
    asRoot,
    ...(opts.idMap !== undefined && asRoot ? { idMap: opts.idMap } : {}),
    onBytes: () => opts.onProgress?.({ layer: current, layers: layers.length, bytes: writer.bytes }),
  })
  let current = 0
  try {
    for (const [i, l] of layers.entries()) {
      current = i + 1
      const name = `layer ${i + 1} of ${layers.length} (${digestOf(shortHex(l.hex))}…)`
      const stream = openLayer(l.path, layerCompression(l.mediaType, name), l.mediaType)
      const { diffHex } = await writer.applyLayer(stream, name)
      const want = opts.diffIds?.[i]
      if (want !== undefined && digestHex(want) !== undefined && digestHex(want) !== diffHex) {
        throw new HostileImageError(opts.image, name, '(the layer itself)', `it unpacks to sha256:${shortHex(diffHex)}…, not to ${want.slice(0, 19)}… as the image config says`, 'the image is damaged or was changed after it was made; nothing of it was kept')
      }
    }
    writer.finish()
  } catch (er) {
    writer.close()
    throw er
  }
  if (writer.skippedXattrs > 0) opts.onSkippedXattrs?.(writer.skippedXattrs)
  return writer.bytes
}

/** The info of a render, or undefined if the render is missing or has none. */
export const readRenderInfo = (dataDir: string, key: string): RenderInfo | undefined => {
  const f = readOwnFile(path.join(renderDir(dataDir, key), INFO))
  if (!('bytes' in f)) return undefined
  try {
    return JSON.parse(f.bytes.toString('utf8')) as RenderInfo
  } catch {
    return undefined
  }
}

/** Whether the render `key` exists (complete: renders only appear whole). */
export const renderExists = (dataDir: string, key: string): boolean => fs.lstatSync(renderRootfs(dataDir, key), { throwIfNoEntry: false })?.isDirectory() === true

/**
 * Renders an image into `<work>/render` (rootfs and render.json), ready to
 * be renamed into renders/. Returns the bytes unpacked.
 */
export const renderIntoWork = async (work: WorkDir, digest: string, layers: readonly LayerInput[], opts: UnpackImageOptions): Promise<number> => {
  const dir = work.mkdir('render', 0o750)
  const rootfs = path.join(dir, RENDER_ROOTFS)
  fs.mkdirSync(rootfs, { mode: 0o755 })
  const bytes = await unpackImage(rootfs, layers, opts)
  const info: RenderInfo = { digest, bytes, id_map: opts.idMap ?? null, rendered_at: new Date().toISOString() }
  writeFileAtomic(dir, INFO, `${JSON.stringify(info)}\n`)
  return bytes
}

/**
 * Moves a finished render from `work` into renders/<key>, unless one is
 * there already (then it stays in the work dir, to go with it). The store
 * lock must be held. Returns whether it moved.
 */
export const commitRender = (dataDir: string, work: WorkDir, key: string): boolean => {
  const from = path.join(work.path, 'render')
  if (!fs.existsSync(from) || renderExists(dataDir, key)) return false
  try {
    fs.renameSync(from, renderDir(dataDir, key))
  } catch (er) {
    if (errnoCode(er) === 'EEXIST' || errnoCode(er) === 'ENOTEMPTY') return false
    throw er
  }
  syncDir(rendersDir(dataDir))
  return true
}

/** How long a render waits for another process rendering the same image. */
const RENDER_WAIT_MS = 6 * 3600_000

/**
 * Takes the render lock of `key`, telling `onWait` (once) when another
 * process holds it. Release it when the render is in place.
 */
export const lockRender = (dataDir: string, key: string, onWait?: (pid: number | undefined) => void) =>
  acquireLockAt(renderLockPath(dataDir, key), `the render of image ${shortHex(key)}`, { wait: true, timeoutMs: RENDER_WAIT_MS, ...(onWait ? { onWait } : {}) })

/** Reads the manifest of a stored image (its layers' media types). */
export const storedManifest = (dataDir: string, r: ImageRecord): ImageManifest => {
  const hex = digestHex(r.digest)!
  const f = readOwnFile(blobPath(dataDir, hex), MAX_DOCUMENT_BYTES + 1)
  if (!('bytes' in f)) throw new PodctlError('EFAILED', `the manifest of image ${shortHex(hex)} is missing from the store`, 'import the image again')
  return checkManifest(parseDocument(f.bytes, 'image manifest', `image ${shortHex(hex)}`), `image ${shortHex(hex)}`)
}

/** A stored image's render, made if it is missing. */
export interface Render {
  /** The image's digest. */
  digest: string
  key: string
  /** The image's file system: read-only by contract (an overlay's lower layer, or the source of a copy). */
  rootfs: string
}

export interface EnsureRenderOptions {
  /** Owners shifted into a user namespace (`userns: private`); root only. */
  idMap?: IdMap
  maxBytes?: number
  onProgress?: (p: RenderProgress) => void
  onWait?: (pid: number | undefined) => void
}

/**
 * The render of the stored image `digest` (`sha256:…`) for `opts.idMap`,
 * rendering it first if it is missing (a prune removed it, or it is for
 * another id map). What the runtime calls before it prepares an app's
 * root. The caller records the digest in its pod first, so that a prune
 * running meanwhile keeps the image. ENOIMAGE when the store does not
 * hold the image.
 */
export const ensureRender = async (dataDir: string, digest: string, opts: EnsureRenderOptions = {}): Promise<Render> => {
  const hex = digestHex(digest)
  if (hex === undefined) throw new PodctlError('EUSAGE', `invalid image digest ${JSON.stringify(digest)}`)
  const key = renderKey(hex, opts.idMap)
  const done = (): Render => ({ digest: digestOf(hex), key, rootfs: renderRootfs(dataDir, key) })
  if (renderExists(dataDir, key)) return done()
  ensureImageDirs(dataDir)
  const record = readIndex(dataDir).images[hex]
  if (record === undefined) throw new PodctlError('ENOIMAGE', `no image ${digestOf(shortHex(hex))}… in the store`, 'import it: podctl image import SOURCE')
  const held = lockRender(dataDir, key, opts.onWait)
  try {
    if (renderExists(dataDir, key)) return done()
    const manifest = storedManifest(dataDir, record)
    const work = WorkDir.open(dataDir, 'render')
    try {
      const layers = manifest.layers.map((l) => ({ hex: digestHex(l.digest)!, mediaType: l.mediaType, path: blobPath(dataDir, digestHex(l.digest)!) }))
      await renderIntoWork(work, digestOf(hex), layers, {
        image: digestOf(shortHex(hex)),
        maxBytes: opts.maxBytes ?? DEFAULT_MAX_BYTES,
        ...(opts.idMap ? { idMap: opts.idMap } : {}),
        ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
      })
      withStoreLock(dataDir, () => {
        if (readIndex(dataDir).images[hex] === undefined) throw new PodctlError('ENOIMAGE', `image ${digestOf(shortHex(hex))}… was removed while it was being rendered`)
        commitRender(dataDir, work, key)
      })
    } finally {
      work.discard()
    }
  } finally {
    held.release()
  }
  return done()
}
