/**
 * What `image inspect` shows of an image: its record and the runtime
 * defaults of its config (what podman applies to a container of it), as
 * JSON and as key=value lines.
 */
import { PodctlError, oneLine } from '../errors.js'
import { readOwnFile } from '../fs/read.js'
import { utcMillis } from './index-file.js'
import { blobPath } from './layout.js'
import { MAX_DOCUMENT_BYTES, checkConfig, parseDocument, type ImageConfig } from './oci.js'
import { digestHex, shortHex } from './reference.js'
import { lookupImage } from './store.js'

export interface ImageInspect {
  digest: string
  names: string[]
  created: string | null
  imported_at: string
  os: string | null
  architecture: string | null
  size_bytes: number
  config: string
  layers: string[]
  entrypoint: string[] | null
  cmd: string[] | null
  env: string[]
  working_dir: string
  user: string
  labels: Record<string, string>
  stop_signal: string | null
}

/** The stored config of an image (what its pods' apps default to). */
export const readImageConfig = (dataDir: string, configDigest: string): ImageConfig => {
  const hex = digestHex(configDigest)!
  const f = readOwnFile(blobPath(dataDir, hex), MAX_DOCUMENT_BYTES + 1)
  if (!('bytes' in f)) throw new PodctlError('EFAILED', `the config of the image (${configDigest}) is missing from the store`, 'import the image again')
  return checkConfig(parseDocument(f.bytes, 'image config', `the store (config sha256:${shortHex(hex)})`), 'the store')
}

/** The image `text` names (NAME[:TAG] or a digest prefix), inspected. */
export const inspectImage = (dataDir: string, text: string): ImageInspect => {
  const f = lookupImage(dataDir, text)
  const c = readImageConfig(dataDir, f.record.config)
  const cc = c.config ?? {}
  return {
    digest: f.record.digest,
    names: f.names,
    created: utcMillis(f.record.created),
    imported_at: utcMillis(f.record.imported_at) ?? f.record.imported_at,
    os: f.record.os,
    architecture: f.record.architecture,
    size_bytes: f.record.size_bytes,
    config: f.record.config,
    layers: f.record.layers,
    entrypoint: cc.Entrypoint ?? null,
    cmd: cc.Cmd ?? null,
    env: cc.Env ?? [],
    working_dir: cc.WorkingDir ?? '',
    user: cc.User ?? '',
    labels: cc.Labels ?? {},
    stop_signal: cc.StopSignal ?? null,
  }
}

/** key=value lines, one value a line (a name, a variable, a label each), every value on one line. */
export const inspectLines = (v: ImageInspect): string => {
  const lines = [`digest=${v.digest}`, ...v.names.map((n) => `name=${oneLine(n)}`), `created=${v.created ?? ''}`, `imported=${v.imported_at}`, `os=${v.os ?? ''}`, `architecture=${v.architecture ?? ''}`, `size=${v.size_bytes}`, `layers=${v.layers.length}`]
  lines.push(`entrypoint=${v.entrypoint === null ? '' : oneLine(JSON.stringify(v.entrypoint))}`, `cmd=${v.cmd === null ? '' : oneLine(JSON.stringify(v.cmd))}`)
  for (const e of v.env) lines.push(`env=${oneLine(e)}`)
  lines.push(`working_dir=${oneLine(v.working_dir)}`, `user=${oneLine(v.user)}`)
  for (const [k, val] of Object.entries(v.labels)) lines.push(`label-${oneLine(k)}=${oneLine(val)}`)
  if (v.stop_signal !== null) lines.push(`stop_signal=${oneLine(v.stop_signal)}`)
  return `${lines.join('\n')}\n`
}

/** Bytes as podman shows them: SI units, three significant digits (1.99 MB). */
export const humanSize = (n: number): string => {
  if (n < 1000) return `${n} B`
  const units = ['kB', 'MB', 'GB', 'TB', 'PB']
  let v = n
  let u = -1
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000
    u++
  }
  return `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ${units[u]}`
}
