/**
 * Paths that podctl did not choose: a provisioner's answer, and the path
 * of a volume record read back from a fleet's etcd. Such a path becomes
 * what apps see at their mount path, what a recycle would empty and what
 * an app's user may be given, so it is checked as untrusted input
 * (CONTRACT §8): absolute and normalized, one printable line, not `/` nor
 * a directory of the host's own layout, not the data dir nor anything
 * around it, below the class's pinned root when it has one, and on disk a
 * directory reached without a link.
 */
import fs from 'node:fs'
import path from 'node:path'
import { unreachableDir } from '../fs/reach.js'

/**
 * The top-level directories of a host's own layout (the FHS, and what
 * distributions add): a volume is never one of them, though it may be
 * below one (`/srv/volumes/v1`).
 */
const HOST_DIRS = new Set(['bin', 'boot', 'dev', 'etc', 'home', 'lib', 'lib32', 'lib64', 'libx32', 'lost+found', 'media', 'mnt', 'opt', 'proc', 'root', 'run', 'sbin', 'snap', 'srv', 'sys', 'tmp', 'usr', 'var'])
/** Whole trees that hold no storage: the kernel's views. */
const KERNEL_TREES = new Set(['proc', 'sys'])
const MAX_PATH = 4096

/** What is wrong with `p` as a path written out by someone else: its text only. */
const textProblem = (p: unknown): string | undefined => {
  if (typeof p !== 'string') return 'it is not a string'
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(p)) return 'it holds a control character'
  if (!p.startsWith('/')) return 'it is not an absolute path'
  if (p.length > MAX_PATH) return `it is longer than ${MAX_PATH} characters`
  if (p !== '/' && (p.endsWith('/') || p.includes('//') || p.split('/').some((c) => c === '.' || c === '..'))) return 'it is not a normalized path (no ".", "..", "//" or trailing "/")'
  if (p === '/') return 'it is / itself'
  if (KERNEL_TREES.has(p.split('/')[1]!)) return `it is in /${p.split('/')[1]}, which holds no storage`
  return undefined
}

/** What is wrong with `root` as a class's `--param root=DIR`, if anything. */
export const rootParamProblem = (root: string): string | undefined => textProblem(root)

/** The data dir as given and as resolved (it may be reached through a link). */
const dataDirForms = (dataDir: string): string[] => {
  const given = path.resolve(dataDir)
  try {
    return [...new Set([given, fs.realpathSync(given)])]
  } catch {
    return [given]
  }
}

export interface PathRules {
  /** The class's pinned root (`--param root=DIR`): answers must be below it. */
  root?: string | undefined
  /** podctl's data dir: an answer is never it, in it, or around it. */
  dataDir?: string | undefined
}

/**
 * What is wrong with `p` as a volume's path by the rules above, judged on
 * its text (a record read from etcd), or undefined.
 */
export const volumePathProblem = (p: unknown, rules: PathRules = {}): string | undefined => {
  const bad = textProblem(p)
  if (bad) return bad
  const abs = p as string
  const parts = abs.split('/')
  if (parts.length === 2 && HOST_DIRS.has(parts[1]!)) return `it is the host's own ${abs}`
  if (rules.root !== undefined && !abs.startsWith(`${rules.root}/`)) return `it is not below the class's root ${rules.root} (--param root)`
  for (const d of rules.dataDir === undefined ? [] : dataDirForms(rules.dataDir)) {
    if (abs === d || abs.startsWith(`${d}/`)) return `it is podctl's data dir ${d} or inside it`
    if (d.startsWith(`${abs}/`)) return `it holds podctl's data dir ${d}`
  }
  return undefined
}

/**
 * What is wrong with `p` as a provisioner's answer: the rules of
 * volumePathProblem, then on disk, a directory reached from `/` without
 * following a link.
 */
export const answeredPathProblem = (p: unknown, rules: PathRules = {}): string | undefined =>
  volumePathProblem(p, rules) ?? unreachableDir(p as string)
