/**
 * File operations below a trusted root that never follow a link planted
 * inside it. An app can replace any directory of its app root or of its
 * volumes with a link to somewhere else; podctl must then still only touch
 * what is under the root. Every component below the root is opened with
 * O_NOFOLLOW from the one above it (lib/fs/dir.ts), so a swap between two
 * steps makes the next step fail instead of leading elsewhere.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, errnoCode, isNotFound } from '../errors.js'
import { Dir, isNotADirectory } from './dir.js'
import { DIR_MODE } from './modes.js'

const parts = (rel: string): string[] => rel.split('/').filter((p) => p !== '' && p !== '.')

const checkRel = (rel: string): string[] => {
  const ps = parts(rel)
  if (path.isAbsolute(rel) || ps.includes('..')) throw new Error(`bug: ${JSON.stringify(rel)} is not a path below its root`)
  return ps
}

const notADirectory = (where: string, what: string, hint: string): PodctlError =>
  new PodctlError('EFAILED', `${where} is ${what}; podctl does not follow or replace it`, hint)

/** Who owns what is created (fchown, as it is made). */
export interface Owner {
  uid: number
  gid: number
}

interface BelowOptions {
  /** Create a missing directory with this mode. */
  create?: number
  /** ... and give it to this owner. */
  owner?: Owner | undefined
  /** A missing directory (not created), a link or a file is an error (else: undefined). */
  strict: boolean
  /** What to do about such an error. */
  hint?: string
}

/** One step down: `name` in `dir`, opened (and created) as BelowOptions say. */
const step = (dir: Dir, name: string, opts: BelowOptions): Dir | undefined => {
  try {
    return dir.openDir(name)
  } catch (er) {
    const code = errnoCode(er)
    if (code === 'ENOENT' && opts.create !== undefined) {
      let made = true
      try {
        dir.mkdir(name, opts.create)
      } catch (mkEr) {
        if (errnoCode(mkEr) !== 'EEXIST') throw mkEr
        made = false
      }
      const sub = dir.openDir(name)
      if (made && opts.owner) fs.fchownSync(sub.fd, opts.owner.uid, opts.owner.gid)
      return sub
    }
    if (code !== 'ENOENT' && !isNotADirectory(er)) throw er
    if (!opts.strict) return undefined
    const what = dir.lstat(name)?.isSymbolicLink() ? 'a symlink' : code === 'ENOENT' ? 'missing' : 'not a directory'
    throw notADirectory(path.join(dir.path, name), what, opts.hint ?? 'remove it')
  }
}

/**
 * Opens the directories `dirs`, one below the other, from `root` (which is
 * trusted and may be reached through links). Returns the last one open
 * (the caller closes it), or undefined where a step gives none.
 */
const openBelow = (root: string, dirs: string[], opts: BelowOptions): Dir | undefined => {
  let cur = Dir.open(root)
  for (const name of dirs) {
    let next: Dir | undefined
    try {
      next = step(cur, name, opts)
    } finally {
      cur.close()
    }
    if (next === undefined) return undefined
    cur = next
  }
  return cur
}

/**
 * The absolute path of `rel` under `root` if every directory on the way
 * (not the leaf) is a real directory; undefined if one is missing or is a
 * link or a file. `root` itself is trusted.
 */
export const resolveInside = (root: string, rel: string): string | undefined => {
  const ps = checkRel(rel)
  if (ps.length === 0) return root
  const dir = openBelow(root, ps.slice(0, -1), { strict: false })
  if (dir === undefined) return undefined
  dir.close()
  return path.join(root, ...ps)
}

/**
 * Creates `rel` under `root` and every directory on the way (owned by
 * `owner` when given), refusing (EFAILED) where one exists as a link or a
 * file. Returns the absolute path.
 */
export const mkdirsInside = (root: string, rel: string, mode = DIR_MODE, owner?: Owner): string => {
  const ps = checkRel(rel)
  openBelow(root, ps, { create: mode, owner, strict: true, hint: 'remove it, or choose another mount path' })!.close()
  return path.join(root, ...ps)
}

/**
 * Makes `rel` under `root` a symlink to `target`, creating the directories
 * on the way. Idempotent: a link that is already there with the same
 * target is fine; anything else there is refused (EFAILED).
 */
export const ensureLink = (root: string, rel: string, target: string): void => {
  const ps = checkRel(rel)
  const leaf = ps.pop()!
  const dir = openBelow(root, ps, { create: DIR_MODE, strict: true, hint: 'remove it, or choose another mount path' })!
  try {
    try {
      dir.symlink(target, leaf)
      return
    } catch (er) {
      if (errnoCode(er) !== 'EEXIST') throw er
    }
    const st = dir.lstat(leaf)
    const at = path.join(dir.path, leaf)
    if (st?.isSymbolicLink() && dir.readlink(leaf) === target) return
    const what = st?.isSymbolicLink() ? `a symlink to ${dir.readlink(leaf)}` : st?.isDirectory() ? 'a directory' : 'a file'
    throw new PodctlError('EFAILED', `${at} already exists (${what}); it cannot become a mount point`, 'choose another mount path')
  } finally {
    dir.close()
  }
}

/**
 * Removes the symlink at `rel` under `root` if it is one (and, when
 * `target` is given, points there). Never follows a link on the way and
 * never removes anything that is not a link. Returns whether it removed it.
 */
export const removeLink = (root: string, rel: string, target?: string): boolean => {
  const ps = checkRel(rel)
  const leaf = ps.pop()
  if (leaf === undefined) return false
  const dir = openBelow(root, ps, { strict: false })
  if (dir === undefined) return false
  try {
    if (!dir.lstat(leaf)?.isSymbolicLink()) return false
    if (target !== undefined && dir.readlink(leaf) !== target) return false
    dir.unlink(leaf)
    return true
  } catch (er) {
    if (isNotFound(er)) return false
    throw er
  } finally {
    dir.close()
  }
}
