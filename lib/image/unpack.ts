/**
 * Unpacking layers into a render: the tar-slip class of bugs
 * (CVE-2019-14271, CVE-2018-15664, runc's CVE-2019-5736 family) is what
 * this module is built against. The render's root is opened once; every
 * directory below it is opened from its parent without following a link
 * (lib/fs/dir.ts), and every file, link and directory is created by one
 * call relative to such an open directory. So:
 *
 * - an absolute name or one with `..` is refused before anything is done;
 * - an entry whose way passes a symbolic link (one an earlier entry or
 *   layer planted, wherever it points) is refused: the open of that
 *   component fails (ELOOP), nothing is written through it. Layers made by
 *   diffing file systems never write through a link, so only a hostile or
 *   broken image does;
 * - a hard link must name an existing non-directory in the render, reached
 *   the same way;
 * - device nodes, and setuid or setgid files, are refused when podctl is
 *   not root; ownership is set only as root (shifted by an id map for
 *   user namespaces);
 * - the bytes a render takes are counted as they are unpacked, against
 *   `--max-size`.
 *
 * OCI whiteouts (`.wh.NAME` removes NAME of lower layers, `.wh..wh..opq`
 * empties its directory of what lower layers put there) are applied as
 * the image spec says. Directories' modes, owners and times are set at the
 * end, deepest first, so that a read-only directory can still be filled
 * and a directory's time is not changed by what is created in it.
 */
import { createHash } from 'node:crypto'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import { Transform, type Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { Header } from 'tar-stream'
import { PodctlError, errnoCode, isPodctlError, oneLine } from '../errors.js'
import { Dir, isComponent } from '../fs/dir.js'
import { describeFailure } from '../fs/errors.js'
import { removeTree } from '../fs/remove-tree.js'
import { HostileImageError, NO_SPACE_HINT, PAST_MAX_HINT, isNoSpace } from './hostile.js'
import { tarExtract, xattrsOf } from './tar.js'

/** Ids of a user namespace: the image's id 0 is `uid`/`gid` on the host, for `size` ids. */
export interface IdMap {
  uid: number
  gid: number
  size: number
}

export interface UnpackOptions {
  /** The image, for messages (its name, or its short digest). */
  image: string
  /** What the render may take in all (uncompressed tar bytes): --max-size. */
  maxBytes: number
  /** Whether owners are set (podctl runs as root); otherwise every file is the invoking user's. */
  asRoot: boolean
  /** Shifts owners into a user namespace's range (root only). */
  idMap?: IdMap
  /** Called with each chunk of tar bytes unpacked (progress). */
  onBytes?: (n: number) => void
}

export { HostileImageError }

const { O_WRONLY, O_CREAT, O_EXCL } = fs.constants
const DIR_CACHE = 64
const OPAQUE = '.wh..wh..opq'
const WHITEOUT = '.wh.'
/** Attributes an image may not set: SELinux labels are the host's, overlay's own are overlay's. */
const SKIPPED_XATTR = /^(security\.selinux$|trusted\.overlay\.)/

interface DeferredDir {
  mode: number
  owner: { uid: number; gid: number } | undefined
  mtime: Date
  xattrs: Map<string, Buffer>
}

/** Where an entry goes: its directory's path below the root ('' for the root) and its name. */
interface Place {
  dirRel: string
  leaf: string
  rel: string
}

export interface LayerStats {
  /** Uncompressed tar bytes. */
  bytes: number
  /** sha256 of the uncompressed tar (the config's diff_id), hex. */
  diffHex: string
}

/** Unpacks layers, one after the other, into the directory `root` (new and empty, in podctl's own work dir). */
export class RenderWriter {
  readonly #root: Dir
  readonly #opts: UnpackOptions
  readonly #cache = new Map<string, Dir>()
  readonly #dirs = new Map<string, DeferredDir>()
  #added = new Set<string>()
  #layer = ''
  #entry = ''
  #bytes = 0
  /** Extended attributes that could not be set (the file system or the user does not take them). */
  skippedXattrs = 0
  #setfattrMissing = false

  constructor(root: string, opts: UnpackOptions) {
    this.#root = Dir.open(root)
    this.#opts = opts
  }

  /** Total uncompressed bytes unpacked so far. */
  get bytes(): number {
    return this.#bytes
  }

  #hostile(why: string, hint?: string): HostileImageError {
    return new HostileImageError(this.#opts.image, this.#layer, this.#entry, why, hint)
  }

  /**
   * Applies one layer: `tar` is its uncompressed tar stream, `layer` names
   * it in messages ("layer 2 (sha256:…)"). Resolves to its size and
   * digest once it is all applied.
   */
  async applyLayer(tar: Readable, layer: string): Promise<LayerStats> {
    this.#layer = layer
    this.#entry = '(the layer itself)'
    this.#added = new Set()
    const hash = createHash('sha256')
    let bytes = 0
    const count = new Transform({
      transform: (chunk: Buffer, _enc, cb) => {
        bytes += chunk.length
        this.#bytes += chunk.length
        if (this.#bytes > this.#opts.maxBytes) {
          cb(this.#hostile(`the image unpacks past --max-size (${this.#opts.maxBytes} bytes)`, PAST_MAX_HINT))
          return
        }
        hash.update(chunk)
        this.#opts.onBytes?.(chunk.length)
        cb(null, chunk)
      },
    })
    const extract = tarExtract()
    const feeding = pipeline(tar, count, extract)
    let fed: unknown
    feeding.catch((er: unknown) => {
      fed = er
    })
    try {
      for await (const entry of extract) {
        this.#entry = entry.header.name
        await this.#apply(entry.header, entry as unknown as AsyncIterable<Buffer>)
      }
      await feeding
    } catch (er) {
      tar.destroy()
      throw this.#explain(fed ?? er)
    }
    if (fed !== undefined) throw this.#explain(fed)
    this.#entry = '(the layer itself)'
    return { bytes, diffHex: hash.digest('hex') }
  }

  /** What an error while unpacking means to a user, naming the entry and the image. */
  #explain(er: unknown): unknown {
    if (isPodctlError(er)) return er
    const code = errnoCode(er)
    if (isNoSpace(er)) return this.#hostile(`no space left on the device (${code}) to unpack it`, NO_SPACE_HINT)
    if (code === 'ENAMETOOLONG') return this.#hostile('its name is too long for this file system')
    if (code === 'EMLINK') return this.#hostile('too many links to one file for this file system')
    if (code === undefined || (er as { syscall?: unknown }).syscall === undefined) {
      // tar-stream's and zlib's errors: the layer is not a (compressed) tar.
      return this.#hostile(`the layer is not a readable tar stream: ${(er as Error).message}`, 'the image is damaged; nothing of it was kept')
    }
    return describeFailure(er, `cannot unpack ${this.#layer} of image ${this.#opts.image}, entry ${JSON.stringify(oneLine(this.#entry))}`)
  }

  /** Where an entry name points below the root; refuses absolute names and `..`. */
  #place(name: string, what = 'its path'): Place {
    if (name.startsWith('/')) throw this.#hostile(`${what} is absolute`)
    const parts = name.split('/').filter((p) => p !== '' && p !== '.')
    if (parts.includes('..')) throw this.#hostile(`${what} contains ".."`)
    if (name.includes('\0')) throw this.#hostile(`${what} contains a NUL byte`)
    const leaf = parts.pop() ?? ''
    const dirRel = parts.join('/')
    return { dirRel, leaf, rel: dirRel === '' ? leaf : `${dirRel}/${leaf}` }
  }

  /**
   * The open directory `rel` below the root, opened from its parent and
   * never through a link; missing directories on the way are created
   * (0755, as tar and Docker do) unless `create` is false (then undefined).
   */
  #dir(rel: string, create = true): Dir | undefined {
    if (rel === '') return this.#root
    const hit = this.#cache.get(rel)
    if (hit !== undefined) {
      this.#cache.delete(rel)
      this.#cache.set(rel, hit)
      return hit
    }
    const slash = rel.lastIndexOf('/')
    const parentRel = slash < 0 ? '' : rel.slice(0, slash)
    const name = slash < 0 ? rel : rel.slice(slash + 1)
    const parent = this.#dir(parentRel, create)
    if (parent === undefined) return undefined
    let d: Dir
    try {
      d = parent.openDir(name)
    } catch (er) {
      const code = errnoCode(er)
      if (code === 'ENOENT') {
        if (!create) return undefined
        parent.mkdir(name, 0o755)
        this.#added.add(rel)
        const owner = this.#owner(0, 0)
        if (owner !== undefined) parent.lchown(name, owner.uid, owner.gid)
        d = parent.openDir(name)
      } else if (code === 'ELOOP' || code === 'ENOTDIR') {
        // O_NOFOLLOW with O_DIRECTORY says ENOTDIR for a link on Linux: look at what is there.
        if (parent.lstat(name)?.isSymbolicLink()) {
          throw this.#hostile(`it is written through the symbolic link ${JSON.stringify(oneLine(rel))} (to ${JSON.stringify(oneLine(parent.readlink(name)))}), which an earlier entry made; podctl never follows a link inside an image`)
        }
        throw this.#hostile(`it is below ${JSON.stringify(oneLine(rel))}, which is not a directory`)
      } else throw er
    }
    this.#cache.set(rel, d)
    if (this.#cache.size > DIR_CACHE) {
      const [oldRel, old] = this.#cache.entries().next().value as [string, Dir]
      this.#cache.delete(oldRel)
      old.close()
    }
    return d
  }

  /** Forgets the open directories at and below `rel` (it is being removed). */
  #forget(rel: string): void {
    const prefix = `${rel}/`
    for (const [k, d] of this.#cache) {
      if (k === rel || k.startsWith(prefix)) {
        this.#cache.delete(k)
        d.close()
      }
    }
  }

  /** Removes `leaf` of `dir` (`rel` below the root), whatever it is; a directory with all below it. */
  #remove(dir: Dir, leaf: string, rel: string, st: fs.Stats | undefined = dir.lstat(leaf)): void {
    if (st === undefined) return
    if (st.isDirectory()) {
      this.#forget(rel)
      removeTree(dir.at(leaf))
    } else {
      dir.unlink(leaf)
    }
  }

  /** The owner to give an entry's uid and gid, or undefined when owners are not set. */
  #owner(uid: number, gid: number): { uid: number; gid: number } | undefined {
    if (!this.#opts.asRoot) return undefined
    const m = this.#opts.idMap
    if (m === undefined) return { uid, gid }
    if (uid >= m.size || gid >= m.size) throw this.#hostile(`its owner ${uid}:${gid} is outside the ${m.size} ids of the user namespace`)
    return { uid: m.uid + uid, gid: m.gid + gid }
  }

  async #apply(h: Header, data: AsyncIterable<Buffer>): Promise<void> {
    const p = this.#place(h.name)
    if (p.rel === '') {
      if (h.type !== 'directory') throw this.#hostile('it would replace the root directory')
      this.#dirs.set('', this.#deferred(h))
      return drain(data)
    }
    if (p.leaf.startsWith(WHITEOUT)) {
      this.#whiteout(p)
      return drain(data)
    }
    const dir = this.#dir(p.dirRel)!
    switch (h.type) {
      case 'file':
      case 'contiguous-file':
        await this.#file(dir, p, h, data)
        break
      case 'directory':
        this.#directory(dir, p, h)
        break
      case 'symlink':
        this.#symlink(dir, p, h)
        break
      case 'link':
        this.#hardLink(dir, p, h)
        break
      case 'character-device':
      case 'block-device':
      case 'fifo':
        this.#special(dir, p, h)
        break
      default:
        throw this.#hostile(`its type (${h.type ?? 'unknown'}) is not one podctl unpacks`)
    }
    this.#added.add(p.rel)
    return drain(data)
  }

  #deferred(h: Header): DeferredDir {
    return { mode: h.mode & 0o7777, owner: this.#owner(h.uid, h.gid), mtime: h.mtime, xattrs: xattrsOf(h) }
  }

  /** Makes room for a new entry at `leaf`: what is there goes (a directory stays for a directory entry). Returns whether a directory stayed. */
  #clear(dir: Dir, p: Place, keepDir: boolean): boolean {
    const st = dir.lstat(p.leaf)
    if (st === undefined) return false
    if (keepDir && st.isDirectory()) return true
    this.#remove(dir, p.leaf, p.rel, st)
    return false
  }

  async #file(dir: Dir, p: Place, h: Header, data: AsyncIterable<Buffer>): Promise<void> {
    const mode = h.mode & 0o7777
    if (!this.#opts.asRoot && (mode & 0o6000) !== 0) {
      throw this.#hostile(`it is a ${mode & 0o4000 ? 'setuid' : 'setgid'} file (mode ${mode.toString(8)}), which podctl imports only as root`, 'import it as root; nothing of it was kept')
    }
    const owner = this.#owner(h.uid, h.gid)
    let fd: number
    try {
      fd = dir.openFile(p.leaf, O_WRONLY | O_CREAT | O_EXCL, 0o600)
    } catch (er) {
      if (errnoCode(er) !== 'EEXIST') throw er
      this.#clear(dir, p, false)
      fd = dir.openFile(p.leaf, O_WRONLY | O_CREAT | O_EXCL, 0o600)
    }
    try {
      for await (const chunk of data) {
        let off = 0
        while (off < chunk.length) off += fs.writeSync(fd, chunk, off)
      }
      if (owner !== undefined) fs.fchownSync(fd, owner.uid, owner.gid)
      fs.fchmodSync(fd, mode) // after the owner: chown clears setuid
      fs.futimesSync(fd, h.mtime, h.mtime)
      this.#xattrs(`/proc/${process.pid}/fd/${fd}`, false, xattrsOf(h))
    } finally {
      fs.closeSync(fd)
    }
  }

  #directory(dir: Dir, p: Place, h: Header): void {
    if (!this.#clear(dir, p, true)) {
      dir.mkdir(p.leaf, 0o700)
    }
    this.#dirs.set(p.rel, this.#deferred(h))
  }

  #symlink(dir: Dir, p: Place, h: Header): void {
    if (h.linkname === '' || h.linkname.includes('\0')) throw this.#hostile('it is a symbolic link to nothing')
    this.#clear(dir, p, false)
    dir.symlink(h.linkname, p.leaf)
    const owner = this.#owner(h.uid, h.gid)
    if (owner !== undefined) dir.lchown(p.leaf, owner.uid, owner.gid)
    dir.lutimes(p.leaf, h.mtime, h.mtime)
    this.#xattrs(`/proc/${process.pid}/fd/${dir.fd}/${p.leaf}`, true, xattrsOf(h))
  }

  #hardLink(dir: Dir, p: Place, h: Header): void {
    const t = this.#place(h.linkname, 'its link target')
    if (t.rel === '') throw this.#hostile('it is a hard link to the root directory')
    let tdir: Dir | undefined
    try {
      tdir = this.#dir(t.dirRel, false)
    } catch (er) {
      if (er instanceof HostileImageError) throw this.#hostile(`it is a hard link to ${JSON.stringify(oneLine(t.rel))}, whose way passes a symbolic link or a file; podctl never follows a link inside an image`)
      throw er
    }
    const tst = tdir?.lstat(t.leaf)
    if (tdir === undefined || tst === undefined) throw this.#hostile(`it is a hard link to ${JSON.stringify(oneLine(t.rel))}, which is not in the image`)
    if (tst.isDirectory()) throw this.#hostile(`it is a hard link to the directory ${JSON.stringify(oneLine(t.rel))}`)
    if (t.rel === p.rel) return
    this.#clear(dir, p, false)
    dir.link(tdir, t.leaf, p.leaf)
  }

  #special(dir: Dir, p: Place, h: Header): void {
    const fifo = h.type === 'fifo'
    if (!fifo && !this.#opts.asRoot) {
      throw this.#hostile(`it is a device node (${h.type} ${h.devmajor}:${h.devminor}), which podctl imports only as root`, 'import it as root; nothing of it was kept')
    }
    this.#clear(dir, p, false)
    // Node has no mknod(2); coreutils' mknod makes the node at a path resolved from our open directory.
    const at = `/proc/${process.pid}/fd/${dir.fd}/${p.leaf}`
    const args = ['-m', (h.mode & 0o777).toString(8), at, fifo ? 'p' : h.type === 'block-device' ? 'b' : 'c', ...(fifo ? [] : [String(h.devmajor), String(h.devminor)])]
    const r = spawnSync('mknod', args, { encoding: 'utf8' })
    if (r.error !== undefined || r.status !== 0) throw new PodctlError('EFAILED', `cannot make ${h.type} ${p.rel} of image ${this.#opts.image}: ${r.error?.message ?? r.stderr.trim()}`)
    const owner = this.#owner(h.uid, h.gid)
    if (owner !== undefined) dir.lchown(p.leaf, owner.uid, owner.gid)
    dir.lutimes(p.leaf, h.mtime, h.mtime)
  }

  /** `.wh.NAME` removes NAME of the layers below; `.wh..wh..opq` empties its directory of them. */
  #whiteout(p: Place): void {
    const dir = this.#dir(p.dirRel)!
    if (p.leaf === OPAQUE) {
      for (const e of dir.entries()) {
        const rel = p.dirRel === '' ? e.name : `${p.dirRel}/${e.name}`
        if (!this.#added.has(rel)) this.#remove(dir, e.name, rel)
      }
      return
    }
    if (p.leaf.startsWith(`${WHITEOUT}${WHITEOUT}`)) return // aufs's own bookkeeping (.wh..wh.plnk): not a whiteout
    const name = p.leaf.slice(WHITEOUT.length)
    if (!isComponent(name)) throw this.#hostile(`it is a whiteout of ${JSON.stringify(name)}, which names no entry of its directory (it would remove the directory itself or one above it)`)
    const rel = p.dirRel === '' ? name : `${p.dirRel}/${name}`
    if (this.#added.has(rel)) return // a whiteout hides lower layers only
    this.#remove(dir, name, rel)
  }

  /** Sets extended attributes with setfattr (Node has no setxattr): where the file system and the user allow. */
  #xattrs(at: string, noFollow: boolean, xattrs: Map<string, Buffer>): void {
    for (const [name, value] of xattrs) {
      if (SKIPPED_XATTR.test(name) || (!this.#opts.asRoot && !name.startsWith('user.')) || this.#setfattrMissing) {
        this.skippedXattrs++
        continue
      }
      const r = spawnSync('setfattr', [...(noFollow ? ['-h'] : []), '-n', name, '-v', `0x${value.toString('hex')}`, '--', at], { encoding: 'utf8' })
      if (r.error !== undefined) this.#setfattrMissing = true
      if (r.error !== undefined || r.status !== 0) this.skippedXattrs++
    }
  }

  /**
   * Sets the directories' modes, owners, times and attributes, deepest
   * first, and closes everything. The render is complete after this.
   */
  finish(): void {
    this.#layer = 'the render'
    const rels = [...this.#dirs.keys()].sort((a, b) => depth(b) - depth(a))
    for (const rel of rels) {
      const d = this.#dirs.get(rel)!
      this.#entry = rel === '' ? '.' : rel
      let dir: Dir | undefined
      try {
        dir = rel === '' ? this.#root : this.#dir(rel, false)
      } catch (er) {
        if (er instanceof HostileImageError) continue // replaced by a link or a file by a later layer
        throw er
      }
      if (dir === undefined) continue // removed by a later layer
      if (d.owner !== undefined) fs.fchownSync(dir.fd, d.owner.uid, d.owner.gid)
      fs.fchmodSync(dir.fd, d.mode)
      fs.futimesSync(dir.fd, d.mtime, d.mtime)
      this.#xattrs(`/proc/${process.pid}/fd/${dir.fd}`, false, d.xattrs)
    }
    this.close()
  }

  /** Closes every directory this writer holds open. */
  close(): void {
    for (const d of this.#cache.values()) d.close()
    this.#cache.clear()
    this.#root.close()
  }
}

const depth = (rel: string): number => (rel === '' ? 0 : rel.split('/').length)

/** Reads what is left of an entry's data (tar-stream needs each entry read to its end). */
const drain = async (data: AsyncIterable<Buffer>): Promise<void> => {
  for await (const _ of data) void _
}
