/**
 * The JSON documents of the OCI image spec (and Docker's v2 equivalents,
 * which have the same shape): image indexes, manifests, configs and
 * descriptors, checked as far as podctl relies on them. Every document is
 * read with the bound of CONTRACT §13 (4 MiB) before it is parsed. Nothing
 * here touches the disk.
 */
import { PodctlError } from '../errors.js'
import { digestHex } from './reference.js'

/** The bound on a manifest, an index or a config. */
export const MAX_DOCUMENT_BYTES = 4 * 1024 * 1024

export const MEDIA = {
  ociIndex: 'application/vnd.oci.image.index.v1+json',
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  ociConfig: 'application/vnd.oci.image.config.v1+json',
  ociLayer: 'application/vnd.oci.image.layer.v1.tar',
  dockerList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
  dockerConfig: 'application/vnd.docker.container.image.v1+json',
} as const

const INDEX_TYPES: readonly string[] = [MEDIA.ociIndex, MEDIA.dockerList]
const MANIFEST_TYPES: readonly string[] = [MEDIA.ociManifest, MEDIA.dockerManifest]

export type Compression = 'none' | 'gzip' | 'zstd'

/** What each layer media type holds; anything else is refused, named. */
const LAYER_TYPES: Record<string, Compression> = {
  [MEDIA.ociLayer]: 'none',
  [`${MEDIA.ociLayer}+gzip`]: 'gzip',
  [`${MEDIA.ociLayer}+zstd`]: 'zstd',
  'application/vnd.oci.image.layer.nondistributable.v1.tar': 'none',
  'application/vnd.oci.image.layer.nondistributable.v1.tar+gzip': 'gzip',
  'application/vnd.oci.image.layer.nondistributable.v1.tar+zstd': 'zstd',
  'application/vnd.docker.image.rootfs.diff.tar': 'none',
  'application/vnd.docker.image.rootfs.diff.tar.gzip': 'gzip',
  'application/vnd.docker.image.rootfs.foreign.diff.tar.gzip': 'gzip',
  'application/vnd.docker.image.rootfs.diff.tar.zstd': 'zstd',
}

/** The OCI layer media type of each compression (Docker archives carry none: podctl names them so). */
export const layerMediaType = (c: Compression): string => (c === 'none' ? MEDIA.ociLayer : `${MEDIA.ociLayer}+${c}`)

export interface Platform {
  os: string
  architecture: string
  variant?: string
}

export interface Descriptor {
  mediaType: string
  digest: string
  size: number
  platform?: Platform
  annotations?: Record<string, string>
}

export interface ImageIndex {
  manifests: Descriptor[]
}

export interface ImageManifest {
  config: Descriptor
  layers: Descriptor[]
}

/** The part of an image config that podctl reads (its runtime defaults and metadata). */
export interface ImageConfig {
  created?: string
  architecture?: string
  os?: string
  config?: {
    Entrypoint?: string[] | null
    Cmd?: string[] | null
    Env?: string[] | null
    WorkingDir?: string
    User?: string
    Labels?: Record<string, string> | null
    ExposedPorts?: Record<string, unknown> | null
    StopSignal?: string
  }
  rootfs?: { type: string; diff_ids: string[] }
}

/** The annotation naming a manifest in an OCI layout's index.json. */
export const REF_NAME = 'org.opencontainers.image.ref.name'

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v)
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string')
const isStringMap = (v: unknown): v is Record<string, string> => isObj(v) && Object.values(v).every((s) => typeof s === 'string')

/** A document that is not what it should be: exit 2, naming it and where it came from. */
export const invalid = (what: string, where: string, why: string): PodctlError =>
  new PodctlError('EUSAGE', `invalid ${what} in ${where}: ${why}`, 'the image is damaged or not an OCI or Docker image; make it again, or check how it was copied')

/** Parses a JSON document of at most MAX_DOCUMENT_BYTES. */
export const parseDocument = (bytes: Buffer, what: string, where: string): Obj => {
  if (bytes.length > MAX_DOCUMENT_BYTES) {
    throw new PodctlError('EUSAGE', `${what} in ${where} is larger than 4 MiB`, 'podctl reads manifests, indexes and configs of at most 4 MiB; the image is damaged or hostile')
  }
  let v: unknown
  try {
    v = JSON.parse(bytes.toString('utf8'))
  } catch (er) {
    throw invalid(what, where, `not JSON (${(er as Error).message})`)
  }
  if (!isObj(v)) throw invalid(what, where, 'not a JSON object')
  return v
}

const checkDescriptor = (v: unknown, what: string, where: string): Descriptor => {
  if (!isObj(v)) throw invalid(what, where, 'a descriptor is not an object')
  if (typeof v.mediaType !== 'string') throw invalid(what, where, 'a descriptor has no mediaType')
  if (typeof v.digest !== 'string') throw invalid(what, where, 'a descriptor has no digest')
  if (digestHex(v.digest) === undefined) {
    const alg = v.digest.split(':')[0]
    throw invalid(what, where, alg !== 'sha256' ? `digest ${JSON.stringify(v.digest)} uses ${JSON.stringify(alg)}; podctl takes sha256 only` : `digest ${JSON.stringify(v.digest)} is not sha256:<64 hex digits>`)
  }
  if (typeof v.size !== 'number' || !Number.isSafeInteger(v.size) || v.size < 0) throw invalid(what, where, `descriptor ${v.digest} has no valid size`)
  const d: Descriptor = { mediaType: v.mediaType, digest: v.digest, size: v.size }
  if (v.platform !== undefined) {
    const p = v.platform
    if (!isObj(p) || typeof p.os !== 'string' || typeof p.architecture !== 'string') throw invalid(what, where, `descriptor ${v.digest} has an invalid platform`)
    d.platform = { os: p.os, architecture: p.architecture, ...(typeof p.variant === 'string' ? { variant: p.variant } : {}) }
  }
  if (v.annotations !== undefined) {
    if (!isStringMap(v.annotations)) throw invalid(what, where, `descriptor ${v.digest} has invalid annotations`)
    d.annotations = v.annotations
  }
  return d
}

/** Whether a parsed document is an index (it lists manifests) rather than a manifest. */
export const isIndexDocument = (doc: Obj, mediaType?: string): boolean =>
  (mediaType !== undefined && INDEX_TYPES.includes(mediaType)) || (typeof doc.mediaType === 'string' ? INDEX_TYPES.includes(doc.mediaType) : Array.isArray(doc.manifests))

export const checkIndex = (doc: Obj, where: string): ImageIndex => {
  if (doc.schemaVersion !== 2) throw invalid('image index', where, 'schemaVersion is not 2')
  if (!Array.isArray(doc.manifests)) throw invalid('image index', where, 'it has no manifests list')
  return { manifests: doc.manifests.map((m) => checkDescriptor(m, 'image index', where)) }
}

export const checkManifest = (doc: Obj, where: string): ImageManifest => {
  if (doc.schemaVersion !== 2) throw invalid('image manifest', where, 'schemaVersion is not 2 (Docker schema 1 images are not supported; convert them with skopeo copy)')
  if (typeof doc.mediaType === 'string' && !MANIFEST_TYPES.includes(doc.mediaType)) throw invalid('image manifest', where, `its mediaType is ${JSON.stringify(doc.mediaType)}`)
  if (!Array.isArray(doc.layers)) throw invalid('image manifest', where, 'it has no layers list')
  return { config: checkDescriptor(doc.config, 'image manifest', where), layers: doc.layers.map((l) => checkDescriptor(l, 'image manifest', where)) }
}

/** The compression of a layer of `mediaType`; EUSAGE naming the type when podctl cannot unpack it. */
export const layerCompression = (mediaType: string, where: string): Compression => {
  const c = LAYER_TYPES[mediaType]
  if (c === undefined) throw new PodctlError('EUSAGE', `layer media type ${JSON.stringify(mediaType)} of ${where} is not supported`, `podctl unpacks ${[...new Set(Object.keys(LAYER_TYPES))].filter((t) => t.startsWith('application/vnd.oci')).join(', ')} and their Docker equivalents`)
  return c
}

const optStrings = (v: unknown, field: string, where: string): string[] | null | undefined => {
  if (v === undefined || v === null) return v
  if (!isStrings(v)) throw invalid('image config', where, `${field} is not a list of strings`)
  return v
}

const optString = (v: unknown, field: string, where: string): string | undefined => {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') throw invalid('image config', where, `${field} is not a string`)
  return v
}

/** Checks the fields of a config that podctl reads; the rest is kept as it is in the blob. */
export const checkConfig = (doc: Obj, where: string): ImageConfig => {
  const c: ImageConfig = {}
  const created = optString(doc.created, 'created', where)
  if (created !== undefined) c.created = created
  const arch = optString(doc.architecture, 'architecture', where)
  if (arch !== undefined) c.architecture = arch
  const os = optString(doc.os, 'os', where)
  if (os !== undefined) c.os = os
  if (doc.config !== undefined && doc.config !== null) {
    const cc = doc.config
    if (!isObj(cc)) throw invalid('image config', where, 'config is not an object')
    const out: NonNullable<ImageConfig['config']> = {}
    const ep = optStrings(cc.Entrypoint, 'Entrypoint', where)
    if (ep !== undefined) out.Entrypoint = ep
    const cmd = optStrings(cc.Cmd, 'Cmd', where)
    if (cmd !== undefined) out.Cmd = cmd
    const env = optStrings(cc.Env, 'Env', where)
    if (env !== undefined) out.Env = env
    const wd = optString(cc.WorkingDir, 'WorkingDir', where)
    if (wd !== undefined) out.WorkingDir = wd
    const user = optString(cc.User, 'User', where)
    if (user !== undefined) out.User = user
    const sig = optString(cc.StopSignal, 'StopSignal', where)
    if (sig !== undefined) out.StopSignal = sig
    if (cc.Labels !== undefined && cc.Labels !== null) {
      if (!isStringMap(cc.Labels)) throw invalid('image config', where, 'Labels is not a map of strings')
      out.Labels = cc.Labels
    }
    if (isObj(cc.ExposedPorts)) out.ExposedPorts = cc.ExposedPorts
    c.config = out
  }
  if (doc.rootfs !== undefined) {
    const r = doc.rootfs
    if (!isObj(r) || !isStrings(r.diff_ids)) throw invalid('image config', where, 'rootfs.diff_ids is not a list of digests')
    c.rootfs = { type: typeof r.type === 'string' ? r.type : 'layers', diff_ids: r.diff_ids }
  }
  return c
}

/** Docker's and Node's names of this machine's platform, as the OCI spec spells them (GOARCH). */
export const hostPlatform = (): Platform => {
  const arch: Record<string, string> = { x64: 'amd64', ia32: '386', arm64: 'arm64', arm: 'arm', ppc64: 'ppc64le', s390x: 's390x', riscv64: 'riscv64', loong64: 'loong64', mips: 'mips', mipsel: 'mipsle' }
  const p: Platform = { os: process.platform === 'win32' ? 'windows' : process.platform, architecture: arch[process.arch] ?? process.arch }
  if (process.arch === 'arm') {
    const v = (process.config.variables as { arm_version?: string }).arm_version
    if (v !== undefined) p.variant = `v${v}`
  }
  return p
}

/** Parses `--platform OS/ARCH[/VARIANT]`. */
export const parsePlatform = (text: string): Platform => {
  const parts = text.split('/')
  if (parts.length < 2 || parts.length > 3 || parts.some((p) => !/^[a-z0-9_.-]+$/.test(p))) {
    throw new PodctlError('EUSAGE', `invalid --platform ${JSON.stringify(text)}: expected OS/ARCH or OS/ARCH/VARIANT`, 'for example: linux/amd64, linux/arm64, linux/arm/v7')
  }
  return { os: parts[0]!, architecture: parts[1]!, ...(parts[2] !== undefined ? { variant: parts[2] } : {}) }
}

export const formatPlatform = (p: Platform): string => `${p.os}/${p.architecture}${p.variant ? `/${p.variant}` : ''}`
