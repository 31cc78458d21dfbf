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
 * the image spec says; a whiteout of `..` or `.` is refused. Directories'
 * modes, owners and times are set at the end, deepest first, so that a
 * read-only directory can still be filled and a directory's time is not
 * changed by what is created in it.
 *
 * This module reads the layers and dispatches each entry; where an entry
 * goes, never through a link, is lib/image/unpack-tree.ts; what each kind
 * of entry does there, one small handler each, is lib/image/unpack-entries.ts.
 */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import { Transform, type Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import type { Header } from 'tar-stream'
import { errnoCode, isPodctlError, oneLine } from '../errors.js'
import type { Dir } from '../fs/dir.js'
import { describeFailure } from '../fs/errors.js'
import { HostileImageError, NO_SPACE_HINT, PAST_MAX_HINT, isNoSpace } from './hostile.js'
import { tarExtract } from './tar.js'
import { HANDLERS, WHITEOUT, whiteout } from './unpack-entries.js'
import { RenderTree, type IdMap } from './unpack-tree.js'

export { HostileImageError, type IdMap }

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

export interface LayerStats {
  /** Uncompressed tar bytes. */
  bytes: number
  /** sha256 of the uncompressed tar (the config's diff_id), hex. */
  diffHex: string
}

/** Unpacks layers, one after the other, into the directory `root` (new and empty, in podctl's own work dir). */
export class RenderWriter {
  readonly #tree: RenderTree
  readonly #opts: UnpackOptions
  #bytes = 0

  constructor(root: string, opts: UnpackOptions) {
    this.#tree = new RenderTree(root, { image: opts.image, asRoot: opts.asRoot, ...(opts.idMap !== undefined ? { idMap: opts.idMap } : {}) })
    this.#opts = opts
  }

  /** Total uncompressed bytes unpacked so far. */
  get bytes(): number {
    return this.#bytes
  }

  /** Extended attributes that could not be set (the file system or the user does not take them). */
  get skippedXattrs(): number {
    return this.#tree.skippedXattrs
  }

  /**
   * Applies one layer: `tar` is its uncompressed tar stream, `layer` names
   * it in messages ("layer 2 (sha256:…)"). Resolves to its size and
   * digest once it is all applied.
   */
  async applyLayer(tar: Readable, layer: string): Promise<LayerStats> {
    const tree = this.#tree
    tree.layer = layer
    tree.entry = '(the layer itself)'
    tree.added = new Set()
    const hash = createHash('sha256')
    let bytes = 0
    const count = new Transform({
      transform: (chunk: Buffer, _enc, cb) => {
        bytes += chunk.length
        this.#bytes += chunk.length
        if (this.#bytes > this.#opts.maxBytes) {
          cb(tree.hostile(`the image unpacks past --max-size (${this.#opts.maxBytes} bytes)`, PAST_MAX_HINT))
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
        tree.entry = entry.header.name
        await this.#apply(entry.header, entry as unknown as AsyncIterable<Buffer>)
      }
      await feeding
    } catch (er) {
      tar.destroy()
      throw this.#explain(fed ?? er)
    }
    if (fed !== undefined) throw this.#explain(fed)
    tree.entry = '(the layer itself)'
    return { bytes, diffHex: hash.digest('hex') }
  }

  /** What an error while unpacking means to a user, naming the entry and the image. */
  #explain(er: unknown): unknown {
    if (isPodctlError(er)) return er
    const tree = this.#tree
    const code = errnoCode(er)
    if (isNoSpace(er)) return tree.hostile(`no space left on the device (${code}) to unpack it`, NO_SPACE_HINT)
    if (code === 'ENAMETOOLONG') return tree.hostile('its name is too long for this file system')
    if (code === 'EMLINK') return tree.hostile('too many links to one file for this file system')
    if (code === undefined || (er as { syscall?: unknown }).syscall === undefined) {
      // tar-stream's and zlib's errors: the layer is not a (compressed) tar.
      return tree.hostile(`the layer is not a readable tar stream: ${(er as Error).message}`, 'the image is damaged; nothing of it was kept')
    }
    return describeFailure(er, `cannot unpack ${tree.layer} of image ${this.#opts.image}, entry ${JSON.stringify(oneLine(tree.entry))}`)
  }

  /** Places one entry and hands it to the handler of its type. */
  async #apply(h: Header, data: AsyncIterable<Buffer>): Promise<void> {
    const tree = this.#tree
    const p = tree.place(h.name)
    if (p.rel === '') {
      if (h.type !== 'directory') throw tree.hostile('it would replace the root directory')
      tree.dirs.set('', tree.deferred(h))
    } else if (p.leaf.startsWith(WHITEOUT)) {
      whiteout(tree, p)
    } else {
      const dir = tree.dir(p.dirRel)!
      const handler = HANDLERS[h.type ?? '']
      if (handler === undefined) throw tree.hostile(`its type (${h.type ?? 'unknown'}) is not one podctl unpacks`)
      await handler(tree, dir, p, h, data)
      tree.added.add(p.rel)
    }
    return drain(data)
  }

  /**
   * Sets the directories' modes, owners, times and attributes, deepest
   * first, and closes everything. The render is complete after this.
   */
  finish(): void {
    const tree = this.#tree
    tree.layer = 'the render'
    const rels = [...tree.dirs.keys()].sort((a, b) => depth(b) - depth(a))
    for (const rel of rels) {
      const d = tree.dirs.get(rel)!
      tree.entry = rel === '' ? '.' : rel
      let dir: Dir | undefined
      try {
        dir = tree.dir(rel, false)
      } catch (er) {
        if (er instanceof HostileImageError) continue // replaced by a link or a file by a later layer
        throw er
      }
      if (dir === undefined) continue // removed by a later layer
      if (d.owner !== undefined) fs.fchownSync(dir.fd, d.owner.uid, d.owner.gid)
      fs.fchmodSync(dir.fd, d.mode)
      fs.futimesSync(dir.fd, d.mtime, d.mtime)
      tree.xattrs(`/proc/${process.pid}/fd/${dir.fd}`, false, d.xattrs)
    }
    this.close()
  }

  /** Closes every directory this writer holds open. */
  close(): void {
    this.#tree.close()
  }
}

const depth = (rel: string): number => (rel === '' ? 0 : rel.split('/').length)

/** Reads what is left of an entry's data (tar-stream needs each entry read to its end). */
const drain = async (data: AsyncIterable<Buffer>): Promise<void> => {
  for await (const _ of data) void _
}
