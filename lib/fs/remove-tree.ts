/**
 * Deletes a directory tree safely when someone else may be changing it
 * meanwhile (an app, as another user, swapping a directory of its root for
 * a link while root deletes the pod): every directory is opened without
 * following a link and emptied through its open descriptor (lib/fs/dir.ts),
 * so a swap makes a call fail, never reach outside the tree; and it never
 * crosses into another file system (like `rm --one-file-system`). Entry
 * types come from readdir (d_type), and a nested directory is first
 * removed with one rmdir (most are empty by the time a pod is deleted), so
 * a plain tree costs about what `rm -rf` costs (Documentation/performance.md).
 */
import path from 'node:path'
import { PodctlError, errnoCode } from '../errors.js'
import { withDir, isNotADirectory, type Dir } from './dir.js'

/** Directories below the top that are on another file system, left in place. */
type Left = string[]

/** Unlinks `name` (not a directory, or a link now); gone already is fine. */
const unlinkEntry = (dir: Dir, name: string, dev: number, left: Left): void => {
  try {
    dir.unlink(name)
  } catch (er) {
    const code = errnoCode(er)
    if (code === 'ENOENT') return
    // A directory now (EISDIR on Linux; EPERM elsewhere): look again, safely.
    if (code === 'EISDIR' || code === 'EPERM') return removeDir(dir, name, dev, left, false)
    throw er
  }
}

/**
 * Removes `name` in `dir` if it is an empty directory: true when it is
 * gone, false when it has entries. A mount point (EBUSY) is another file
 * system: it is left, and listed.
 */
const rmdirIfEmpty = (dir: Dir, name: string, dev: number, left: Left): boolean => {
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

/**
 * Removes the directory `name` of `dir` and everything below it.
 * `nested`: below the top of the tree, where empty directories are the
 * rule, so one rmdir is tried before opening it.
 */
const removeDir = (dir: Dir, name: string, dev: number, left: Left, nested: boolean): void => {
  if (nested && rmdirIfEmpty(dir, name, dev, left)) return
  for (let pass = 0; pass < 2; pass++) {
    let sub: Dir
    try {
      sub = dir.openDir(name)
    } catch (er) {
      if (errnoCode(er) === 'ENOENT') return
      if (isNotADirectory(er)) return unlinkEntry(dir, name, dev, left) // a link or a file now
      throw er
    }
    try {
      if (sub.dev !== dev) {
        left.push(sub.path)
        return
      }
      for (const e of sub.entries()) {
        if (e.isDirectory()) removeDir(sub, e.name, dev, left, true)
        else unlinkEntry(sub, e.name, dev, left)
      }
    } finally {
      sub.close()
    }
    // Something may have been created meanwhile (ENOTEMPTY): one more pass.
    if (rmdirIfEmpty(dir, name, dev, left)) return
  }
  throw new PodctlError('EFAILED', `cannot remove ${path.join(dir.path, name)}: entries keep appearing in it`, 'stop what writes there and try again')
}

/**
 * Removes `root` (an absolute path) and everything below it, never
 * following a link and never leaving `root`'s file system. If `root`
 * itself is a link, only the link is removed. A missing root is not an
 * error. Directories on another file system are left, and named in the
 * EFAILED thrown once everything else is gone.
 */
export const removeTree = (root: string): void => {
  const name = path.basename(root)
  withDir(path.dirname(root), (parent) => {
    const st = parent.lstat(name)
    if (!st) return
    const left: Left = []
    if (!st.isDirectory()) unlinkEntry(parent, name, st.dev, left)
    else removeDir(parent, name, st.dev, left, false)
    if (left.length > 0) {
      throw new PodctlError(
        'EFAILED',
        `${root} is not removed: ${left.length === 1 ? 'a directory below it is' : `${left.length} directories below it are`} on another file system (${left.slice(0, 3).join(', ')}${left.length > 3 ? ', …' : ''}), which podctl does not enter`,
        'unmount it, then remove it again',
      )
    }
  })
}
