/**
 * Whether a path is under the control of a user and root alone, judged as
 * OpenSSH's StrictModes and systemd's safe path transitions judge it:
 * every directory from `/` down to it is owned by that user or by root and
 * writable by neither group nor others; an ancestor may be writable by
 * others if it is sticky (as /tmp is), since then nobody else can rename
 * or remove what is in it. Links on the way are followed, and the
 * directories they lead through are judged too.
 *
 * As root this is the line between a user and root: a data dir another
 * user could change lets them plant a manifest that root then runs, or a
 * record whose pids root then kills.
 */
import fs from 'node:fs'
import path from 'node:path'
import { errnoCode, isNotFound } from '../errors.js'

/** The first thing on a path that someone else could change, and the command that fixes it. */
export interface Untrusted {
  path: string
  why: string
  fix: string
}

const MAX_LINKS = 40

const judge = (dir: string, st: fs.Stats, uid: number, last: boolean): Untrusted | undefined => {
  if (st.uid !== uid && st.uid !== 0) {
    return { path: dir, why: `it is owned by uid ${st.uid}, not by uid ${uid} or root`, fix: `chown ${uid} ${dir}` }
  }
  const writable = st.mode & 0o022
  const sticky = (st.mode & 0o1000) !== 0
  if (writable !== 0 && (last || !sticky)) {
    const who = writable === 0o022 ? 'group and others' : writable === 0o020 ? 'its group' : 'others'
    return { path: dir, why: `it is writable by ${who} (mode ${(st.mode & 0o7777).toString(8).padStart(4, '0')})`, fix: `chmod go-w ${dir}` }
  }
  return undefined
}

/**
 * The first directory of `target` (an absolute path) that another user
 * than `uid` (or root) could change, or undefined if there is none. Only
 * what exists is judged: a missing tail will be created by the caller.
 */
export const untrustedOnPath = (target: string, uid: number): Untrusted | undefined => {
  const todo = target.split('/').filter((p) => p !== '')
  let cur = '/'
  let links = 0
  const rootSt = fs.statSync('/')
  const bad = judge('/', rootSt, uid, todo.length === 0)
  if (bad) return bad
  while (todo.length > 0) {
    const name = todo.shift()!
    if (name === '.') continue
    if (name === '..') {
      cur = path.dirname(cur)
      continue
    }
    const next = path.join(cur, name)
    const st = fs.lstatSync(next, { throwIfNoEntry: false })
    if (st === undefined) return undefined
    if (st.isSymbolicLink()) {
      if (++links > MAX_LINKS) return { path: next, why: 'too many symlinks on the way', fix: `use the real path: realpath ${target}` }
      const to = fs.readlinkSync(next)
      todo.unshift(...to.split('/').filter((p) => p !== ''))
      if (to.startsWith('/')) cur = '/'
      continue
    }
    if (!st.isDirectory()) return undefined // a file on the way: the caller says "not a directory"
    const verdict = judge(next, st, uid, todo.length === 0)
    if (verdict) return verdict
    cur = next
  }
  return undefined
}

/**
 * The first thing that another user than `uid` (or root) could change on
 * the way to the program `file` and in it: the directories from `/` to it
 * (links followed, and the directories they lead through judged too, as
 * above), and the program itself, which must be a regular file owned by
 * `uid` or root and writable by neither group nor others. A program that
 * root runs is as trusted as the least trusted of these.
 */
export const untrustedProgram = (file: string, uid: number): { path: string; why: string; fix?: string } | undefined => {
  const onPath = untrustedOnPath(file, uid)
  if (onPath) return onPath
  let real: string
  let st: fs.Stats
  try {
    // The file a link leads to is the one judged, and named.
    real = fs.realpathSync(file)
    st = fs.statSync(real)
  } catch (er) {
    return { path: file, why: isNotFound(er) ? 'there is no such file' : `it cannot be read (${errnoCode(er) ?? (er as Error).message})` }
  }
  if (!st.isFile()) return { path: real, why: 'it is not a regular file' }
  return judge(real, st, uid, true)
}
