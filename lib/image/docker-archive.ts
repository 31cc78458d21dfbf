/**
 * A Docker archive (`docker save`, `podman save`, skopeo's docker-archive:)
 * as an OCI image: its manifest.json names a config file and layer tars by
 * their paths in the archive; podctl writes the OCI manifest those stand
 * for (config and layers by their digests, each layer's media type from
 * its first bytes), as podman does when it loads one. The same archive
 * always gives the same manifest, hence the same image digest.
 */
import { createHash } from 'node:crypto'
import { PodctlError } from '../errors.js'
import type { StagedBlob } from './blobs.js'
import { archiveFile, type ArchiveContents } from './archive.js'
import { MEDIA, layerMediaType, type Compression } from './oci.js'
import { digestOf, sameName, tryParseName } from './reference.js'

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
export const sniffCompression = (head: Buffer): Compression => {
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
export const dockerImage = (contents: ArchiveContents, where: string, ref?: string): DockerImage => {
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
