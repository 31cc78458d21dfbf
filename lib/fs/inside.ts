/**
 * File operations below a trusted root that never follow a symlink planted
 * inside it. Apps run as host processes with the same rights as podctl and
 * can replace any directory of their app root or of a volume with a link
 * to somewhere else; podctl must then still only touch what is under the
 * root. Every intermediate component is checked with lstat to be a real
 * directory before the leaf is touched. (Node has no openat(2), so a
 * process that swaps a directory for a link between the check and the use
 * can still win that window; Documentation/devel/volumes.md says so.)
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, errnoCode } from '../errors.js'
import { DIR_MODE } from './modes.js'

const parts = (rel: string): string[] => rel.split('/').filter((p) => p !== '' && p !== '.')

const checkRel = (rel: string): void => {
  if (path.isAbsolute(rel) || parts(rel).includes('..')) throw new Error(`bug: ${JSON.stringify(rel)} is not a path below its root`)
}

/**
 * The absolute path of `rel` under `root` if every directory on the way
 * (not the leaf) is a real directory; undefined if one is missing or is a
 * link or a file. `root` itself is trusted.
 */
export const resolveInside = (root: string, rel: string): string | undefined => {
  checkRel(rel)
  const ps = parts(rel)
  let cur = root
  for (const p of ps.slice(0, -1)) {
    cur = path.join(cur, p)
    const st = fs.lstatSync(cur, { throwIfNoEntry: false })
    if (!st || !st.isDirectory()) return undefined
  }
  return ps.length === 0 ? root : path.join(cur, ps[ps.length - 1]!)
}

/**
 * Creates `rel` under `root` and every directory on the way, refusing
 * (EFAILED) where one exists as a link or a file. Returns the absolute path.
 */
export const mkdirsInside = (root: string, rel: string, mode = DIR_MODE): string => {
  checkRel(rel)
  let cur = root
  for (const p of parts(rel)) {
    cur = path.join(cur, p)
    try {
      fs.mkdirSync(cur, { mode })
      continue
    } catch (er) {
      if (errnoCode(er) !== 'EEXIST') throw er
    }
    const st = fs.lstatSync(cur)
    if (!st.isDirectory()) {
      throw new PodctlError('EFAILED', `${cur} is ${st.isSymbolicLink() ? 'a symlink' : 'not a directory'}; podctl does not follow or replace it`, 'remove it, or choose another mount path')
    }
  }
  return cur
}

/**
 * Makes `rel` under `root` a symlink to `target`, creating the directories
 * on the way. Idempotent: a link that is already there with the same
 * target is fine; anything else there is refused (EFAILED).
 */
export const ensureLink = (root: string, rel: string, target: string): void => {
  checkRel(rel)
  mkdirsInside(root, path.posix.dirname(rel))
  const at = path.join(root, rel)
  try {
    fs.symlinkSync(target, at)
    return
  } catch (er) {
    if (errnoCode(er) !== 'EEXIST') throw er
  }
  const st = fs.lstatSync(at)
  if (st.isSymbolicLink() && fs.readlinkSync(at) === target) return
  throw new PodctlError('EFAILED', `${at} already exists (${st.isSymbolicLink() ? `a symlink to ${fs.readlinkSync(at)}` : st.isDirectory() ? 'a directory' : 'a file'}); it cannot become a mount point`, 'choose another mount path')
}

/**
 * Removes the symlink at `rel` under `root` if it is one (and, when
 * `target` is given, points there). Never follows a link on the way and
 * never removes anything that is not a link. Returns whether it removed it.
 */
export const removeLink = (root: string, rel: string, target?: string): boolean => {
  const at = resolveInside(root, rel)
  if (at === undefined) return false
  const st = fs.lstatSync(at, { throwIfNoEntry: false })
  if (!st?.isSymbolicLink()) return false
  if (target !== undefined && fs.readlinkSync(at) !== target) return false
  try {
    fs.unlinkSync(at)
    return true
  } catch (er) {
    if (errnoCode(er) === 'ENOENT') return false
    throw er
  }
}
