/**
 * Test images, made with the tools people use and no registry: umoci
 * builds an OCI layout from busybox-static, skopeo converts it to the
 * archive formats, and tar-stream writes layers by hand (the hostile ones
 * too). Not a test file (test/helpers/ is excluded from discovery).
 */
import { spawnSync } from 'node:child_process'
import { createHash, randomBytes as cryptoRandomBytes } from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import zlib from 'node:zlib'
import tarStream from 'tar-stream'

/** Why the image tools are missing, or undefined when umoci, skopeo and busybox are all there. */
export const missingTools = (): string | undefined => {
  for (const [tool, pkg] of [['umoci', 'umoci'], ['skopeo', 'skopeo'], ['busybox', 'busybox-static']] as const) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} is not installed (Debian package ${pkg})`
  }
  return undefined
}

const run = (cmd: string, args: string[], cwd?: string): string => {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...(cwd ? { cwd } : {}) })
  if (r.error || r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.error?.message ?? r.stderr}`)
  return r.stdout
}

export const BUSYBOX = fs.realpathSync(spawnSync('sh', ['-c', 'command -v busybox'], { encoding: 'utf8' }).stdout.trim() || '/bin/busybox')

/** What the busybox test image's /etc/os-release says. */
export const OS_RELEASE = 'NAME="podctl test image"\nID=podctl-test\n'

export interface BuiltImage {
  /** The OCI layout directory. */
  layout: string
  tag: string
}

/** The config the busybox test image has unless `config` says otherwise (umoci config's flags). */
export const DEFAULT_CONFIG = ['--config.entrypoint', '/bin/sh', '--config.cmd', '-c', '--config.cmd', 'cat /etc/os-release', '--config.env', 'PATH=/bin', '--config.env', 'GREETING=hello', '--config.workingdir', '/srv', '--config.user', '0:0', '--config.label', 'team=infra']

export interface BusyboxImageOptions {
  tag?: string
  extraMB?: number
  /** More files of the image (path below its root: content), written before it is packed. */
  files?: Record<string, string>
  /** Symbolic links of the image (path below its root: target), made as they are, wherever they point. */
  symlinks?: Record<string, string>
  /** umoci config's flags in the place of DEFAULT_CONFIG. */
  config?: string[]
}

/** The busybox applets the test image links to. */
const APPLETS = ['sh', 'cat', 'ls', 'echo', 'true', 'id', 'stat', 'pwd', 'env', 'sleep', 'touch', 'rm', 'grep', 'mkdir']

/**
 * An OCI layout at `dir` holding `tag`: busybox with a few links, a
 * /etc/os-release, a file in /srv, and a config (entrypoint, cmd, env,
 * working dir, user, label), built the way a user builds one with umoci.
 * `extraMB` adds a file of that many MiB of incompressible bytes.
 */
export const buildBusyboxImage = (dir: string, opts: BusyboxImageOptions = {}): BuiltImage => {
  const tag = opts.tag ?? 'test'
  const layout = path.join(dir, 'layout')
  const bundle = path.join(dir, 'bundle')
  run('umoci', ['init', '--layout', layout])
  run('umoci', ['new', '--image', `${layout}:${tag}`])
  run('umoci', ['unpack', '--image', `${layout}:${tag}`, bundle])
  const root = path.join(bundle, 'rootfs')
  for (const d of ['bin', 'etc', 'srv', 'tmp']) fs.mkdirSync(path.join(root, d), { recursive: true })
  fs.chmodSync(path.join(root, 'tmp'), 0o1777)
  fs.copyFileSync(BUSYBOX, path.join(root, 'bin/busybox'))
  fs.chmodSync(path.join(root, 'bin/busybox'), 0o755)
  for (const l of APPLETS) fs.symlinkSync('busybox', path.join(root, 'bin', l))
  fs.writeFileSync(path.join(root, 'etc/os-release'), OS_RELEASE)
  fs.writeFileSync(path.join(root, 'srv/data'), 'data\n', { mode: 0o640 })
  fs.chownSync(path.join(root, 'srv/data'), 1000, 1000)
  fs.linkSync(path.join(root, 'srv/data'), path.join(root, 'srv/hardlink'))
  if (opts.extraMB) fs.writeFileSync(path.join(root, 'srv/blob'), randomBytes(opts.extraMB * 1024 * 1024))
  for (const [rel, content] of Object.entries(opts.files ?? {})) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true })
    fs.writeFileSync(path.join(root, rel), content)
  }
  for (const [rel, target] of Object.entries(opts.symlinks ?? {})) {
    fs.rmSync(path.join(root, rel), { recursive: true, force: true })
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true })
    fs.symlinkSync(target, path.join(root, rel))
  }
  run('umoci', ['repack', '--image', `${layout}:${tag}`, bundle])
  run('umoci', ['config', '--image', `${layout}:${tag}`, ...(opts.config ?? DEFAULT_CONFIG)])
  run('umoci', ['gc', '--layout', layout])
  fs.rmSync(bundle, { recursive: true, force: true })
  return { layout, tag }
}

/** Deterministic bytes that do not compress (a seeded sha256 chain). */
export const randomBytes = (n: number, seed = 'podctl'): Buffer => {
  const out = Buffer.allocUnsafe(n)
  let block = createHash('sha256').update(seed).digest()
  for (let off = 0; off < n; off += 32) {
    block = createHash('sha256').update(block).digest()
    block.copy(out, off, 0, Math.min(32, n - off))
  }
  return out
}

/** skopeo copy from a layout to another transport (oci-archive:FILE, docker-archive:FILE[:REF], oci:DIR:TAG). */
export const skopeoCopy = (from: string, to: string): void => {
  run('skopeo', ['copy', '--quiet', from, to])
}

// ---- images written by hand ---------------------------------------------

/** One entry of a hand-made layer (tar-stream's header, plus its content). */
export interface Entry {
  name: string
  /** pax-header: `content` is written as a PAX header's raw records, for the entry after it. */
  type?: 'file' | 'directory' | 'symlink' | 'link' | 'character-device' | 'block-device' | 'fifo' | 'pax-header'
  content?: string | Buffer
  linkname?: string
  mode?: number
  uid?: number
  gid?: number
  devmajor?: number
  devminor?: number
  mtime?: Date
  pax?: Record<string, string>
}

const MTIME = new Date('2024-01-02T03:04:05Z')

/** A tar of `entries`, written by tar-stream (names exactly as given: nothing is sanitized). */
export const layerTar = async (entries: Entry[]): Promise<Buffer> => {
  const pack = tarStream.pack()
  const chunks: Buffer[] = []
  pack.on('data', (c: unknown) => void chunks.push(c as Buffer))
  const done = new Promise<void>((resolve, reject) => {
    pack.on('end', () => resolve())
    pack.on('error', reject)
  })
  for (const e of entries) {
    const type = e.type ?? 'file'
    const content = typeof e.content === 'string' ? Buffer.from(e.content) : (e.content ?? Buffer.alloc(0))
    const header: Parameters<typeof pack.entry>[0] = {
      name: e.name,
      // tar-stream packs no PAX header of our own making: it goes in as a file and is re-typed below.
      type: type === 'pax-header' ? 'file' : type,
      mode: e.mode ?? (type === 'directory' ? 0o755 : 0o644),
      uid: e.uid ?? 0,
      gid: e.gid ?? 0,
      mtime: e.mtime ?? MTIME,
      ...(e.linkname !== undefined ? { linkname: e.linkname } : {}),
      ...(e.devmajor !== undefined ? { devmajor: e.devmajor, devminor: e.devminor ?? 0 } : {}),
      ...(e.pax !== undefined ? { pax: e.pax } : {}),
      ...(type === 'file' || type === 'pax-header' ? { size: content.length } : {}),
    }
    await new Promise<void>((resolve, reject) => {
      if (type === 'file' || type === 'pax-header') pack.entry(header, content, (er) => (er ? reject(er) : resolve()))
      else pack.entry(header, (er) => (er ? reject(er) : resolve()))
    })
  }
  pack.finalize()
  await done
  return retypePaxHeaders(Buffer.concat(chunks), new Set(entries.filter((e) => e.type === 'pax-header').map((e) => e.name)))
}

/** Makes the entries named in `names` PAX headers (typeflag x), fixing each header's checksum. */
const retypePaxHeaders = (tar: Buffer, names: Set<string>): Buffer => {
  for (let off = 0; off + 512 <= tar.length && tar[off] !== 0; ) {
    const name = tar.toString('utf8', off, off + 100).replace(/\0.*$/s, '')
    const size = parseInt(tar.toString('ascii', off + 124, off + 136).replace(/\0.*$/s, '').trim() || '0', 8)
    if (names.has(name)) {
      tar[off + 156] = 'x'.charCodeAt(0)
      tar.fill(0x20, off + 148, off + 156)
      let sum = 0
      for (let i = off; i < off + 512; i++) sum += tar[i]!
      tar.write(`${sum.toString(8).padStart(6, '0')}\0 `, off + 148, 'ascii')
    }
    off += 512 + Math.ceil(size / 512) * 512
  }
  return tar
}

/** PAX records (`LEN KEY=VALUE\n`) of raw values: binary extended attributes as GNU tar writes them. */
export const paxRecords = (kv: Record<string, Buffer>): Buffer =>
  Buffer.concat(
    Object.entries(kv).map(([k, v]) => {
      const body = Buffer.concat([Buffer.from(` ${k}=`), v, Buffer.from('\n')])
      let len = body.length + 1
      while (String(len).length + body.length !== len) len = String(len).length + body.length
      return Buffer.concat([Buffer.from(String(len)), body])
    }),
  )

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex')

export interface HandLayout {
  layout: string
  /** The image's digest (its manifest's). */
  digest: string
  /** The hex of each layer blob as stored. */
  layers: string[]
}

export interface HandImage {
  /** Each layer's uncompressed tar. */
  layers: Buffer[]
  gzip?: boolean
  tag?: string
  config?: Record<string, unknown>
  /** Changes the manifest JSON before it is written (hostile manifests). */
  manifest?: (m: Record<string, unknown>) => Record<string, unknown>
  /** Change a layer's bytes after its digest was taken (a tampered blob). */
  tamper?: boolean
  /** The diff_ids to write instead of the true ones. */
  diffIds?: string[]
}

/** A writer of blobs into OCI layout `layout`'s blobs/sha256/: each by its digest's hex, which it returns. */
const blobWriter = (layout: string): ((b: Buffer) => string) => {
  const blobs = path.join(layout, 'blobs', 'sha256')
  fs.mkdirSync(blobs, { recursive: true })
  return (b) => {
    const h = sha(b)
    fs.writeFileSync(path.join(blobs, h), b)
    return h
  }
}

/** Writes an OCI layout of the layers given (an image nobody could build with umoci: the hostile ones). */
export const writeLayout = (dir: string, img: HandImage): HandLayout => {
  const layout = path.join(dir, 'layout')
  const put = blobWriter(layout)
  const layerHexes: string[] = []
  const layerDescs = img.layers.map((tar) => {
    const blob = img.gzip ? zlib.gzipSync(tar) : tar
    const h = put(blob)
    layerHexes.push(h)
    if (img.tamper) {
      const bad = Buffer.from(blob)
      bad[bad.length - 1] = bad[bad.length - 1]! ^ 0xff
      fs.writeFileSync(path.join(layout, 'blobs', 'sha256', h), bad)
    }
    return { mediaType: `application/vnd.oci.image.layer.v1.tar${img.gzip ? '+gzip' : ''}`, digest: `sha256:${h}`, size: blob.length }
  })
  const config = img.config ?? {
    architecture: hostArch(),
    os: 'linux',
    created: '2024-01-02T03:04:05Z',
    config: { Entrypoint: ['/bin/sh'], Env: ['PATH=/bin'] },
    rootfs: { type: 'layers', diff_ids: img.diffIds ?? img.layers.map((l) => `sha256:${sha(l)}`) },
  }
  const configBytes = Buffer.from(JSON.stringify(config))
  const configHex = put(configBytes)
  let manifest: Record<string, unknown> = {
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: `sha256:${configHex}`, size: configBytes.length },
    layers: layerDescs,
  }
  if (img.manifest) manifest = img.manifest(manifest)
  const manifestBytes = Buffer.from(JSON.stringify(manifest))
  const manifestHex = put(manifestBytes)
  fs.writeFileSync(path.join(layout, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}')
  fs.writeFileSync(
    path.join(layout, 'index.json'),
    JSON.stringify({
      schemaVersion: 2,
      manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: `sha256:${manifestHex}`, size: manifestBytes.length, annotations: { 'org.opencontainers.image.ref.name': img.tag ?? 'test' } }],
    }),
  )
  return { layout, digest: `sha256:${manifestHex}`, layers: layerHexes }
}

/** This machine's architecture as the OCI spec spells it. */
export const hostArch = (): string => ({ x64: 'amd64', arm64: 'arm64', arm: 'arm', ia32: '386' })[process.arch as string] ?? process.arch

/** Every path below `root` with its kind (f, d, l -> target), sorted: what a tree looks like. */
export const treeOf = (root: string): string[] => {
  const out: string[] = []
  const walk = (rel: string): void => {
    for (const e of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`
      if (e.isSymbolicLink()) out.push(`l ${r} -> ${fs.readlinkSync(path.join(root, r))}`)
      else if (e.isDirectory()) {
        out.push(`d ${r}`)
        walk(r)
      } else out.push(`f ${r}`)
    }
  }
  walk('')
  return out.sort()
}

// ---- what the run side leaves on the host ----------------------------------

/** Mount points of overlay file systems at or below `dir` (from /proc/self/mountinfo, octal escapes undone). */
export const overlaysUnder = (dir: string): string[] => {
  const real = fs.realpathSync(dir)
  return fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' - '))
    .filter(([, fsPart]) => fsPart?.startsWith('overlay '))
    .map(([head]) => head!.split(' ')[4]!.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))))
    .filter((p) => p === real || p.startsWith(`${real}/`))
}

/** Takes down every overlay below `dir` (a test's teardown, after a failure left one). */
export const detachOverlaysUnder = (dir: string): void => {
  if (!fs.existsSync(dir)) return
  for (const p of overlaysUnder(dir).reverse()) spawnSync('umount', ['-l', p])
}

/** The names in `<data>/images/renders/`. */
export const renderKeys = (dataDir: string): string[] => {
  const d = path.join(dataDir, 'images', 'renders')
  return fs.existsSync(d) ? fs.readdirSync(d).sort() : []
}

/** Every path below `root` with what it is and holds (owner, mode, a digest of a file's bytes, a link's target): to see that a tree did not change. */
export const treeState = (root: string): string[] =>
  treeOf(root).map((line) => {
    const rel = line.slice(2).replace(/ -> .*$/, '')
    const st = fs.lstatSync(path.join(root, rel))
    const bytes = st.isFile() ? ` ${createHash('sha256').update(fs.readFileSync(path.join(root, rel))).digest('hex').slice(0, 16)}` : ''
    return `${line} ${st.uid}:${st.gid} ${(st.mode & 0o7777).toString(8)} ${st.mtimeMs}${bytes}`
  })

// ---- bombs: archives that are small to send and huge to stage ------------

/** A ustar header of a regular file (typeflag 0) of `size` bytes. */
const ustarHeader = (name: string, size: number): Buffer => {
  const h = Buffer.alloc(512)
  h.write(name, 0, 100, 'utf8')
  h.write('0000644\0', 100, 'ascii')
  h.write('0000000\0', 108, 'ascii')
  h.write('0000000\0', 116, 'ascii')
  h.write(`${size.toString(8).padStart(11, '0')}\0`, 124, 'ascii')
  h.write(`${Math.floor(MTIME.getTime() / 1000).toString(8).padStart(11, '0')}\0`, 136, 'ascii')
  h.fill(0x20, 148, 156)
  h.write('0', 156, 'ascii')
  h.write('ustar\0', 257, 'ascii')
  h.write('00', 263, 'ascii')
  let sum = 0
  for (const b of h) sum += b
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii')
  return h
}

/** Parts of a tar: bytes as they are, or a run of zeros (written sparse when the tar is not compressed). */
type Part = Buffer | { zeros: number }

const padTo512 = (n: number): Part => ({ zeros: (512 - (n % 512)) % 512 })

/** A tar entry of `content`. */
const tarEntry = (name: string, content: Buffer): Part[] => [ustarHeader(name, content.length), content, padTo512(content.length)]

const TAR_END: Part = { zeros: 1024 }
const partsSize = (parts: Part[]): number => parts.reduce((n, p) => n + (Buffer.isBuffer(p) ? p.length : p.zeros), 0)

/** sha256 of the bytes `parts` stand for. */
const hashParts = (parts: Part[]): string => {
  const h = createHash('sha256')
  const zeros = Buffer.alloc(1024 * 1024)
  for (const p of parts) {
    if (Buffer.isBuffer(p)) h.update(p)
    else for (let left = p.zeros; left > 0; left -= zeros.length) h.update(left >= zeros.length ? zeros : zeros.subarray(0, left))
  }
  return h.digest('hex')
}

/** Writes `parts` to `file`: through gzip, or with runs of zeros as holes (a sparse file, no disk taken). */
const writeParts = async (file: string, parts: Part[], gzip: boolean): Promise<void> => {
  if (gzip) {
    const zeros = Buffer.alloc(1024 * 1024)
    async function* bytes(): AsyncIterable<Buffer> {
      for (const p of parts) {
        if (Buffer.isBuffer(p)) yield p
        else for (let left = p.zeros; left > 0; left -= zeros.length) yield left >= zeros.length ? zeros : zeros.subarray(0, left)
      }
    }
    await pipeline(Readable.from(bytes()), zlib.createGzip(), fs.createWriteStream(file))
    return
  }
  const fd = fs.openSync(file, 'w')
  try {
    let pos = 0
    for (const p of parts) {
      if (Buffer.isBuffer(p)) {
        fs.writeSync(fd, p, 0, p.length, pos)
        pos += p.length
      } else pos += p.zeros
    }
    fs.ftruncateSync(fd, pos)
  } finally {
    fs.closeSync(fd)
  }
}

const bombHexes = new Map<number, string>()
/** The digest of a bomb's layer, hashed once per size. */
const bombLayerHex = (zerosMiB: number, layer: Part[]): string => {
  let hex = bombHexes.get(zerosMiB)
  if (hex === undefined) bombHexes.set(zerosMiB, (hex = hashParts(layer)))
  return hex
}

export type BombKind = 'docker-archive' | 'oci-archive' | 'oci-layout'

/**
 * An image whose one layer is a tar of `zerosMiB` MiB of zeros, stored
 * uncompressed (what an archive's staging writes in full): a Docker
 * archive or an OCI archive (gzip-compressed whole when `gzip`: a few
 * hundred KiB to send), or an OCI layout (its layer blob a sparse file).
 * Returns the path of the archive or layout, named `bomb:1`.
 */
export const writeBomb = async (dir: string, kind: BombKind, zerosMiB: number, gzip = false): Promise<string> => {
  const layer: Part[] = [...embed('zeros', [{ zeros: zerosMiB * 1024 * 1024 }]), TAR_END]
  const layerHex = bombLayerHex(zerosMiB, layer)
  const config = Buffer.from(JSON.stringify({ architecture: hostArch(), os: 'linux', config: { Cmd: ['/zeros'] }, rootfs: { type: 'layers', diff_ids: [`sha256:${layerHex}`] } }))
  const configHex = sha(config)
  if (kind === 'docker-archive') {
    const manifest = Buffer.from(JSON.stringify([{ Config: 'config.json', RepoTags: ['bomb:1'], Layers: ['layer.tar'] }]))
    const file = path.join(dir, `bomb-docker.tar${gzip ? '.gz' : ''}`)
    // The layer first, as an attacker orders it: it is staged before anything says what it is.
    await writeParts(file, [...embed('layer.tar', layer), ...tarEntry('config.json', config), ...tarEntry('manifest.json', manifest), TAR_END], gzip)
    return file
  }
  const manifest = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: `sha256:${configHex}`, size: config.length }, layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: `sha256:${layerHex}`, size: partsSize(layer) }] }))
  const manifestHex = sha(manifest)
  const index = Buffer.from(JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: `sha256:${manifestHex}`, size: manifest.length, annotations: { 'org.opencontainers.image.ref.name': 'bomb:1' } }] }))
  const ociLayout = Buffer.from('{"imageLayoutVersion":"1.0.0"}')
  if (kind === 'oci-layout') {
    const layout = path.join(dir, 'bomb-layout')
    fs.mkdirSync(path.join(layout, 'blobs', 'sha256'), { recursive: true })
    await writeParts(path.join(layout, 'blobs', 'sha256', layerHex), layer, false)
    fs.writeFileSync(path.join(layout, 'blobs', 'sha256', configHex), config)
    fs.writeFileSync(path.join(layout, 'blobs', 'sha256', manifestHex), manifest)
    fs.writeFileSync(path.join(layout, 'oci-layout'), ociLayout)
    fs.writeFileSync(path.join(layout, 'index.json'), index)
    return layout
  }
  const file = path.join(dir, `bomb-oci.tar${gzip ? '.gz' : ''}`)
  await writeParts(file, [...embed(`blobs/sha256/${layerHex}`, layer), ...tarEntry(`blobs/sha256/${configHex}`, config), ...tarEntry(`blobs/sha256/${manifestHex}`, manifest), ...tarEntry('oci-layout', ociLayout), ...tarEntry('index.json', index), TAR_END], gzip)
  return file
}

/** A tar entry whose content is the tar `inner` (its parts kept, so its zeros stay holes). */
const embed = (name: string, inner: Part[]): Part[] => {
  const size = partsSize(inner)
  return [ustarHeader(name, size), ...inner, padTo512(size)]
}

/**
 * An OCI layout `r` whose one layer is `mib` MiB of random bytes that
 * claim to be gzip: what skopeo copies as it is, as a registry's huge blob
 * would be.
 */
export const writeRandomLayout = (dir: string, mib: number): string => {
  const layout = path.join(dir, 'random-layout')
  const put = blobWriter(layout)
  const layer = cryptoRandomBytes(mib * 1024 * 1024)
  const layerHex = put(layer)
  const config = Buffer.from(JSON.stringify({ architecture: hostArch(), os: 'linux', rootfs: { type: 'layers', diff_ids: [`sha256:${'0'.repeat(64)}`] } }))
  const configHex = put(config)
  const manifest = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: `sha256:${configHex}`, size: config.length }, layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: `sha256:${layerHex}`, size: layer.length }] }))
  const manifestHex = put(manifest)
  fs.writeFileSync(path.join(layout, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}')
  fs.writeFileSync(path.join(layout, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: `sha256:${manifestHex}`, size: manifest.length, annotations: { 'org.opencontainers.image.ref.name': 'r' } }] }))
  return layout
}

/**
 * A registry of one OCI layout, as the distribution spec's pull side
 * (`GET /v2/`, `/v2/NAME/manifests/REF`, `/v2/NAME/blobs/DIGEST`), over
 * plain HTTP on 127.0.0.1, for skopeo to pull from: any NAME serves the
 * layout, a REF is a tag (the layout's ref.name annotation) or a digest.
 * Resolves to its `host:port` once it listens; closed at teardown.
 */
export const serveLayout = async (t: { teardown(fn: () => void | Promise<void>): void }, layout: string): Promise<string> => {
  const index = JSON.parse(fs.readFileSync(path.join(layout, 'index.json'), 'utf8')) as { manifests: { digest: string; mediaType: string; annotations?: Record<string, string> }[] }
  const blob = (digest: string): Buffer | undefined => {
    const m = /^sha256:([a-f0-9]{64})$/.exec(digest)
    const p = m === null ? undefined : path.join(layout, 'blobs', 'sha256', m[1]!)
    return p !== undefined && fs.existsSync(p) ? fs.readFileSync(p) : undefined
  }
  const server = http.createServer((req, res) => {
    const url = req.url ?? ''
    const send = (status: number, body: Buffer | string, headers: Record<string, string> = {}): void => {
      res.writeHead(status, { 'Content-Length': String(Buffer.byteLength(body)), 'Docker-Distribution-API-Version': 'registry/2.0', ...headers })
      res.end(req.method === 'HEAD' ? undefined : body)
    }
    if (url === '/v2/' || url === '/v2') return send(200, '{}', { 'Content-Type': 'application/json' })
    const m = /^\/v2\/(.+)\/(manifests|blobs)\/([^/]+)$/.exec(url)
    if (m === null) return send(404, '{"errors":[{"code":"NAME_UNKNOWN"}]}')
    const ref = decodeURIComponent(m[3]!)
    if (m[2] === 'manifests') {
      const desc = index.manifests.find((d) => d.digest === ref || d.annotations?.['org.opencontainers.image.ref.name'] === ref)
      const body = desc === undefined ? undefined : blob(desc.digest)
      if (desc === undefined || body === undefined) return send(404, '{"errors":[{"code":"MANIFEST_UNKNOWN"}]}')
      return send(200, body, { 'Content-Type': desc.mediaType, 'Docker-Content-Digest': desc.digest })
    }
    const body = blob(ref)
    if (body === undefined) return send(404, '{"errors":[{"code":"BLOB_UNKNOWN"}]}')
    return send(200, body, { 'Content-Type': 'application/octet-stream', 'Docker-Content-Digest': ref })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return `localhost:${(server.address() as { port: number }).port}`
}
