/**
 * A directory opened without following a link, and operations on the names
 * in it that resolve from that directory, however the paths around it
 * change meanwhile: openat(2) and friends. Node has none (nodejs/node#31110);
 * on Linux `/proc/self/fd/<fd>/<name>` resolves `<name>` from the open
 * directory, whatever path leads to it now, so every call below is one
 * system call on such a path, and only `<name>`, one component, is looked
 * up by name. A link found there is never followed: files and directories
 * are opened O_NOFOLLOW, unlink and rmdir never follow one anyway.
 *
 * This is what makes a tree that someone else can write (an app's root
 * or volume, when root runs podctl and the app another user) safe to walk:
 * swapping a directory for a link between two calls makes the second fail
 * (ELOOP, ENOTDIR), never reach the link's target.
 */
import fs from 'node:fs'
import path from 'node:path'
import { errnoCode } from '../errors.js'

// libuv opens every descriptor close-on-exec: no app inherits one.
const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = fs.constants
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW

/** A single path component: no "/", not "." or "..", not empty. */
export const isComponent = (name: string): boolean => name !== '' && name !== '.' && name !== '..' && !name.includes('/') && !name.includes('\0')

const component = (name: string): string => {
  if (!isComponent(name)) throw new Error(`bug: ${JSON.stringify(name)} is not one path component`)
  return name
}

export class Dir {
  /** The open directory. */
  readonly fd: number
  /** Where it was when opened: for messages, never for access. */
  readonly path: string
  /** Its device (st_dev): what "the same file system" means below it. */
  readonly dev: number
  #closed = false

  private constructor(fd: number, where: string) {
    this.fd = fd
    this.path = where
    try {
      this.dev = fs.fstatSync(fd).dev
    } catch (er) {
      fs.closeSync(fd)
      throw er
    }
  }

  /**
   * Opens the directory at `where`, an absolute path. Links on the way to
   * it are followed (they are above the root podctl trusts); the last
   * component is not: a link there is ELOOP or ENOTDIR.
   */
  static open(where: string): Dir {
    return new Dir(fs.openSync(where, DIR_FLAGS), where)
  }

  /** The path that resolves `name` from this directory (for one system call). */
  at(name: string): string {
    return `/proc/self/fd/${this.fd}/${component(name)}`
  }

  /** Opens the directory `name` in this one, never through a link. */
  openDir(name: string): Dir {
    return new Dir(fs.openSync(this.at(name), DIR_FLAGS), path.join(this.path, name))
  }

  /** The entries of this directory, with their types (d_type). */
  entries(): fs.Dirent[] {
    return fs.readdirSync(`/proc/self/fd/${this.fd}`, { withFileTypes: true })
  }

  /** lstat of `name`, or undefined if there is none. */
  lstat(name: string): fs.Stats | undefined {
    return fs.lstatSync(this.at(name), { throwIfNoEntry: false })
  }

  unlink(name: string): void {
    fs.unlinkSync(this.at(name))
  }

  rmdir(name: string): void {
    fs.rmdirSync(this.at(name))
  }

  mkdir(name: string, mode: number): void {
    fs.mkdirSync(this.at(name), { mode })
  }

  /** Sets the mode of the directory `name` (through a descriptor of it: never a link's target). */
  chmodDir(name: string, mode: number): void {
    const d = this.openDir(name)
    try {
      fs.fchmodSync(d.fd, mode)
    } finally {
      d.close()
    }
  }

  symlink(target: string, name: string): void {
    fs.symlinkSync(target, this.at(name))
  }

  readlink(name: string): string {
    return fs.readlinkSync(this.at(name))
  }

  /** Makes `name` here a hard link to `from` in `fromDir`; link(2) never follows a link it is given. */
  link(fromDir: Dir, from: string, name: string): void {
    fs.linkSync(fromDir.at(from), this.at(name))
  }

  /** Gives `name` (a link itself, if it is one) to `uid` and `gid`. */
  lchown(name: string, uid: number, gid: number): void {
    fs.lchownSync(this.at(name), uid, gid)
  }

  /** Sets the times of `name` (a link itself, if it is one). */
  lutimes(name: string, atime: Date | number, mtime: Date | number): void {
    fs.lutimesSync(this.at(name), atime, mtime)
  }

  /** Renames `name` here to `to` in `toDir` (the same directory by default). */
  rename(name: string, to: string, toDir: Dir = this): void {
    fs.renameSync(this.at(name), toDir.at(to))
  }

  /** Opens the file `name` with `flags` (O_NOFOLLOW added), creating it with `mode`. */
  openFile(name: string, flags: number, mode?: number): number {
    return fs.openSync(this.at(name), flags | O_NOFOLLOW, mode)
  }

  close(): void {
    if (this.#closed) return
    this.#closed = true
    fs.closeSync(this.fd)
  }

  /** Runs `fn` with the directory `name` in this one open; closes it after. */
  withDir<T>(name: string, fn: (dir: Dir) => T): T {
    const d = this.openDir(name)
    try {
      return fn(d)
    } finally {
      d.close()
    }
  }
}

/** Runs `fn` with the directory at `where` open (see Dir.open); closes it after. */
export const withDir = <T>(where: string, fn: (dir: Dir) => T): T => {
  const d = Dir.open(where)
  try {
    return fn(d)
  } finally {
    d.close()
  }
}

/** Whether an error says that what was opened as a directory is a link or not a directory now. */
export const isNotADirectory = (er: unknown): boolean => {
  const code = errnoCode(er)
  return code === 'ELOOP' || code === 'ENOTDIR'
}
