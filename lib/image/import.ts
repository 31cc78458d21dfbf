/**
 * `podctl image import`: an image from a source (an OCI layout, an OCI
 * archive, a Docker archive, skopeo's pull: lib/image/image-source.ts)
 * into the store, in three steps, each of which a SIGKILL may interrupt
 * without leaving anything that `image list` shows:
 *
 * 1. stage: the source streams every blob the image needs into a work dir
 *    of the import, checked against its digest on the way (or hard-linked
 *    from the store, which has it already), every byte written counted
 *    against --max-size;
 * 2. render: under the image's render lock, its layers are unpacked into
 *    the work dir, unless the render exists (a concurrent import of the
 *    same image waits here, then finds it made);
 * 3. commit: under the store lock, the blobs and the render the store
 *    lacks are renamed into it, then the index is replaced by one that
 *    names the image. Before that rename the image does not exist; after
 *    it, it is whole.
 *
 * Importing an image the store holds already stores nothing twice: it
 * (re)names it.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { syncDir } from '../fs/atomic.js'
import { StageBudget } from './hostile.js'
import type { ImageSource, StageContext, StagedImage } from './image-source.js'
import { readIndex, utcMillis, withStoreLock, writeIndex, type ImageRecord } from './index-file.js'
import { blobPath, blobsDir, ensureImageDirs } from './layout.js'
import { hostPlatform, type Platform } from './oci.js'
import { digestHex, digestOf, formatName, shortHex, type ImageName } from './reference.js'
import { DEFAULT_MAX_BYTES, commitRender, lockRender, readRenderInfo, renderExists, renderIntoWork, renderKey, type RenderProgress } from './render.js'
import { WorkDir } from './work.js'

export type ImportProgress = { phase: 'copy'; bytes: number; total: number | undefined } | ({ phase: 'unpack' } & RenderProgress)

export interface ImportOptions {
  /** The name to give it (else the source's own: RepoTags, or an OCI ref name that is a full name). */
  name?: ImageName
  /** From a multi-platform index: this platform rather than the machine's. */
  platform?: Platform
  /** --max-size: what staging may write, and again what its layers may unpack to. */
  maxBytes?: number
  onProgress?: (p: ImportProgress) => void
  /** Told when the import waits for another process (the same image being rendered). */
  onWait?: (pid: number | undefined) => void
  /** Told of what was imported but not quite as the image says (attributes the file system refused). */
  onWarning?: (message: string) => void
}

export interface ImportResult {
  /** The image's digest (its manifest's). */
  digest: string
  /** The names it has now from this import. */
  names: string[]
}

/** Imports the image `source` names into the store of `dataDir` (which exists). */
export const importImage = async (dataDir: string, source: ImageSource, opts: ImportOptions = {}): Promise<ImportResult> => {
  source.check?.()
  ensureImageDirs(dataDir)
  const work = WorkDir.open(dataDir, source.workKind ?? 'import')
  try {
    const staged = await source.stage(stageContext(dataDir, work, source, opts))
    return await renderAndCommit(dataDir, work, staged, opts)
  } finally {
    work.discard()
  }
}

/** What a source stages with: the work dir, --max-size as a budget of bytes written, the platform, progress. */
const stageContext = (dataDir: string, work: WorkDir, source: ImageSource, opts: ImportOptions): StageContext => {
  let copied = 0
  return {
    dataDir,
    work,
    budget: new StageBudget(opts.maxBytes ?? DEFAULT_MAX_BYTES, opts.name !== undefined ? formatName(opts.name) : undefined, source.where),
    platform: opts.platform ?? hostPlatform(),
    explicitPlatform: opts.platform !== undefined,
    onBytes: (n, total) => {
      copied += n
      opts.onProgress?.({ phase: 'copy', bytes: copied, total })
    },
  }
}

/** Renders the staged image (unless its render exists) and commits it; see the module's comment. */
const renderAndCommit = async (dataDir: string, work: WorkDir, s: StagedImage, opts: ImportOptions): Promise<ImportResult> => {
  const digest = digestOf(s.manifestHex)
  const names = opts.name !== undefined ? [opts.name] : s.names
  const label = names[0] !== undefined ? formatName(names[0]) : `${digestOf(shortHex(s.manifestHex))}…`
  const key = renderKey(s.manifestHex)
  const layers = s.manifest.layers.map((l) => ({ hex: digestHex(l.digest)!, mediaType: l.mediaType, path: path.join(work.path, 'blobs', digestHex(l.digest)!) }))
  const held = lockRender(dataDir, key, opts.onWait)
  try {
    let size: number
    if (renderExists(dataDir, key)) {
      size = readRenderInfo(dataDir, key)?.bytes ?? s.manifest.layers.reduce((n, l) => n + l.size, 0)
      const max = opts.maxBytes ?? DEFAULT_MAX_BYTES
      if (size > max) throw new PodctlError('EUSAGE', `image ${label} is refused: it unpacks to ${size} bytes, past --max-size (${max} bytes)`, 'the store has it from an earlier import, and keeps it as it was; give a larger --max-size to import it again')
    } else {
      size = await renderIntoWork(work, digest, layers, {
        image: label,
        maxBytes: opts.maxBytes ?? DEFAULT_MAX_BYTES,
        ...(s.config.rootfs ? { diffIds: s.config.rootfs.diff_ids } : {}),
        onProgress: (p) => opts.onProgress?.({ phase: 'unpack', ...p }),
        onSkippedXattrs: (n) => opts.onWarning?.(`${n} extended attribute${n === 1 ? ' was' : 's were'} not set (this file system or user does not take them)`),
      })
    }
    withStoreLock(dataDir, () => {
      const idx = readIndex(dataDir)
      for (const hex of new Set([s.manifestHex, s.configHex, ...layers.map((l) => l.hex)])) commitBlob(dataDir, work, hex)
      syncDir(blobsDir(dataDir))
      commitRender(dataDir, work, key)
      const record: ImageRecord = idx.images[s.manifestHex] ?? {
        digest,
        config: digestOf(s.configHex),
        layers: layers.map((l) => digestOf(l.hex)),
        size_bytes: size,
        created: utcMillis(s.config.created),
        imported_at: new Date().toISOString(),
        os: s.config.os ?? null,
        architecture: s.config.architecture ?? null,
      }
      idx.images[s.manifestHex] = record
      for (const n of names) idx.names[formatName(n)] = s.manifestHex
      writeIndex(dataDir, idx)
    })
  } finally {
    held.release()
  }
  return { digest, names: names.map(formatName) }
}

/** Moves a staged blob into the store unless the store has it. The store lock must be held. */
const commitBlob = (dataDir: string, work: WorkDir, hex: string): void => {
  const dest = blobPath(dataDir, hex)
  if (fs.existsSync(dest)) return
  const from = path.join(work.path, 'blobs', hex)
  fs.chmodSync(from, 0o440) // content-addressed: never written again
  fs.renameSync(from, dest)
}
