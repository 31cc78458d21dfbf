/**
 * Paths podctl did not choose, a provisioner's answer or a path read from
 * a fleet's etcd: what apps see at their mount path, and what an app's user
 * may be given, so checked as untrusted input (CONTRACT §8).
 */
import fs from 'node:fs'
import path from 'node:path'
import { unreachableDir } from '../fs/reach.js'
import { unlessError } from './objects.js'

/** The top-level directories of a host's own layout (the FHS, and what distributions add): a volume may be below one, never one. */
const HOST_DIRS = new Set(['bin', 'boot', 'dev', 'etc', 'home', 'lib', 'lib32', 'lib64', 'libx32', 'lost+found', 'media', 'mnt', 'opt', 'proc', 'root', 'run', 'sbin', 'snap', 'srv', 'sys', 'tmp', 'usr', 'var'])
/** Whole trees that hold no storage: the kernel's views. */
const KERNEL_TREES = new Set(['proc', 'sys'])
const MAX_PATH = 4096
/** A control character: what a name, a path or a parameter given from outside must not hold. */
// eslint-disable-next-line no-control-regex
export const CONTROL_RE = /[\x00-\x1f\x7f]/

/** What is wrong with `p` as a path written out by someone else, on its text only; a class's `--param root=DIR` too. */
export const rootParamProblem = (p: unknown): string | undefined => {
  if (typeof p !== 'string') return 'it is not a string'
  if (CONTROL_RE.test(p)) return 'it holds a control character'
  if (!p.startsWith('/')) return 'it is not an absolute path'
  if (p.length > MAX_PATH) return `it is longer than ${MAX_PATH} characters`
  if (p !== '/' && (p.endsWith('/') || p.includes('//') || p.split('/').some((c) => c === '.' || c === '..'))) return 'it is not a normalized path (no ".", "..", "//" or trailing "/")'
  if (p === '/') return 'it is / itself'
  if (KERNEL_TREES.has(p.split('/')[1]!)) return `it is in /${p.split('/')[1]}, which holds no storage`
  return undefined
}

/** A class's pinned root (`--param root=DIR`), which answers must be below; podctl's data dir, which they must not be in or around. */
export interface PathRules {
  root?: string | undefined
  dataDir?: string | undefined
}

/** What is wrong with `p` as a volume's path, judged on its text (a record read from etcd), or undefined. */
export const volumePathProblem = (p: unknown, rules: PathRules = {}): string | undefined => {
  const bad = rootParamProblem(p)
  if (bad) return bad
  const abs = p as string
  const parts = abs.split('/')
  if (parts.length === 2 && HOST_DIRS.has(parts[1]!)) return `it is the host's own ${abs}`
  if (rules.root !== undefined && !abs.startsWith(`${rules.root}/`)) return `it is not below the class's root ${rules.root} (--param root)`
  const given = rules.dataDir === undefined ? undefined : path.resolve(rules.dataDir)
  // The data dir as given and as resolved: it may be reached through a link.
  for (const d of given === undefined ? [] : new Set([given, unlessError(() => fs.realpathSync(given)) ?? given])) {
    if (abs === d || abs.startsWith(`${d}/`)) return `it is podctl's data dir ${d} or inside it`
    if (d.startsWith(`${abs}/`)) return `it holds podctl's data dir ${d}`
  }
  return undefined
}

/** What is wrong with `p` as a provisioner's answer: volumePathProblem's, then on disk a directory reached without a link. */
export const answeredPathProblem = (p: unknown, rules: PathRules = {}): string | undefined =>
  volumePathProblem(p, rules) ?? unreachableDir(p as string)
