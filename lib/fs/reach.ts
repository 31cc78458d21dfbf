/**
 * Reaching a directory by an absolute path that someone else chose (a
 * provisioner's answer, a record read from etcd) without following a
 * link anywhere on the way: each component is opened O_NOFOLLOW from the
 * one above it, starting at `/` (lib/fs/dir.ts). A link or a file on the
 * way stops the walk and is named; what is done with the open directory
 * (fchown) then acts on that directory, whatever the path leads to by
 * then.
 */
import { errnoCode } from '../errors.js'
import { Dir, isNotADirectory } from './dir.js'

export type Reached = { dir: Dir } | { problem: string }

/**
 * Opens the directory at `abs` (absolute and normalized) one component at
 * a time, never through a link: the open directory (the caller closes
 * it), or why it cannot be reached that way.
 */
export const reachDir = (abs: string): Reached => {
  if (!abs.startsWith('/')) return { problem: `${abs} is not an absolute path` }
  if (abs.split('/').some((p) => p === '.' || p === '..')) return { problem: `${abs} is not a normalized path` }
  let cur = Dir.open('/')
  let at = ''
  for (const name of abs.split('/').filter((p) => p !== '')) {
    at = `${at}/${name}`
    let next: Dir
    try {
      next = cur.openDir(name)
    } catch (er) {
      const st = (() => {
        try {
          return cur.lstat(name)
        } catch {
          return undefined
        }
      })()
      cur.close()
      if (errnoCode(er) === 'ENOENT') return { problem: `${at} does not exist` }
      if (isNotADirectory(er)) return { problem: st?.isSymbolicLink() ? `${at} is a symlink` : `${at} is not a directory` }
      if (errnoCode(er) === 'EACCES') return { problem: `${at} cannot be searched (permission denied)` }
      throw er
    }
    cur.close()
    cur = next
  }
  return { dir: cur }
}

/** Why `abs` is not a directory reached without a link, or undefined when it is one. */
export const unreachableDir = (abs: string): string | undefined => {
  const r = reachDir(abs)
  if ('problem' in r) return r.problem
  r.dir.close()
  return undefined
}
