/**
 * Deletes a directory tree safely when someone else may be changing it
 * meanwhile (an app, as another user, swapping a directory of its root for
 * a link while root deletes the pod): every directory is opened without
 * following a link and emptied through its open descriptor (lib/fs/dir.ts),
 * so a swap makes a call fail, never reach outside the tree; and it never
 * crosses into another file system (like `rm --one-file-system`). Entry
 * types come from readdir (d_type), and a directory two or more levels
 * down is first removed with one rmdir (an app's root is mostly empty by
 * the time its pod is deleted, while a pod's own top levels never are), so
 * a plain tree costs about what `rm -rf` costs (Documentation/performance.md).
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, errnoCode, unlessNotFound } from '../errors.js'
import { Dir, isNotADirectory } from './dir.js'

/** Directories below the top that are on another file system, left in place. */
type Left = string[]

/** What removal needs of a directory: an open Dir, or an OwnDir. */
interface TreeDir extends Pick<Dir, 'path' | 'dev' | 'entries' | 'unlink' | 'rmdir' | 'close'> {
  openDir(name: string): TreeDir
}

const EUID = process.geteuid?.() ?? -1

/**
 * A directory that only this user can change (it is ours, with no group
 * or other write), at a path that only this user can change: no one else
 * can swap its entries, so they are reached by path, which saves the open
 * and close of a descriptor per directory (a pod's own directories are
 * all such; an app's root, owned by the app's user, is not).
 */
class OwnDir implements TreeDir {
  constructor(
    readonly path: string,
    readonly dev: number,
  ) {}

  entries(): fs.Dirent[] {
    return fs.readdirSync(this.path, { withFileTypes: true })
  }

  // Names come from readdir: one component each.
  unlink(name: string): void {
    fs.unlinkSync(`${this.path}/${name}`)
  }

  rmdir(name: string): void {
    fs.rmdirSync(`${this.path}/${name}`)
  }

  openDir(name: string): TreeDir {
    return enter(`${this.path}/${name}`)
  }

  close(): void {}
}

const notADirectory = (where: string): Error => Object.assign(new Error(`ENOTDIR: not a directory, ${where}`), { code: 'ENOTDIR' })

/**
 * Enters the directory at `where`, a path only this user can change: by
 * path if the directory is ours too (OwnDir), else opened without
 * following a link (Dir), and fd-relative from there on.
 */
const enter = (where: string): TreeDir => {
  const st = fs.lstatSync(where)
  if (!st.isDirectory()) throw notADirectory(where)
  if (st.uid === EUID && (st.mode & 0o022) === 0) return new OwnDir(where, st.dev)
  return Dir.open(where)
}

/** Unlinks `name` (not a directory, or a link now); gone already is fine. */
const unlinkEntry = (dir: TreeDir, name: string, dev: number, left: Left): void => {
  try {
    dir.unlink(name)
  } catch (er) {
    const code = errnoCode(er)
    if (code === 'ENOENT') return
    // A directory now (EISDIR on Linux; EPERM elsewhere): look again, safely.
    if (code === 'EISDIR' || code === 'EPERM') return removeDir(dir, name, dev, left)
    throw er
  }
}

/**
 * Removes `name` in `dir` if it is an empty directory: true when it is
 * gone, false when it has entries. A mount point (EBUSY) is another file
 * system: it is left, and listed.
 */
const rmdirIfEmpty = (dir: TreeDir, name: string, dev: number, left: Left): boolean => {
  try {
    dir.rmdir(name)
    return true
  } catch (er) {
    const code = errnoCode(er)
    if (code === 'ENOENT') return true
    if (code === 'ENOTEMPTY' || code === 'EEXIST') return false
    if (code === 'ENOTDIR') {
      unlinkEntry(dir, name, dev, left) // replaced by a file or a link: remove that, not what it points to
      return true
    }
    if (code === 'EBUSY') {
      left.push(`${dir.path}/${name}`)
      return true
    }
    throw er
  }
}

/** Removes every entry of the open directory `dir`; `depth` is its depth below the tree's top. */
const emptyDir = (dir: TreeDir, dev: number, left: Left, depth: number): void => {
  for (const e of dir.entries()) {
    if (e.isDirectory()) removeDir(dir, e.name, dev, left, depth + 1)
    else unlinkEntry(dir, e.name, dev, left)
  }
}

const keepsAppearing = (where: string): PodctlError =>
  new PodctlError('EFAILED', `cannot remove ${where}: entries keep appearing in it`, 'stop what writes there and try again')

/**
 * Removes the directory `name` of `dir` (at `depth` below the top, 1 for
 * the top's entries) and everything below it.
 */
const removeDir = (dir: TreeDir, name: string, dev: number, left: Left, depth = 1): void => {
  if (depth >= 2 && rmdirIfEmpty(dir, name, dev, left)) return
  for (let pass = 0; pass < 2; pass++) {
    let sub: TreeDir
    try {
      sub = dir.openDir(name)
    } catch (er) {
      if (errnoCode(er) === 'ENOENT') return
      if (isNotADirectory(er)) return unlinkEntry(dir, name, dev, left) // a link or a file now
      throw er
    }
    const leftBefore = left.length
    try {
      if (sub.dev !== dev) {
        left.push(sub.path)
        return
      }
      emptyDir(sub, dev, left, depth)
    } finally {
      sub.close()
    }
    if (left.length > leftBefore) return // it holds another file system: it stays
    // Something may have been created meanwhile (ENOTEMPTY): one more pass.
    if (rmdirIfEmpty(dir, name, dev, left)) return
  }
  throw keepsAppearing(path.join(dir.path, name))
}

/**
 * Empties and removes the tree at `root`; false if `root` is not a
 * directory (then nothing was touched).
 */
const removeTop = (root: string, left: Left): boolean => {
  for (let pass = 0; pass < 2; pass++) {
    let top: TreeDir
    try {
      top = enter(root)
    } catch (er) {
      if (errnoCode(er) === 'ENOENT') return true
      if (isNotADirectory(er)) return false
      throw er
    }
    try {
      emptyDir(top, top.dev, left, 0)
    } finally {
      top.close()
    }
    if (left.length > 0) return true
    try {
      fs.rmdirSync(root)
      return true
    } catch (er) {
      const code = errnoCode(er)
      if (code === 'ENOENT') return true
      if (code === 'ENOTDIR') return false // swapped for a link meanwhile
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw er
    }
  }
  throw keepsAppearing(root)
}

/**
 * Removes `root` (an absolute path) and everything below it, never
 * following a link and never leaving `root`'s file system. If `root`
 * itself is a link, only the link is removed. A missing root is not an
 * error. Directories on another file system are left, and named in the
 * EFAILED thrown once everything else is gone. The path to `root` is
 * trusted (the caller's own directories); only what is below it may be
 * changed by someone else meanwhile.
 */
export const removeTree = (root: string): void => {
  const left: Left = []
  if (!removeTop(root, left)) unlessNotFound(() => fs.unlinkSync(root)) // a link or a file: unlinked, not followed
  if (left.length > 0) {
    throw new PodctlError(
      'EFAILED',
      `${root} is not removed: ${left.length === 1 ? 'a directory below it is' : `${left.length} directories below it are`} on another file system (${left.slice(0, 3).join(', ')}${left.length > 3 ? ', …' : ''}), which podctl does not enter`,
      'unmount it, then remove it again',
    )
  }
}
