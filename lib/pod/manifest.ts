/**
 * The pod manifest (CONTRACT §3, `podctl/v1`): its types and a validator
 * that reports every problem with the path of the field and what is wrong.
 * Unknown fields are errors. Nothing here touches the disk.
 */
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { mountProblems } from '../volume/plan.js'

export const API_VERSION = 'podctl/v1'
/** Manifests larger than this are refused before parsing. */
export const MAX_MANIFEST_BYTES = 4 * 1024 * 1024

export type AppType = 'init' | 'regular' | 'ephemeral'

export interface Mount {
  volume: string
  path: string
  readOnly?: boolean
}

export interface App {
  name: string
  type?: AppType
  exec: string[]
  env?: Record<string, string>
  workingDirectory?: string
  mounts?: Mount[]
}

export interface ProjectedFile {
  content: string
  mode?: number
}

export type AccessMode = 'ReadWriteOnce' | 'ReadWriteMany'

export type Volume =
  | { name: string; kind: 'empty' }
  | { name: string; kind: 'host'; source: string; readOnly?: boolean }
  | { name: string; kind: 'files'; files: Record<string, ProjectedFile> }
  | { name: string; kind: 'persistent'; claim: string; readOnly?: boolean; accessMode?: AccessMode }

export interface PodManifest {
  apiVersion: typeof API_VERSION
  name?: string
  labels?: Record<string, string>
  annotations?: Record<string, string>
  mutable?: boolean
  apps: App[]
  volumes?: Volume[]
}

export const NAME_RE = /^[a-z0-9][a-z0-9-]{0,62}$/
const NAME_RULE = 'must be 1 to 63 characters of a-z, 0-9 and "-", starting with a letter or digit'
const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/

/** One thing wrong with a manifest: where, and what. */
export interface ManifestProblem {
  path: string
  problem: string
}

export interface ValidateOptions {
  /** Ephemeral apps only come from `app add`; a stored manifest may have them. */
  allowEphemeral?: boolean
}

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v)
const describe = (v: unknown): string =>
  v === undefined ? 'missing' : v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `${typeof v} ${JSON.stringify(v)}`

class Checker {
  readonly problems: ManifestProblem[] = []
  add(p: string, problem: string): void {
    this.problems.push({ path: p || '(top level)', problem })
  }

  fields(o: Obj, at: string, allowed: readonly string[]): void {
    for (const k of Object.keys(o)) {
      if (!allowed.includes(k)) this.add(join(at, k), `unknown field (allowed: ${allowed.join(', ')})`)
    }
  }

  string(v: unknown, at: string, opts: { nonEmpty?: boolean } = {}): v is string {
    if (typeof v !== 'string') {
      this.add(at, `must be a string, not ${describe(v)}`)
      return false
    }
    if (v.includes('\0')) {
      this.add(at, 'must not contain a NUL character')
      return false
    }
    if (opts.nonEmpty && v === '') {
      this.add(at, 'must not be empty')
      return false
    }
    return true
  }

  name(v: unknown, at: string): v is string {
    if (!this.string(v, at)) return false
    if (!NAME_RE.test(v)) {
      this.add(at, `${JSON.stringify(v)} ${NAME_RULE}`)
      return false
    }
    return true
  }

  bool(v: unknown, at: string): void {
    if (typeof v !== 'boolean') this.add(at, `must be true or false, not ${describe(v)}`)
  }

  stringMap(v: unknown, at: string, keyCheck?: (k: string, at: string) => void): void {
    if (!isObj(v)) {
      this.add(at, `must be an object of strings, not ${describe(v)}`)
      return
    }
    for (const [k, val] of Object.entries(v)) {
      if (k === '' || k.includes('\0')) this.add(at, `has an empty or invalid key ${JSON.stringify(k)}`)
      else keyCheck?.(k, join(at, k))
      this.string(val, join(at, k))
    }
  }

  absPath(v: unknown, at: string): v is string {
    if (!this.string(v, at, { nonEmpty: true })) return false
    if (!v.startsWith('/')) {
      this.add(at, `${JSON.stringify(v)} must be an absolute path`)
      return false
    }
    if (v.split('/').includes('..')) {
      this.add(at, `${JSON.stringify(v)} must not contain ".."`)
      return false
    }
    return true
  }
}

const join = (at: string, key: string | number): string =>
  typeof key === 'number' ? `${at}[${key}]` : /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? (at ? `${at}.${key}` : key) : `${at}[${JSON.stringify(key)}]`

const APP_FIELDS = ['name', 'type', 'exec', 'env', 'workingDirectory', 'mounts'] as const
const MOUNT_FIELDS = ['volume', 'path', 'readOnly'] as const
const TOP_FIELDS = ['apiVersion', 'name', 'labels', 'annotations', 'mutable', 'apps', 'volumes'] as const

/**
 * Checks a relative path inside a volume: no absolute paths, no ".." parts,
 * no part starting with ".." (the AtomicWriter's own names), nothing that
 * normalizes to something else.
 */
export const projectedPathProblem = (p: string): string | undefined => {
  if (p === '') return 'must not be empty'
  if (p.includes('\0')) return 'must not contain a NUL character'
  if (p.startsWith('/')) return 'must be a relative path'
  if (p.length > 4096) return 'is longer than 4096 characters'
  const parts = p.split('/')
  if (parts.some((s) => s === '..')) return 'must not contain ".."'
  if (parts.some((s) => s.startsWith('..'))) return 'must not have a part starting with ".."'
  if (parts.some((s) => s === '' || s === '.') || path.posix.normalize(p) !== p) return 'must be a normalized path (no "//", "." or trailing "/")'
  return undefined
}

const checkVolume = (c: Checker, v: unknown, at: string): void => {
  if (!isObj(v)) {
    c.add(at, `must be an object, not ${describe(v)}`)
    return
  }
  c.name(v.name, join(at, 'name'))
  const kind = v.kind
  switch (kind) {
    case 'empty':
      c.fields(v, at, ['name', 'kind'])
      break
    case 'host':
      c.fields(v, at, ['name', 'kind', 'source', 'readOnly'])
      c.absPath(v.source, join(at, 'source'))
      if (v.readOnly !== undefined) c.bool(v.readOnly, join(at, 'readOnly'))
      break
    case 'files': {
      c.fields(v, at, ['name', 'kind', 'files'])
      const files = v.files
      if (!isObj(files)) {
        c.add(join(at, 'files'), `must be an object mapping relative paths to {"content", "mode"}, not ${describe(files)}`)
        break
      }
      const seen: string[] = []
      for (const [p, f] of Object.entries(files)) {
        const fat = join(join(at, 'files'), p)
        const bad = projectedPathProblem(p)
        if (bad) {
          c.add(fat, bad)
          continue
        }
        // A file may not also be a directory of another file.
        for (const other of seen) {
          if (other.startsWith(`${p}/`) || p.startsWith(`${other}/`)) c.add(fat, `conflicts with ${JSON.stringify(other)}: a path cannot be both a file and a directory`)
        }
        seen.push(p)
        if (!isObj(f)) {
          c.add(fat, `must be an object {"content": ..., "mode": ...}, not ${describe(f)}`)
          continue
        }
        c.fields(f, fat, ['content', 'mode'])
        c.string(f.content, join(fat, 'content'))
        if (f.mode !== undefined && !(Number.isInteger(f.mode) && (f.mode as number) >= 0 && (f.mode as number) <= 0o777)) {
          c.add(join(fat, 'mode'), `must be an integer from 0 to 511 (0777), not ${describe(f.mode)}`)
        }
      }
      break
    }
    case 'persistent':
      c.fields(v, at, ['name', 'kind', 'claim', 'readOnly', 'accessMode'])
      c.name(v.claim, join(at, 'claim'))
      if (v.readOnly !== undefined) c.bool(v.readOnly, join(at, 'readOnly'))
      if (v.accessMode !== undefined && v.accessMode !== 'ReadWriteOnce' && v.accessMode !== 'ReadWriteMany') {
        c.add(join(at, 'accessMode'), `must be "ReadWriteOnce" or "ReadWriteMany", not ${describe(v.accessMode)}`)
      }
      break
    default:
      c.add(join(at, 'kind'), `must be one of "empty", "host", "files", "persistent", not ${describe(kind)}`)
  }
}

const checkApp = (c: Checker, a: unknown, at: string, volumeNames: Set<string> | undefined, opts: ValidateOptions): void => {
  if (!isObj(a)) {
    c.add(at, `must be an object, not ${describe(a)}`)
    return
  }
  c.fields(a, at, APP_FIELDS)
  c.name(a.name, join(at, 'name'))
  if (a.type !== undefined) {
    if (a.type !== 'init' && a.type !== 'regular' && a.type !== 'ephemeral') {
      c.add(join(at, 'type'), `must be "init", "regular" or "ephemeral", not ${describe(a.type)}`)
    } else if (a.type === 'ephemeral' && !opts.allowEphemeral) {
      c.add(join(at, 'type'), 'ephemeral apps are only added to a running mutable pod, with "podctl app add --ephemeral"')
    }
  }
  const exec = a.exec
  if (!Array.isArray(exec) || exec.length === 0) {
    c.add(join(at, 'exec'), `must be a non-empty array of strings, not ${Array.isArray(exec) ? 'an empty array' : describe(exec)}`)
  } else {
    exec.forEach((arg, i) => c.string(arg, join(join(at, 'exec'), i)))
    const cmd = exec[0]
    if (typeof cmd === 'string' && !cmd.includes('\0')) {
      if (cmd === '') c.add(join(join(at, 'exec'), 0), 'must name a program')
      else if (!cmd.startsWith('/') && cmd.includes('/')) {
        c.add(join(join(at, 'exec'), 0), `${JSON.stringify(cmd)} must be an absolute path or a name to look up on PATH`)
      }
    }
  }
  if (a.env !== undefined) {
    c.stringMap(a.env, join(at, 'env'), (k, kat) => {
      if (!ENV_NAME_RE.test(k)) c.add(kat, 'is not a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)')
    })
  }
  if (a.workingDirectory !== undefined) c.absPath(a.workingDirectory, join(at, 'workingDirectory'))
  if (a.mounts !== undefined) {
    if (!Array.isArray(a.mounts)) {
      c.add(join(at, 'mounts'), `must be an array, not ${describe(a.mounts)}`)
      return
    }
    const paths = new Map<string, string>()
    a.mounts.forEach((m: unknown, i) => {
      const mat = join(join(at, 'mounts'), i)
      if (!isObj(m)) {
        c.add(mat, `must be an object, not ${describe(m)}`)
        return
      }
      c.fields(m, mat, MOUNT_FIELDS)
      if (c.name(m.volume, join(mat, 'volume')) && volumeNames && !volumeNames.has(m.volume)) {
        c.add(join(mat, 'volume'), `names no volume of the pod: ${JSON.stringify(m.volume)} is not in "volumes"`)
      }
      if (c.absPath(m.path, join(mat, 'path'))) {
        const norm = path.posix.normalize(m.path).replace(/(.)\/+$/, '$1')
        if (norm === '/') c.add(join(mat, 'path'), 'cannot be "/", the app root itself')
        const other = paths.get(norm)
        if (other) c.add(join(mat, 'path'), `${JSON.stringify(m.path)} is already the mount path of ${other}`)
        else paths.set(norm, mat)
      }
      if (m.readOnly !== undefined) c.bool(m.readOnly, join(mat, 'readOnly'))
    })
  }
}

/**
 * Validates a parsed manifest. Returns every problem found; an empty list
 * means `value` is a PodManifest.
 */
export const manifestProblems = (value: unknown, opts: ValidateOptions = {}): ManifestProblem[] => {
  const c = new Checker()
  if (!isObj(value)) {
    c.add('', `a manifest must be a JSON object, not ${describe(value)}`)
    return c.problems
  }
  c.fields(value, '', TOP_FIELDS)
  if (value.apiVersion !== API_VERSION) c.add('apiVersion', `must be "${API_VERSION}", not ${describe(value.apiVersion)}`)
  if (value.name !== undefined) c.name(value.name, 'name')
  if (value.labels !== undefined) c.stringMap(value.labels, 'labels')
  if (value.annotations !== undefined) c.stringMap(value.annotations, 'annotations')
  if (value.mutable !== undefined) c.bool(value.mutable, 'mutable')

  let volumeNames: Set<string> | undefined = new Set()
  if (value.volumes !== undefined) {
    if (!Array.isArray(value.volumes)) {
      c.add('volumes', `must be an array, not ${describe(value.volumes)}`)
      volumeNames = undefined
    } else {
      value.volumes.forEach((v: unknown, i) => {
        const at = join('volumes', i)
        checkVolume(c, v, at)
        if (isObj(v) && typeof v.name === 'string') {
          if (volumeNames!.has(v.name)) c.add(join(at, 'name'), `${JSON.stringify(v.name)} is the name of another volume`)
          volumeNames!.add(v.name)
        }
      })
    }
  }

  const apps = value.apps
  if (!Array.isArray(apps)) {
    c.add('apps', `must be an array, not ${describe(apps)}`)
  } else {
    if (apps.length === 0 && value.mutable !== true) c.add('apps', 'must have at least one app (only a mutable pod may start with none)')
    const names = new Set<string>()
    apps.forEach((a: unknown, i) => {
      const at = join('apps', i)
      checkApp(c, a, at, volumeNames, opts)
      if (isObj(a) && typeof a.name === 'string') {
        if (names.has(a.name)) c.add(join(at, 'name'), `${JSON.stringify(a.name)} is the name of another app`)
        names.add(a.name)
      }
    })
  }
  // Nesting and conflicts between mounts need the rest to be well-formed.
  if (c.problems.length === 0) c.problems.push(...mountProblems(value as unknown as PodManifest))
  return c.problems
}

/** Formats problems as one message: "apps[0].name: ...; volumes: ...". */
export const formatProblems = (problems: ManifestProblem[]): string =>
  problems.map((p) => `${p.path}: ${p.problem}`).join('; ')

/** Validates and returns the manifest, or throws EUSAGE naming every bad field. */
export const validateManifest = (value: unknown, opts: ValidateOptions = {}): PodManifest => {
  const problems = manifestProblems(value, opts)
  if (problems.length > 0) {
    throw new PodctlError('EUSAGE', `invalid manifest: ${formatProblems(problems)}`, 'see Documentation/manifest.md for the format')
  }
  return value as PodManifest
}

/** Parses manifest text (JSON) and validates it. */
export const parseManifest = (text: string, opts: ValidateOptions = {}): PodManifest => {
  if (Buffer.byteLength(text) > MAX_MANIFEST_BYTES) {
    throw new PodctlError('EUSAGE', `invalid manifest: larger than ${MAX_MANIFEST_BYTES} bytes`)
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (er) {
    throw new PodctlError('EUSAGE', `invalid manifest: not valid JSON: ${(er as Error).message}`, 'see Documentation/manifest.md for the format')
  }
  return validateManifest(value, opts)
}

/** The type an app runs as: "regular" when the manifest does not say. */
export const appType = (a: App): AppType => a.type ?? 'regular'

/** Bit mask of app types, for visitApps (VisitContainers in seed 000). */
export const AppTypeMask = { init: 1, regular: 2, ephemeral: 4, all: 7 } as const

/** Calls `fn` for every app whose type is in `mask`, in manifest order; stops when fn returns false. */
export const visitApps = (m: PodManifest, mask: number, fn: (app: App, index: number) => boolean | void): boolean => {
  for (const [i, a] of m.apps.entries()) {
    if ((AppTypeMask[appType(a)] & mask) === 0) continue
    if (fn(a, i) === false) return false
  }
  return true
}
