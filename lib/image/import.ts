/**
 * `podctl image import`: an image from an OCI layout, an OCI archive or a
 * Docker archive into the store, in three steps, each of which a SIGKILL
 * may interrupt without leaving anything that `image list` shows:
 *
 * 1. stage: every blob the image needs is streamed into a work dir of the
 *    import, checked against its digest on the way (or hard-linked from
 *    the store, which has it already);
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
import { PodctlError, isNotFound } from '../errors.js'
import { syncDir } from '../fs/atomic.js'
import { readUserFile } from '../fs/read.js'
import { readArchive, type ArchiveContents } from './archive.js'
import { linkStoreBlob, mismatch, readStaged, stageBlob, stagedBlob, type StagedBlob } from './blobs.js'
import { dockerImage } from './docker-archive.js'
import { StageBudget } from './hostile.js'
import { readIndex, utcMillis, withStoreLock, writeIndex, type ImageRecord } from './index-file.js'
import { blobPath, blobsDir, ensureImageDirs } from './layout.js'
import { MAX_DOCUMENT_BYTES, REF_NAME, checkConfig, checkIndex, checkManifest, formatPlatform, hostPlatform, layerCompression, parseDocument, type Descriptor, type ImageConfig, type ImageManifest, type Platform } from './oci.js'
import { digestHex, digestOf, formatName, shortHex, tryParseName, type ImageName } from './reference.js'
import { DEFAULT_MAX_BYTES, commitRender, lockRender, readRenderInfo, renderExists, renderIntoWork, renderKey, type RenderProgress } from './render.js'
import { selectManifest } from './select.js'
import type { Source } from './source.js'
import { WorkDir } from './work.js'

export type ImportProgress = { phase: 'copy'; bytes: number; total: number | undefined } | ({ phase: 'unpack' } & RenderProgress)

export interface ImportOptions {
  /** The name to give it (else the source's own: RepoTags, or an OCI ref name that is a full name). */
  name?: ImageName
  /** From a multi-platform index: this platform rather than the machine's. */
  platform?: Platform
  /** --max-size: what its layers may unpack to. */
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

/** An image staged in a work dir, ready to render and commit. */
interface Staged {
  manifestHex: string
  manifest: ImageManifest
  configHex: string
  config: ImageConfig
  names: ImageName[]
  where: string
}

/** The bytes of a document as a one-chunk stream, for stageBlob. */
async function* once(b: Buffer): AsyncIterable<Buffer> {
  yield b
}

/** Imports the image `source` names into the store of `dataDir` (which exists). */
export const importImage = async (dataDir: string, source: Source, opts: ImportOptions = {}): Promise<ImportResult> => {
  ensureImageDirs(dataDir)
  const work = WorkDir.open(dataDir, 'import')
  try {
    const staged = await stage(dataDir, work, source, opts)
    return await renderAndCommit(dataDir, work, staged, opts)
  } finally {
    work.discard()
  }
}

const stage = async (dataDir: string, work: WorkDir, source: Source, opts: ImportOptions): Promise<Staged> => {
  const where = source.kind === 'archive' && source.path === '-' ? 'the archive on stdin' : source.text
  const budget = new StageBudget(opts.maxBytes ?? DEFAULT_MAX_BYTES, opts.name !== undefined ? formatName(opts.name) : undefined, where)
  let copied = 0
  const progress = (total: number | undefined) => (n: number) => {
    copied += n
    opts.onProgress?.({ phase: 'copy', bytes: copied, total })
  }
  if (source.kind === 'oci-dir') {
    const index = readLayoutIndex(source.path, where)
    const onBytes = progress(undefined)
    const fromDir = async (desc: Descriptor, what: string): Promise<StagedBlob> => {
      const hex = digestHex(desc.digest)!
      const have = stagedBlob(work, hex) ?? linkStoreBlob(dataDir, work, hex)
      if (have !== undefined) return checkSize(have, desc, what)
      return stageBlob(work, openLayoutBlob(source.path, hex, desc, what), { hex, size: desc.size, what, entry: `blobs/sha256/${hex}` }, budget, onBytes)
    }
    return fromIndex(index, fromDir, where, source.tag, opts)
  }
  const total = source.path === '-' ? undefined : fs.statSync(source.path, { throwIfNoEntry: false })?.size
  const contents = await readArchive(work, source.path, where, budget, progress(total))
  const format = source.format !== 'auto' ? source.format : contents.documents.has('index.json') ? 'oci' : contents.documents.has('manifest.json') ? 'docker' : undefined
  if (format === undefined) throw new PodctlError('EUSAGE', `${where} is neither an OCI archive (no index.json) nor a Docker archive (no manifest.json)`, 'give an archive written by skopeo copy, podman save or docker save')
  const fromArchive = async (desc: Descriptor, what: string): Promise<StagedBlob> => {
    const hex = digestHex(desc.digest)!
    const have = stagedBlob(work, hex) ?? linkStoreBlob(dataDir, work, hex)
    if (have === undefined) throw new PodctlError('EUSAGE', `${where} lacks ${what}`, 'the archive is incomplete; write it again')
    return checkSize(have, desc, what)
  }
  if (format === 'oci') {
    const text = contents.documents.get('index.json')
    if (text === undefined) throw new PodctlError('EUSAGE', `${where} is not an OCI archive: it has no index.json`, contents.documents.has('manifest.json') ? `it is a Docker archive: docker-archive:${source.path}` : undefined)
    return fromIndex(checkIndex(parseDocument(text, 'index.json', where), where), fromArchive, where, source.ref, opts)
  }
  return fromDocker(work, contents, where, source.ref, fromArchive, budget, opts)
}

const checkSize = (b: StagedBlob, desc: Descriptor, what: string): StagedBlob => {
  if (b.size !== desc.size) throw mismatch(what, `it has ${b.size} bytes, its descriptor says ${desc.size}`)
  return b
}

/** The layout's index.json, after a look at its oci-layout file. */
const readLayoutIndex = (dir: string, where: string) => {
  if (!fs.existsSync(path.join(dir, 'oci-layout'))) throw new PodctlError('EUSAGE', `${dir} is not an OCI image layout: it has no oci-layout file`, 'give a directory written by skopeo copy … oci:DIR, umoci or buildah')
  const layout = parseDocument(readUserFile(path.join(dir, 'oci-layout'), MAX_DOCUMENT_BYTES, 'oci-layout file'), 'oci-layout', where)
  if (typeof layout.imageLayoutVersion !== 'string') throw new PodctlError('EUSAGE', `${dir} is not an OCI image layout: its oci-layout file has no imageLayoutVersion`)
  const text = readUserFile(path.join(dir, 'index.json'), MAX_DOCUMENT_BYTES, 'image index')
  return checkIndex(parseDocument(text, 'index.json', where), where)
}

/** A blob of a layout directory, opened as a regular file (never a fifo or a device) of the size its descriptor says. */
const openLayoutBlob = (dir: string, hex: string, desc: Descriptor, what: string): fs.ReadStream => {
  const p = path.join(dir, 'blobs', 'sha256', hex)
  let fd: number
  try {
    fd = fs.openSync(p, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK)
  } catch (er) {
    if (isNotFound(er)) throw new PodctlError('EUSAGE', `${what} is missing (${p})`, 'the layout is incomplete; copy it again')
    throw er
  }
  const st = fs.fstatSync(fd)
  if (!st.isFile()) {
    fs.closeSync(fd)
    throw new PodctlError('EUSAGE', `${what} (${p}) is not a regular file`)
  }
  if (st.size !== desc.size) {
    fs.closeSync(fd)
    throw mismatch(what, `it has ${st.size} bytes, its descriptor says ${desc.size}`)
  }
  return fs.createReadStream('', { fd, highWaterMark: 256 * 1024 })
}

type StageDesc = (desc: Descriptor, what: string) => Promise<StagedBlob>

const fromIndex = async (index: ReturnType<typeof checkIndex>, stageDesc: StageDesc, where: string, tag: string | undefined, opts: ImportOptions): Promise<Staged> => {
  const platform = opts.platform ?? hostPlatform()
  const read = async (desc: Descriptor, what: string): Promise<Buffer> => readStaged(await stageDesc(desc, what), MAX_DOCUMENT_BYTES, what)
  const selected = await selectManifest(index, read, where, { ...(tag !== undefined ? { tag } : {}), platform, explicitPlatform: opts.platform !== undefined })
  const manifestHex = digestHex(selected.desc.digest)!
  const manifest = checkManifest(selected.doc, `image manifest ${selected.desc.digest} of ${where}`)
  const { configHex, config } = await stageRest(manifest, stageDesc, where, opts)
  // A ref name that is a whole NAME:TAG (podman save writes one) names the image; a bare tag (skopeo's) does not.
  const ref = selected.refName ?? index.manifests.find((m) => m.digest === selected.desc.digest)?.annotations?.[REF_NAME]
  const fromRef = ref !== undefined && /[:/]/.test(ref) ? tryParseName(ref) : undefined
  return { manifestHex, manifest, configHex, config, names: fromRef ? [fromRef] : [], where }
}

/** Stages and checks the config, then stages the layers. */
const stageRest = async (manifest: ImageManifest, stageDesc: StageDesc, where: string, opts: ImportOptions): Promise<{ configHex: string; config: ImageConfig }> => {
  const configWhat = `image config ${manifest.config.digest} of ${where}`
  const config = checkConfig(parseDocument(readStaged(await stageDesc(manifest.config, configWhat), MAX_DOCUMENT_BYTES, configWhat), 'image config', where), configWhat)
  if (opts.platform !== undefined && config.os !== undefined && config.architecture !== undefined && (config.os !== opts.platform.os || config.architecture !== opts.platform.architecture)) {
    throw new PodctlError('ENOIMAGE', `${where} is an image for ${config.os}/${config.architecture}, not ${formatPlatform(opts.platform)}`, 'leave --platform out, or give the source of the platform you want')
  }
  for (const [i, l] of manifest.layers.entries()) {
    const what = `layer ${i + 1} (${l.digest}) of ${where}`
    layerCompression(l.mediaType, what) // refused before anything is unpacked
    await stageDesc(l, what)
  }
  return { configHex: digestHex(manifest.config.digest)!, config }
}

const fromDocker = async (work: WorkDir, contents: ArchiveContents, where: string, ref: string | undefined, stageDesc: StageDesc, budget: StageBudget, opts: ImportOptions): Promise<Staged> => {
  const img = dockerImage(contents, where, ref)
  await stageBlob(work, once(img.manifestBytes), { hex: img.manifestHex, what: `the manifest of ${where}`, entry: 'its OCI manifest (written by podctl)' }, budget)
  const manifest = checkManifest(parseDocument(img.manifestBytes, 'image manifest', where), where)
  const { configHex, config } = await stageRest(manifest, stageDesc, where, opts)
  return { manifestHex: img.manifestHex, manifest, configHex, config, names: img.repoTags.map((t) => tryParseName(t)!), where }
}

/** Renders the staged image (unless its render exists) and commits it; see the module's comment. */
const renderAndCommit = async (dataDir: string, work: WorkDir, s: Staged, opts: ImportOptions): Promise<ImportResult> => {
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
