/** The volume rules of the pod manifest (CONTRACT §7); `validatePodManifest` checks them with the pod's own part. */
import path from 'node:path'
import { parseBytes } from '../bytes.js'
import { PodctlError } from '../errors.js'
import {
  Checker,
  describe,
  formatProblems,
  isObj,
  join,
  manifestProblems,
  nameLengthProblem,
  parseManifestJson,
  type ManifestProblem,
  type ManifestRule,
  type PodManifest,
  type ValidateOptions,
} from '../pod/manifest.js'
import { mountProblems } from './plan.js'
import { ACCESS_MODE_NAMES } from '../storage/access-modes.js'

/** Checks a relative path inside a volume; no part may start with ".." (the AtomicWriter's own names). */
export const projectedPathProblem = (p: string): string | undefined => {
  if (p === '') return 'must not be empty'
  if (p.includes('\0')) return 'must not contain a NUL character'
  if (p.startsWith('/')) return 'must be a relative path'
  if (p.length > 4096) return 'is longer than 4096 characters'
  const tooLong = nameLengthProblem(p)
  if (tooLong !== undefined) return tooLong
  const parts = p.split('/')
  if (parts.some((s) => s === '..')) return 'must not contain ".."'
  if (parts.some((s) => s.startsWith('..'))) return 'must not have a part starting with ".."'
  if (parts.some((s) => s === '' || s === '.') || path.posix.normalize(p) !== p) return 'must be a normalized path (no "//", "." or trailing "/")'
  return undefined
}

const checkFiles = (c: Checker, files: unknown, at: string): void => {
  if (!isObj(files)) return c.add(at, `must be an object mapping relative paths to {"content", "mode"}, not ${describe(files)}`)
  const seen: string[] = []
  for (const [p, f] of Object.entries(files)) {
    const fat = join(at, p)
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
}

/** The fields of one volume entry, by kind (its name and kind are the pod's to check). */
const checkVolume = (c: Checker, v: Record<string, unknown>, at: string): void => {
  switch (v.kind) {
    case 'empty':
      c.fields(v, at, ['name', 'kind'])
      break
    case 'host':
      c.fields(v, at, ['name', 'kind', 'source', 'readOnly'])
      c.absPath(v.source, join(at, 'source'))
      if (v.readOnly !== undefined) c.bool(v.readOnly, join(at, 'readOnly'))
      break
    case 'files':
      c.fields(v, at, ['name', 'kind', 'files'])
      checkFiles(c, v.files, join(at, 'files'))
      break
    case 'persistent':
      c.fields(v, at, ['name', 'kind', 'claim', 'readOnly', 'accessMode', 'class', 'size'])
      c.name(v.claim, join(at, 'claim'))
      if (v.class !== undefined) c.name(v.class, join(at, 'class'))
      if (v.size !== undefined && c.string(v.size, join(at, 'size'))) {
        try {
          if (parseBytes(v.size) <= 0) c.add(join(at, 'size'), 'must be more than 0 bytes')
        } catch (er) {
          c.add(join(at, 'size'), (er as Error).message)
        }
      }
      if (v.readOnly !== undefined) c.bool(v.readOnly, join(at, 'readOnly'))
      if (v.accessMode !== undefined && (typeof v.accessMode !== 'string' || !Object.hasOwn(ACCESS_MODE_NAMES, v.accessMode))) {
        c.add(join(at, 'accessMode'), `must be "ReadWriteOnce" (RWO) or "ReadWriteMany" (RWX), not ${describe(v.accessMode)}`)
      }
      break
    default:
      c.add(join(at, 'kind'), `must be one of "empty", "host", "files", "persistent", not ${describe(v.kind)}`)
  }
}

/** The volume rules: every volume entry by its kind, then the mount plan, which needs the whole manifest valid. */
export const volumeRules: ManifestRule = (m: PodManifest, wellFormed: boolean): ManifestProblem[] => {
  const c = new Checker()
  const volumes: unknown = m.volumes
  if (Array.isArray(volumes)) volumes.forEach((v: unknown, i) => isObj(v) && checkVolume(c, v, join('volumes', i)))
  return c.problems.length > 0 || !wellFormed ? c.problems : mountProblems(m)
}

/** Every problem of a manifest, the pod's and the volumes'. */
export const podManifestProblems = (value: unknown, opts: ValidateOptions = {}): ManifestProblem[] =>
  manifestProblems(value, { ...opts, rules: [volumeRules, ...(opts.rules ?? [])] })

/** Validates a whole manifest and returns it, or throws EUSAGE naming every bad field. */
export const validatePodManifest = (value: unknown, opts: ValidateOptions = {}): PodManifest => {
  const problems = podManifestProblems(value, opts)
  if (problems.length > 0) {
    throw new PodctlError('EUSAGE', `invalid manifest: ${formatProblems(problems)}`, 'see Documentation/manifest.md for the format')
  }
  return value as PodManifest
}

/** Parses manifest text (JSON) and validates all of it. */
export const parsePodManifest = (text: string, opts: ValidateOptions = {}): PodManifest => validatePodManifest(parseManifestJson(text), opts)
