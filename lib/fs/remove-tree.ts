/**
 * Deletes a directory tree without ever following a symlink: links are
 * unlinked, never entered, so a link planted in a pod cannot make podctl
 * delete anything outside it (rmdir never follows one either). Directory
 * entry types come from readdir (d_type), so a plain tree costs what
 * `rm -rf` costs: no stat per entry, and an empty directory is removed
 * without being read.
 */
import fs from 'node:fs'
import path from 'node:path'
import { errnoCode } from '../errors.js'

/** `nested`: `dir` is below the top of the tree, where empty directories are the rule. */
const removeChildren = (dir: string, nested = false): void => {
  let entries: fs.Dirent[]
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true })
  } catch (er) {
    if (errnoCode(er) === 'ENOENT') return
    throw er
  }
  for (const e of entries) {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) {
      if (!nested || !tryRmdirEmpty(p)) {
        removeChildren(p, true)
        rmdir(p)
      }
    } else {
      unlink(p)
    }
  }
}

/**
 * Removes `p` if it is an empty directory; false if it has entries. The
 * directories a pod holds at its top (apps/, logs/) have entries; most
 * below them (an app's, a volume's) are empty by the time the pod is
 * deleted: one rmdir instead of reading the directory (open, fstat, two
 * getdents, close) and then removing it. Not tried at the top, where the
 * failure (an exception in Node) would be the rule.
 */
const tryRmdirEmpty = (p: string): boolean => {
  try {
    fs.rmdirSync(p)
    return true
  } catch (er) {
    const code = errnoCode(er)
    if (code === 'ENOENT') return true
    if (code === 'ENOTEMPTY' || code === 'EEXIST') return false
    if (code === 'ENOTDIR') {
      // Replaced by a file or a link since readdir: remove that, not what it points to.
      unlink(p)
      return true
    }
    throw er
  }
}

const unlink = (p: string): void => {
  try {
    fs.unlinkSync(p)
  } catch (er) {
    const code = errnoCode(er)
    if (code === 'ENOENT') return
    // EISDIR/EPERM: it became a directory after readdir; look again, safely.
    if (code === 'EISDIR' || code === 'EPERM') {
      const st = fs.lstatSync(p)
      if (st.isDirectory()) {
        removeChildren(p)
        rmdir(p)
        return
      }
    }
    throw er
  }
}

const rmdir = (p: string): void => {
  try {
    fs.rmdirSync(p)
  } catch (er) {
    const code = errnoCode(er)
    if (code === 'ENOENT') return
    if (code === 'ENOTEMPTY' || code === 'EEXIST') {
      // Something was created meanwhile; one more pass.
      removeChildren(p)
      fs.rmdirSync(p)
      return
    }
    throw er
  }
}

/**
 * Removes `root` and everything below it. If `root` itself is a symlink,
 * only the link is removed. A missing root is not an error.
 */
export const removeTree = (root: string): void => {
  const st = fs.lstatSync(root, { throwIfNoEntry: false })
  if (!st) return
  if (!st.isDirectory()) {
    unlink(root)
    return
  }
  removeChildren(root)
  rmdir(root)
}
