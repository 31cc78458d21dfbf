/**
 * One small handler per kind of layer entry (lib/image/unpack.ts states
 * the rules they keep). Each gets the entry's place and its directory,
 * opened without following a link by the RenderTree, and makes the entry
 * there by one call relative to that directory.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import type { Header } from 'tar-stream'
import { PodctlError, errnoCode, oneLine } from '../errors.js'
import { isComponent, type Dir } from '../fs/dir.js'
import { HostileImageError } from './hostile.js'
import { xattrsOf } from './tar.js'
import type { Place, RenderTree } from './unpack-tree.js'

/** Makes one entry of `h`'s type at `p` in `dir`; `data` is its content (a regular file's). */
export type EntryHandler = (tree: RenderTree, dir: Dir, p: Place, h: Header, data: AsyncIterable<Buffer>) => void | Promise<void>

const { O_WRONLY, O_CREAT, O_EXCL } = fs.constants
const OPAQUE = '.wh..wh..opq'
export const WHITEOUT = '.wh.'

/** A regular file: created O_EXCL (what was there goes first), its owner, then its mode (chown clears setuid), times and attributes. */
const file: EntryHandler = async (tree, dir, p, h, data) => {
  const mode = h.mode & 0o7777
  if (!tree.opts.asRoot && (mode & 0o6000) !== 0) {
    throw tree.hostile(`it is a ${mode & 0o4000 ? 'setuid' : 'setgid'} file (mode ${mode.toString(8)}), which podctl imports only as root`, 'import it as root; nothing of it was kept')
  }
  const owner = tree.owner(h.uid, h.gid)
  let fd: number
  try {
    fd = dir.openFile(p.leaf, O_WRONLY | O_CREAT | O_EXCL, 0o600)
  } catch (er) {
    if (errnoCode(er) !== 'EEXIST') throw er
    tree.clear(dir, p, false)
    fd = dir.openFile(p.leaf, O_WRONLY | O_CREAT | O_EXCL, 0o600)
  }
  try {
    for await (const chunk of data) {
      let off = 0
      while (off < chunk.length) off += fs.writeSync(fd, chunk, off)
    }
    if (owner !== undefined) fs.fchownSync(fd, owner.uid, owner.gid)
    fs.fchmodSync(fd, mode)
    fs.futimesSync(fd, h.mtime, h.mtime)
    tree.xattrs(`/proc/${process.pid}/fd/${fd}`, false, xattrsOf(h))
  } finally {
    fs.closeSync(fd)
  }
}

/** A directory: made 0700 unless one is there; its mode, owner and time wait for the end of the render. */
const directory: EntryHandler = (tree, dir, p, h) => {
  if (!tree.clear(dir, p, true)) dir.mkdir(p.leaf, 0o700)
  tree.dirs.set(p.rel, tree.deferred(h))
}

/** A symbolic link, made as it is, wherever it points: nothing is ever written through one. */
const symlink: EntryHandler = (tree, dir, p, h) => {
  if (h.linkname === '' || h.linkname.includes('\0')) throw tree.hostile('it is a symbolic link to nothing')
  tree.clear(dir, p, false)
  dir.symlink(h.linkname, p.leaf)
  const owner = tree.owner(h.uid, h.gid)
  if (owner !== undefined) dir.lchown(p.leaf, owner.uid, owner.gid)
  dir.lutimes(p.leaf, h.mtime, h.mtime)
  tree.xattrs(`/proc/${process.pid}/fd/${dir.fd}/${p.leaf}`, true, xattrsOf(h))
}

/** A hard link: to an entry of the image that exists and is not a directory, reached without following a link. */
const hardLink: EntryHandler = (tree, dir, p, h) => {
  const t = tree.place(h.linkname, 'its link target')
  if (t.rel === '') throw tree.hostile('it is a hard link to the root directory')
  let tdir: Dir | undefined
  try {
    tdir = tree.dir(t.dirRel, false)
  } catch (er) {
    if (er instanceof HostileImageError) throw tree.hostile(`it is a hard link to ${JSON.stringify(oneLine(t.rel))}, whose way passes a symbolic link or a file; podctl never follows a link inside an image`)
    throw er
  }
  const tst = tdir?.lstat(t.leaf)
  if (tdir === undefined || tst === undefined) throw tree.hostile(`it is a hard link to ${JSON.stringify(oneLine(t.rel))}, which is not in the image`)
  if (tst.isDirectory()) throw tree.hostile(`it is a hard link to the directory ${JSON.stringify(oneLine(t.rel))}`)
  if (t.rel === p.rel) return
  tree.clear(dir, p, false)
  dir.link(tdir, t.leaf, p.leaf)
}

/** A device node (root only) or a fifo. */
const special: EntryHandler = (tree, dir, p, h) => {
  const fifo = h.type === 'fifo'
  if (!fifo && !tree.opts.asRoot) {
    throw tree.hostile(`it is a device node (${h.type} ${h.devmajor}:${h.devminor}), which podctl imports only as root`, 'import it as root; nothing of it was kept')
  }
  tree.clear(dir, p, false)
  // Node has no mknod(2); coreutils' mknod makes the node at a path resolved from our open directory.
  const at = `/proc/${process.pid}/fd/${dir.fd}/${p.leaf}`
  const args = ['-m', (h.mode & 0o777).toString(8), at, fifo ? 'p' : h.type === 'block-device' ? 'b' : 'c', ...(fifo ? [] : [String(h.devmajor), String(h.devminor)])]
  const r = spawnSync('mknod', args, { encoding: 'utf8' })
  if (r.error !== undefined || r.status !== 0) throw new PodctlError('EFAILED', `cannot make ${h.type} ${p.rel} of image ${tree.opts.image}: ${r.error?.message ?? r.stderr.trim()}`)
  const owner = tree.owner(h.uid, h.gid)
  if (owner !== undefined) dir.lchown(p.leaf, owner.uid, owner.gid)
  dir.lutimes(p.leaf, h.mtime, h.mtime)
}

/** `.wh.NAME` removes NAME of the layers below; `.wh..wh..opq` empties its directory of them. */
export const whiteout = (tree: RenderTree, p: Place): void => {
  const dir = tree.dir(p.dirRel)!
  if (p.leaf === OPAQUE) {
    for (const e of dir.entries()) {
      const rel = p.dirRel === '' ? e.name : `${p.dirRel}/${e.name}`
      if (!tree.added.has(rel)) tree.remove(dir, e.name, rel)
    }
    return
  }
  if (p.leaf.startsWith(`${WHITEOUT}${WHITEOUT}`)) return // aufs's own bookkeeping (.wh..wh.plnk): not a whiteout
  const name = p.leaf.slice(WHITEOUT.length)
  if (!isComponent(name)) throw tree.hostile(`it is a whiteout of ${JSON.stringify(name)}, which names no entry of its directory (it would remove the directory itself or one above it)`)
  const rel = p.dirRel === '' ? name : `${p.dirRel}/${name}`
  if (tree.added.has(rel)) return // a whiteout hides lower layers only
  tree.remove(dir, name, rel)
}

/** The handler of each entry type podctl unpacks; any other type is refused. */
export const HANDLERS: Readonly<Record<string, EntryHandler>> = {
  file,
  'contiguous-file': file,
  directory,
  symlink,
  link: hardLink,
  'character-device': special,
  'block-device': special,
  fifo: special,
}
