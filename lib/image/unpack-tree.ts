/**
 * Where an entry of a layer goes (lib/image/unpack.ts states the rules):
 * the render's root, opened once, and every directory below it opened
 * from its parent without following a link, kept in a small cache. Every
 * handler of lib/image/unpack-entries.ts reaches the render only through
 * this: a name is placed (absolute names and `..` refused), its directory
 * opened (a link on the way refused), what is in its way removed, its
 * owner mapped, its attributes set. It also knows which entry it is at,
 * so that every refusal names the image, the layer and the entry.
 */
import { spawnSync } from 'node:child_process'
import type fs from 'node:fs'
import type { Header } from 'tar-stream'
import { errnoCode, oneLine } from '../errors.js'
import { Dir } from '../fs/dir.js'
import { removeTree } from '../fs/remove-tree.js'
import { HostileImageError } from './hostile.js'
import { xattrsOf } from './tar.js'

/** Ids of a user namespace: the image's id 0 is `uid`/`gid` on the host, for `size` ids. */
export interface IdMap {
  uid: number
  gid: number
  size: number
}

/** Where an entry goes: its directory's path below the root ('' for the root) and its name. */
export interface Place {
  dirRel: string
  leaf: string
  rel: string
}

/** A directory's mode, owner, time and attributes, set when the render is finished. */
export interface DeferredDir {
  mode: number
  owner: { uid: number; gid: number } | undefined
  mtime: Date
  xattrs: Map<string, Buffer>
}

export interface TreeOptions {
  /** The image, for messages (its name, or its short digest). */
  image: string
  /** Whether owners are set (podctl runs as root); otherwise every file is the invoking user's. */
  asRoot: boolean
  /** Shifts owners into a user namespace's range (root only). */
  idMap?: IdMap
}

const DIR_CACHE = 64
/** Attributes an image may not set: SELinux labels are the host's, overlay's own are overlay's. */
const SKIPPED_XATTR = /^(security\.selinux$|trusted\.overlay\.)/

/** The render being written, reached only without following links. */
export class RenderTree {
  readonly root: Dir
  readonly opts: TreeOptions
  readonly #cache = new Map<string, Dir>()
  /** Directories to finish, by path below the root. */
  readonly dirs = new Map<string, DeferredDir>()
  /** What the current layer made (a whiteout hides lower layers only). */
  added = new Set<string>()
  layer = ''
  entry = ''
  /** Extended attributes that could not be set (the file system or the user does not take them). */
  skippedXattrs = 0
  #setfattrMissing = false

  constructor(root: string, opts: TreeOptions) {
    this.root = Dir.open(root)
    this.opts = opts
  }

  /** The refusal of the current entry. */
  hostile(why: string, hint?: string): HostileImageError {
    return new HostileImageError(this.opts.image, this.layer, this.entry, why, hint)
  }

  /** Where an entry name points below the root; refuses absolute names and `..`. */
  place(name: string, what = 'its path'): Place {
    if (name.startsWith('/')) throw this.hostile(`${what} is absolute`)
    const parts = name.split('/').filter((p) => p !== '' && p !== '.')
    if (parts.includes('..')) throw this.hostile(`${what} contains ".."`)
    if (name.includes('\0')) throw this.hostile(`${what} contains a NUL byte`)
    const leaf = parts.pop() ?? ''
    const dirRel = parts.join('/')
    return { dirRel, leaf, rel: dirRel === '' ? leaf : `${dirRel}/${leaf}` }
  }

  /**
   * The open directory `rel` below the root, opened from its parent and
   * never through a link; missing directories on the way are created
   * (0755, as tar and Docker do) unless `create` is false (then undefined).
   */
  dir(rel: string, create = true): Dir | undefined {
    if (rel === '') return this.root
    const hit = this.#cache.get(rel)
    if (hit !== undefined) {
      this.#cache.delete(rel)
      this.#cache.set(rel, hit)
      return hit
    }
    const slash = rel.lastIndexOf('/')
    const parent = this.dir(slash < 0 ? '' : rel.slice(0, slash), create)
    if (parent === undefined) return undefined
    const d = this.#open(parent, rel, slash < 0 ? rel : rel.slice(slash + 1), create)
    if (d === undefined) return undefined
    this.#cache.set(rel, d)
    if (this.#cache.size > DIR_CACHE) {
      const [oldRel, old] = this.#cache.entries().next().value as [string, Dir]
      this.#cache.delete(oldRel)
      old.close()
    }
    return d
  }

  #open(parent: Dir, rel: string, name: string, create: boolean): Dir | undefined {
    try {
      return parent.openDir(name)
    } catch (er) {
      const code = errnoCode(er)
      if (code === 'ENOENT') {
        if (!create) return undefined
        parent.mkdir(name, 0o755)
        this.added.add(rel)
        const owner = this.owner(0, 0)
        if (owner !== undefined) parent.lchown(name, owner.uid, owner.gid)
        return parent.openDir(name)
      }
      if (code === 'ELOOP' || code === 'ENOTDIR') {
        // O_NOFOLLOW with O_DIRECTORY says ENOTDIR for a link on Linux: look at what is there.
        if (parent.lstat(name)?.isSymbolicLink()) {
          throw this.hostile(`it is written through the symbolic link ${JSON.stringify(oneLine(rel))} (to ${JSON.stringify(oneLine(parent.readlink(name)))}), which an earlier entry made; podctl never follows a link inside an image`)
        }
        throw this.hostile(`it is below ${JSON.stringify(oneLine(rel))}, which is not a directory`)
      }
      throw er
    }
  }

  /** Removes `leaf` of `dir` (`rel` below the root), whatever it is; a directory with all below it. */
  remove(dir: Dir, leaf: string, rel: string, st: fs.Stats | undefined = dir.lstat(leaf)): void {
    if (st === undefined) return
    if (!st.isDirectory()) return dir.unlink(leaf)
    const prefix = `${rel}/`
    for (const [k, d] of this.#cache) {
      if (k === rel || k.startsWith(prefix)) {
        this.#cache.delete(k)
        d.close()
      }
    }
    removeTree(dir.at(leaf))
  }

  /** Makes room for a new entry at `p`: what is there goes (a directory stays when `keepDir`). Returns whether a directory stayed. */
  clear(dir: Dir, p: Place, keepDir: boolean): boolean {
    const st = dir.lstat(p.leaf)
    if (st === undefined) return false
    if (keepDir && st.isDirectory()) return true
    this.remove(dir, p.leaf, p.rel, st)
    return false
  }

  /** The owner to give an entry's uid and gid, or undefined when owners are not set. */
  owner(uid: number, gid: number): { uid: number; gid: number } | undefined {
    if (!this.opts.asRoot) return undefined
    const m = this.opts.idMap
    if (m === undefined) return { uid, gid }
    if (uid >= m.size || gid >= m.size) throw this.hostile(`its owner ${uid}:${gid} is outside the ${m.size} ids of the user namespace`)
    return { uid: m.uid + uid, gid: m.gid + gid }
  }

  /** A directory entry's attributes, to set when the render is finished. */
  deferred(h: Header): DeferredDir {
    return { mode: h.mode & 0o7777, owner: this.owner(h.uid, h.gid), mtime: h.mtime, xattrs: xattrsOf(h) }
  }

  /** Sets extended attributes with setfattr (Node has no setxattr): where the file system and the user allow. */
  xattrs(at: string, noFollow: boolean, xattrs: Map<string, Buffer>): void {
    for (const [name, value] of xattrs) {
      if (SKIPPED_XATTR.test(name) || (!this.opts.asRoot && !name.startsWith('user.')) || this.#setfattrMissing) {
        this.skippedXattrs++
        continue
      }
      const r = spawnSync('setfattr', [...(noFollow ? ['-h'] : []), '-n', name, '-v', `0x${value.toString('hex')}`, '--', at], { encoding: 'utf8' })
      if (r.error !== undefined) this.#setfattrMissing = true
      if (r.error !== undefined || r.status !== 0) this.skippedXattrs++
    }
  }

  /** Closes every directory this tree holds open. */
  close(): void {
    for (const d of this.#cache.values()) d.close()
    this.#cache.clear()
    this.root.close()
  }
}
