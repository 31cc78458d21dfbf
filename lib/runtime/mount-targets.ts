/**
 * The mount targets of an app whose root an image or an app wrote
 * (CONTRACT §12a): before the runtime sees the root, podctl makes each
 * place where the runtime will mount something (/dev, /proc, /sys, the
 * volumes' mount paths, the /etc files it binds) a real directory or file
 * of the app's own root. An image's link there is removed (through the
 * overlay: its upper then hides it), never followed: a runtime that
 * mounts onto a link an image planted (the CVE-2019-16884 and
 * CVE-2025-31133 families) could be steered onto the host.
 *
 * Links on the way to a target are resolved inside the root, as the
 * runtime's own resolution (securejoin) does, so that an image whose
 * /var/run is a link to /run still has its volume where the image means;
 * the runtime is then handed the resolved path, which holds no link.
 * Every step is one name looked up from an open directory (lib/fs/dir.ts).
 */
import path from 'node:path'
import { errnoCode } from '../errors.js'
import { Dir } from '../fs/dir.js'
import fs from 'node:fs'

export interface MountTarget {
  /** Absolute, in the app's root. */
  path: string
  kind: 'dir' | 'file'
}

/** Who owns what is made (the root of a pod with ids of its own). */
export interface TargetOwner {
  uid: number
  gid: number
}

/** As the kernel's own bound on links followed in one lookup. */
const MAX_LINKS = 40

const parts = (p: string): string[] => p.split('/').filter((x) => x !== '' && x !== '.')

/** A target that cannot be made (an app that cannot start for its image: 126). */
const cannotMake = (target: string, why: string): Error => new Error(`mount target ${target} in the app's root ${why}`)

const made = (dir: Dir, name: string, owner: TargetOwner | undefined): void => {
  if (owner !== undefined) dir.lchown(name, owner.uid, owner.gid)
}

/** Makes `name` in `dir` a directory, replacing what else is there (a link, a file). */
const ownDir = (dir: Dir, name: string, owner: TargetOwner | undefined, target: string): void => {
  const st = dir.lstat(name)
  if (st?.isDirectory()) return
  if (st !== undefined) dir.unlink(name)
  try {
    dir.mkdir(name, 0o755)
  } catch (er) {
    throw errnoCode(er) === 'EEXIST' ? cannotMake(target, 'changed while podctl made it') : er
  }
  made(dir, name, owner)
}

/** Makes `name` in `dir` a regular file, replacing a link or a special file, or an empty directory. */
const ownFile = (dir: Dir, name: string, owner: TargetOwner | undefined, target: string): void => {
  const st = dir.lstat(name)
  if (st?.isFile()) return
  if (st?.isDirectory()) {
    try {
      dir.rmdir(name)
    } catch {
      throw cannotMake(target, 'is a directory that is not empty, where a file is mounted')
    }
  } else if (st !== undefined) dir.unlink(name)
  fs.closeSync(dir.openFile(name, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o644))
  made(dir, name, owner)
}

/**
 * Makes `target` a real directory or file in the root open as `root`, and
 * returns where it is once the links on the way are resolved inside the
 * root. Missing directories on the way are made (owned by `owner`).
 */
const claim = (root: Dir, target: MountTarget, owner: TargetOwner | undefined): string => {
  const todo = parts(target.path)
  const leaf = todo.pop()
  if (leaf === undefined || leaf === '..') throw cannotMake(target.path, 'is not a path below the root')
  const stack: string[] = []
  const dirs: Dir[] = []
  const cur = (): Dir => dirs[dirs.length - 1] ?? root
  let links = 0
  try {
    while (todo.length > 0) {
      const name = todo.shift()!
      if (name === '..') {
        stack.pop()
        dirs.pop()?.close()
        continue
      }
      const st = cur().lstat(name)
      if (st?.isSymbolicLink()) {
        if (++links > MAX_LINKS) throw cannotMake(target.path, 'is reached through too many links')
        const to = cur().readlink(name)
        if (path.isAbsolute(to)) {
          stack.length = 0
          for (const d of dirs.splice(0)) d.close()
        }
        todo.unshift(...parts(to))
        continue
      }
      if (!st?.isDirectory()) ownDir(cur(), name, owner, target.path)
      dirs.push(cur().openDir(name))
      stack.push(name)
    }
    if (target.kind === 'dir') ownDir(cur(), leaf, owner, target.path)
    else ownFile(cur(), leaf, owner, target.path)
    return `/${[...stack, leaf].join('/')}`
  } finally {
    for (const d of dirs) d.close()
  }
}

/**
 * Makes each target real in the app's root at `rootfs` (the merged view
 * of its overlay, or its copy) and returns each resolved, by the path
 * asked for. Throws a plain Error (the app cannot start: 126) when one
 * cannot be made.
 */
export const claimMountTargets = (rootfs: string, targets: readonly MountTarget[], owner?: TargetOwner): Map<string, string> => {
  const out = new Map<string, string>()
  const root = Dir.open(rootfs)
  try {
    for (const t of targets) if (!out.has(t.path)) out.set(t.path, claim(root, t, owner))
  } finally {
    root.close()
  }
  return out
}
