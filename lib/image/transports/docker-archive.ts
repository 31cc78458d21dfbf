/**
 * `docker-archive:FILE[:NAME[:TAG]]`: a Docker archive (`docker save`,
 * `podman save`, skopeo's docker-archive:), gzip-compressed or not, read
 * in one pass as an OCI archive is. Its manifest.json names a config file
 * and layer tars by their paths in the archive; podctl writes the OCI
 * manifest those stand for (config and layers by their digests, each
 * layer's media type from its first bytes), as podman does when it loads
 * one. The same archive always gives the same manifest, hence the same
 * image digest.
 */
import { createHash } from 'node:crypto'
import { PodctlError } from '../../errors.js'
import { stageBlob, type StagedBlob } from '../blobs.js'
import { archiveBlobs, archiveFile, archiveWhere, checkArchiveInput, stageArchive, type ArchiveContents } from '../archive.js'
import { pathAndRef, type ImageSource, type StageContext, type StagedImage, type Transport } from '../image-source.js'
import { MEDIA, checkManifest, layerMediaType, parseDocument, type Compression } from '../oci.js'
import { digestOf, sameName, tryParseName } from '../reference.js'
import { once, stageRest } from '../stage.js'

interface DockerEntry {
  Config: string
  RepoTags?: string[] | null
  Layers: string[]
}

export interface DockerImage {
  manifestBytes: Buffer
  manifestHex: string
  /** The names the archive gives it (RepoTags). */
  repoTags: string[]
}

/** What a blob's first bytes say it is compressed with. */
const sniffCompression = (head: Buffer): Compression => {
  if (head[0] === 0x1f && head[1] === 0x8b) return 'gzip'
  if (head[0] === 0x28 && head[1] === 0xb5 && head[2] === 0x2f && head[3] === 0xfd) return 'zstd'
  return 'none'
}

const bad = (where: string, why: string): PodctlError =>
  new PodctlError('EUSAGE', `${where} is not a Docker archive podctl can read: ${why}`, 'give an archive written by docker save, podman save or skopeo copy … docker-archive:FILE')

/**
 * The OCI manifest of the image in a Docker archive: the one whose
 * RepoTags include `ref` when given, else the only one.
 */
const dockerImage = (contents: ArchiveContents, where: string, ref?: string): DockerImage => {
  const text = contents.documents.get('manifest.json')
  if (text === undefined) throw bad(where, 'it has no manifest.json')
  const list = parseList(text, where)
  let entries = list
  if (ref !== undefined) {
    const want = tryParseName(ref)
    // skopeo's docker-archive:FILE:NAME[:TAG] names a RepoTag as docker reads names: trial/box:1.0 is docker.io/trial/box:1.0.
    entries = entries.filter((e) => (e.RepoTags ?? []).some((t) => t === ref || (want !== undefined && tryParseName(t) !== undefined && sameName(tryParseName(t)!, want))))
    if (entries.length === 0) throw new PodctlError('ENOIMAGE', `${where} has no image named ${ref}`, `it has: ${list.flatMap((e) => e.RepoTags ?? []).join(', ') || 'only unnamed images'}`)
  }
  if (entries.length !== 1) throw new PodctlError('EUSAGE', `${where} holds ${entries.length} images`, `choose one by name: docker-archive:PATH:NAME[:TAG] (it has ${list.flatMap((e) => e.RepoTags ?? []).join(', ') || 'unnamed images'})`)
  const e = entries[0]!
  const file = (name: string, what: string): StagedBlob => {
    const f = archiveFile(contents, name)
    if (f === undefined) throw bad(where, `its manifest.json names ${what} ${JSON.stringify(name)}, which it does not hold`)
    return f
  }
  const config = file(e.Config, 'the config')
  const layers = e.Layers.map((l) => file(l, 'the layer'))
  const manifest = {
    schemaVersion: 2,
    mediaType: MEDIA.ociManifest,
    config: { mediaType: MEDIA.ociConfig, digest: digestOf(config.hex), size: config.size },
    layers: layers.map((l) => ({ mediaType: layerMediaType(sniffCompression(l.head)), digest: digestOf(l.hex), size: l.size })),
  }
  const manifestBytes = Buffer.from(JSON.stringify(manifest))
  return { manifestBytes, manifestHex: createHash('sha256').update(manifestBytes).digest('hex'), repoTags: (e.RepoTags ?? []).filter((t) => tryParseName(t) !== undefined) }
}

const parseList = (text: Buffer, where: string): DockerEntry[] => {
  let v: unknown
  try {
    v = JSON.parse(text.toString('utf8'))
  } catch {
    throw bad(where, 'its manifest.json is not JSON')
  }
  if (!Array.isArray(v) || v.length === 0) throw bad(where, 'its manifest.json lists no image')
  return v.map((e): DockerEntry => {
    const o = e as Record<string, unknown>
    if (typeof o !== 'object' || o === null || typeof o.Config !== 'string' || !Array.isArray(o.Layers) || !o.Layers.every((l) => typeof l === 'string')) {
      throw bad(where, 'an entry of its manifest.json has no Config or Layers')
    }
    const tags = Array.isArray(o.RepoTags) ? o.RepoTags.filter((t): t is string => typeof t === 'string') : []
    return { Config: o.Config, Layers: o.Layers as string[], RepoTags: tags }
  })
}

/** The image (named `ref`, or the only one) of a Docker archive read into `contents`: its manifest written and staged, its config and layers found. */
export const stageDockerArchive = async (ctx: StageContext, contents: ArchiveContents, where: string, ref: string | undefined): Promise<StagedImage> => {
  const img = dockerImage(contents, where, ref)
  await stageBlob(ctx.work, once(img.manifestBytes), { hex: img.manifestHex, what: `the manifest of ${where}`, entry: 'its OCI manifest (written by podctl)' }, ctx.budget)
  const manifest = checkManifest(parseDocument(img.manifestBytes, 'image manifest', where), where)
  const { configHex, config } = await stageRest(ctx, manifest, archiveBlobs(ctx, where), where)
  return { manifestHex: img.manifestHex, manifest, configHex, config, names: img.repoTags.map((t) => tryParseName(t)!) }
}

/** `docker-archive:FILE[:NAME[:TAG]]` (FILE may be - for stdin). */
export const dockerArchiveTransport: Transport = {
  name: 'docker-archive',
  parse: (rest, text): ImageSource => {
    const [file, ref] = pathAndRef('docker-archive', rest, text)
    const where = archiveWhere(file, text)
    return {
      transport: 'docker-archive',
      where,
      check: () => checkArchiveInput(file),
      stage: async (ctx) => stageDockerArchive(ctx, await stageArchive(ctx, file, where), where, ref),
    }
  },
}
