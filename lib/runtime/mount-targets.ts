/**
 * The mount targets of an app whose root an image or an app wrote
 * (CONTRACT §12a): before the runtime sees the root, podctl makes each
 * place where the runtime will mount something (/dev, /proc, /sys, the
 * volumes' mount paths, the /etc files it binds) a real directory or file
 * of the app's own root. An image's link there is removed, or shadowed by
 * the upper layer, never followed: a runtime that mounts onto a link an
 * image planted (the CVE-2019-16884 and CVE-2025-31133 families) could be
 * steered onto the host.
 *
 * Links on the way to a target are resolved inside the root, as the
 * runtime's own resolution (securejoin) does, so that an image whose
 * /var/run is a link to /run still has its volume where the image means;
 * the runtime is then handed the resolved path, which holds no link.
 *
 * The root is seen through a View: the app's root itself (an overlay
 * podctl mounted, or a copy), or, for an overlay the runtime will mount
 * inside a user namespace, its two layers, read upper first and written
 * in the upper alone. Every step is one name looked up from an open
 * directory (lib/fs/dir.ts).
 */
import fs from 'node:fs'
import path from 'node:path'
import { errnoCode } from '../errors.js'
import { Dir } from '../fs/dir.js'

export interface MountTarget {
  /** Absolute, in the app's root. */
  path: string
  /** What is made there. */
  kind: 'dir' | 'file'
  /** The mode of a directory podctl makes there (the umask's 0755 if absent); one the image has keeps its own. */
  mode?: number
}

/** Who owns what is made (the root of a pod with ids of its own). */
export interface TargetOwner {
  uid: number
  gid: number
}

/** As the kernel's own bound on links followed in one lookup. */
const MAX_LINKS = 40

const parts = (p: string): string[] => p.split('/').filter((x) => x !== '' && x !== '.')

/** Why a target could not be made, in words to follow its path. */
class TargetProblem extends Error {}

/** A target that cannot be made (an app that cannot start for its image: 126). */
const cannotMake = (target: string, why: string): Error => new Error(`mount target ${target} in the app's root ${why}`)

/** A root as seen for claiming: entries by their resolved components (no link among them). */
export interface View {
  lstat(at: readonly string[]): fs.Stats | undefined
  readlink(at: readonly string[]): string
  /** Makes `at` (whose parent is a directory) a directory, replacing what else is there; `owner` in the place of the view's. */
  makeDir(at: readonly string[], owner?: TargetOwner, mode?: number): void
  /** Makes `at` a regular file, replacing a link, a special file or an empty directory. */
  makeFile(at: readonly string[]): void
  /** The text of the regular file `at`, at most `max` bytes; undefined if it is not one. */
  readText(at: readonly string[], max: number): string | undefined
  /** Replaces the contents of `at`, made a regular file first. */
  writeText(at: readonly string[], text: string): void
}

/** Runs `fn` in the directory `dirs` below `root`, each step opened without following a link; `make` creates missing ones. */
const inDir = <T>(root: string, dirs: readonly string[], make: ((d: Dir, name: string) => void) | undefined, fn: (d: Dir) => T): T => {
  let cur = Dir.open(root)
  try {
    for (const name of dirs) {
      if (make && cur.lstat(name) === undefined) make(cur, name)
      const next = cur.openDir(name)
      cur.close()
      cur = next
    }
    return fn(cur)
  } finally {
    cur.close()
  }
}

const replaceWithDir = (d: Dir, name: string, owner: TargetOwner | undefined, mode?: number): void => {
  const st = d.lstat(name)
  if (st?.isDirectory()) return
  if (st !== undefined) d.unlink(name)
  try {
    d.mkdir(name, 0o755)
  } catch (er) {
    throw errnoCode(er) === 'EEXIST' ? new TargetProblem('changed while podctl made it') : er
  }
  // Set after mkdir: the umask would take a sticky 1777's write bits.
  if (mode !== undefined) d.chmodDir(name, mode)
  if (owner) d.lchown(name, owner.uid, owner.gid)
}

const replaceWithFile = (d: Dir, name: string, owner: TargetOwner | undefined): void => {
  const st = d.lstat(name)
  if (st?.isFile()) return
  if (st?.isDirectory()) {
    try {
      d.rmdir(name)
    } catch {
      throw new TargetProblem('is a directory that is not empty, where a file is mounted')
    }
  } else if (st !== undefined) d.unlink(name)
  fs.closeSync(d.openFile(name, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o644))
  if (owner) d.lchown(name, owner.uid, owner.gid)
}

const split = (at: readonly string[]): [string[], string] => [at.slice(0, -1), at[at.length - 1]!]

const readIn = (d: Dir, name: string, max: number): string | undefined => {
  let fd: number
  try {
    fd = d.openFile(name, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK)
  } catch {
    return undefined
  }
  try {
    const st = fs.fstatSync(fd)
    if (!st.isFile() || st.size > max) return undefined
    return fs.readFileSync(fd, 'utf8')
  } finally {
    fs.closeSync(fd)
  }
}

const writeIn = (d: Dir, name: string, text: string): void => {
  const fd = d.openFile(name, fs.constants.O_WRONLY | fs.constants.O_TRUNC)
  try {
    fs.writeSync(fd, text)
  } finally {
    fs.closeSync(fd)
  }
}

/** The app's root itself (an overlay mounted on the host, or a copy). */
export const rootView = (root: string, owner?: TargetOwner): View => ({
  lstat: (at) => (at.length === 0 ? fs.lstatSync(root) : inDir(root, split(at)[0], undefined, (d) => d.lstat(split(at)[1]))),
  readlink: (at) => inDir(root, split(at)[0], undefined, (d) => d.readlink(split(at)[1])),
  makeDir: (at, own, mode) => inDir(root, split(at)[0], undefined, (d) => replaceWithDir(d, split(at)[1], own ?? owner, mode)),
  makeFile: (at) => inDir(root, split(at)[0], undefined, (d) => replaceWithFile(d, split(at)[1], owner)),
  readText: (at, max) => inDir(root, split(at)[0], undefined, (d) => readIn(d, split(at)[1], max)),
  writeText: (at, text) =>
    inDir(root, split(at)[0], undefined, (d) => {
      replaceWithFile(d, split(at)[1], owner)
      writeIn(d, split(at)[1], text)
    }),
})

/** A whiteout: what an overlay's upper holds in the place of a lower entry deleted. */
const isWhiteout = (st: fs.Stats | undefined): boolean => st?.isCharacterDevice() === true && st.rdev === 0

/**
 * An overlay not mounted here, as its layers: an entry is the upper's
 * where the upper has one (a whiteout hides the lower's), else the
 * lower's; everything is made in the upper, its directories on the way
 * included, so that the upper shadows what the lower has there.
 */
export const layeredView = (upper: string, lower: string): View => {
  const look = (root: string, at: readonly string[]): fs.Stats | undefined => {
    try {
      return at.length === 0 ? fs.lstatSync(root) : inDir(root, split(at)[0], undefined, (d) => d.lstat(split(at)[1]))
    } catch (er) {
      // A parent that is no directory in this layer: the entry is not in it.
      if (errnoCode(er) === 'ENOENT' || errnoCode(er) === 'ENOTDIR' || errnoCode(er) === 'ELOOP') return undefined
      throw er
    }
  }
  const layerOf = (at: readonly string[]): string | undefined => {
    const u = look(upper, at)
    if (u !== undefined) return isWhiteout(u) ? undefined : upper
    return look(lower, at) !== undefined ? lower : undefined
  }
  const makeParents = (d: Dir, name: string): void => d.mkdir(name, 0o755)
  return {
    lstat: (at) => {
      const l = layerOf(at)
      return l === undefined ? undefined : look(l, at)
    },
    readlink: (at) => inDir(layerOf(at)!, split(at)[0], undefined, (d) => d.readlink(split(at)[1])),
    makeDir: (at, _owner, mode) => inDir(upper, split(at)[0], makeParents, (d) => replaceWithDir(d, split(at)[1], undefined, mode)),
    makeFile: (at) => inDir(upper, split(at)[0], makeParents, (d) => replaceWithFile(d, split(at)[1], undefined)),
    readText: (at, max) => {
      const l = layerOf(at)
      return l === undefined ? undefined : inDir(l, split(at)[0], undefined, (d) => readIn(d, split(at)[1], max))
    },
    writeText: (at, text) =>
      inDir(upper, split(at)[0], makeParents, (d) => {
        replaceWithFile(d, split(at)[1], undefined)
        writeIn(d, split(at)[1], text)
      }),
  }
}

/**
 * Resolves the directories on the way to `target` in `view` (links
 * followed inside the root), making those that are missing or no
 * directory when `make` (owned by `owner`, or the view's owner); returns
 * the resolved components with the leaf, or undefined where, without
 * `make`, the way is not there.
 */
const walk = (view: View, target: string, make: boolean, owner?: TargetOwner): string[] | undefined => {
  const todo = parts(target)
  const leaf = todo.pop()
  if (leaf === undefined || leaf === '..') throw new TargetProblem('is not a path below the root')
  const at: string[] = []
  let links = 0
  while (todo.length > 0) {
    const name = todo.shift()!
    if (name === '..') {
      at.pop()
      continue
    }
    const here = [...at, name]
    const st = view.lstat(here)
    if (st?.isSymbolicLink()) {
      if (++links > MAX_LINKS) throw new TargetProblem('is reached through too many links')
      const to = view.readlink(here)
      if (path.isAbsolute(to)) at.length = 0
      todo.unshift(...parts(to))
      continue
    }
    if (!st?.isDirectory()) {
      if (!make) return undefined
      view.makeDir(here, owner)
    }
    at.push(name)
  }
  return [...at, leaf]
}

/** Makes `target` real in `view`; returns it resolved. */
const claim = (view: View, target: MountTarget): string => {
  const at = walk(view, target.path, true)!
  if (target.kind === 'dir') view.makeDir(at, undefined, target.mode)
  else view.makeFile(at)
  return `/${at.join('/')}`
}

/**
 * Makes each target real in `view` and returns each resolved, by the path
 * asked for. Throws a plain Error (the app cannot start: 126) when one
 * cannot be made.
 */
export const claimMountTargets = (view: View, targets: readonly MountTarget[]): Map<string, string> => {
  const out = new Map<string, string>()
  for (const t of targets) {
    if (out.has(t.path)) continue
    try {
      out.set(t.path, claim(view, t))
    } catch (er) {
      if (er instanceof TargetProblem) throw cannotMake(t.path, er.message)
      throw er
    }
  }
  return out
}

/** The app's working directory `p` as podman treats it: the image's own (`make`) made where missing, given to `owner` (the app's user); another must be there. Whether it is now. */
export const ensureWorkdir = (view: View, p: string, owner: TargetOwner | undefined, make: boolean): boolean => {
  try {
    const at = walk(view, p, make, owner)
    if (at === undefined) return false
    if (view.lstat(at) !== undefined) return true
    if (make) view.makeDir(at, owner)
    return make
  } catch (er) {
    if (er instanceof TargetProblem) throw cannotMake(p, er.message)
    throw er
  }
}

/** The text of the file `p` of the root in `view`, read where its links lead inside the root; undefined if there is none. */
export const readFileIn = (view: View, p: string, max: number): string | undefined => {
  try {
    const found = walk(view, p, false)
    return found && view.lstat(found)?.isFile() ? view.readText(found, max) : undefined
  } catch (er) {
    if (er instanceof TargetProblem) return undefined
    throw er
  }
}

/**
 * Adds `line` to the file `p` of the root in `view` (/etc/passwd), read
 * where the root's links lead inside it (at most `max` bytes) and written
 * back there as a real file of the app's own.
 */
export const appendLine = (view: View, p: string, line: string, max: number): void => {
  try {
    const text = readFileIn(view, p, max) ?? ''
    view.writeText(walk(view, p, true)!, `${text}${text === '' || text.endsWith('\n') ? '' : '\n'}${line}\n`)
  } catch (er) {
    if (er instanceof TargetProblem) throw cannotMake(p, er.message)
    throw er
  }
}
