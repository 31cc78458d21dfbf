/**
 * What the image commands do to the store besides importing: list, find,
 * tag, remove and prune. Every change is made under the store lock, the
 * index replaced whole; what goes (blobs, renders) is moved out of the
 * store under the lock and deleted after it, in a work dir that the next
 * sweep finishes if this process dies first.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, shortId, unlessNotFound } from '../errors.js'
import { readIndex, utcMillis, withStoreLock, writeIndex, type ImageIndexFile, type ImageRecord } from './index-file.js'
import { blobPath, blobsDir, checkImageLayout, renderDir, rendersDir } from './layout.js'
import { findImage, type Found } from './find.js'
import { digestHex, digestOf, formatName, shortHex, tryParseName, type ImageName } from './reference.js'
import { imageRefsOfPod, imageUsers, type ImageUser, type PodImageRefs } from './users.js'
import { WorkDir, sweepWork } from './work.js'

/** One row of `image list`: an image under one of its names (or none). */
export interface ImageRow {
  name: string | null
  tag: string | null
  digest: string
  size_bytes: number
  created: string | null
  layers: number
}

/** Every image of the store, once per name (an unnamed one once, with null name and tag), by name. */
export const listImages = (dataDir: string): ImageRow[] => {
  if (!checkImageLayout(dataDir)) return []
  const idx = readIndex(dataDir)
  const row = (r: ImageRecord, n: ImageName | undefined): ImageRow => ({ name: n?.name ?? null, tag: n?.tag ?? null, digest: r.digest, size_bytes: r.size_bytes, created: utcMillis(r.created), layers: r.layers.length })
  const named = new Set(Object.values(idx.names))
  const rows = Object.entries(idx.names).map(([full, hex]) => row(idx.images[hex]!, tryParseName(full)))
  for (const [hex, r] of Object.entries(idx.images)) if (!named.has(hex)) rows.push(row(r, undefined))
  return rows.sort((a, b) => (a.name ?? '\uffff').localeCompare(b.name ?? '\uffff') || (a.tag ?? '').localeCompare(b.tag ?? '') || a.digest.localeCompare(b.digest))
}

/** The names of the image `hex`, sorted. */
export const namesOf = (idx: ImageIndexFile, hex: string): string[] =>
  Object.entries(idx.names)
    .filter(([, h]) => h === hex)
    .map(([n]) => n)
    .sort()

export { findImage, type Found }

/** Finds an image in the store of `dataDir` (lib/image/find.ts says how). */
export const lookupImage = (dataDir: string, text: string): Found & { names: string[] } => {
  if (!checkImageLayout(dataDir)) throw new PodctlError('ENOIMAGE', `no such image: ${text}`, 'import one: podctl image import SOURCE')
  const idx = readIndex(dataDir)
  const f = findImage(idx, text)
  return { ...f, names: namesOf(idx, f.hex) }
}

/** Gives the image `src` names the name `target` too (taking it from another image if it had it, as podman does). Returns the image's digest. */
export const tagImage = (dataDir: string, src: string, target: ImageName): string => {
  if (!checkImageLayout(dataDir)) throw new PodctlError('ENOIMAGE', `no such image: ${src}`, 'import one: podctl image import SOURCE')
  return withStoreLock(dataDir, () => {
    const idx = readIndex(dataDir)
    const f = findImage(idx, src)
    idx.names[formatName(target)] = f.hex
    writeIndex(dataDir, idx)
    return f.record.digest
  })
}

/** The blobs an image is made of. */
const blobsOf = (r: ImageRecord): string[] => [r.digest, r.config, ...r.layers].map((d) => digestHex(d)!)

/** The render keys (names in renders/) of each image hex. */
const renderKeys = (dataDir: string): Map<string, string[]> => {
  const keys = new Map<string, string[]>()
  const entries = unlessNotFound(() => fs.readdirSync(rendersDir(dataDir))) ?? []
  for (const k of entries) {
    const hex = k.slice(0, 64)
    keys.set(hex, [...(keys.get(hex) ?? []), k])
  }
  return keys
}

/** What a removal or a prune took away. */
export interface Removed {
  images: string[]
  blobs: number
  renders: number
  /** Work dirs of dead processes (killed imports, renders, removals) that were deleted. */
  work: string[]
}

/**
 * Deletes the images `hexes` from `idx` (and their names), and moves out
 * of the store every blob no remaining image uses and every render of an
 * image the store no longer holds, into `trash`. The store lock must be
 * held; `idx` is written by the caller.
 */
const collect = (dataDir: string, idx: ImageIndexFile, hexes: Iterable<string>, trash: () => WorkDir): Removed => {
  const out: Removed = { images: [], blobs: 0, renders: 0, work: [] }
  for (const hex of hexes) {
    if (idx.images[hex] === undefined) continue
    delete idx.images[hex]
    for (const [n, h] of Object.entries(idx.names)) if (h === hex) delete idx.names[n]
    out.images.push(digestOf(hex))
  }
  const kept = new Set(Object.values(idx.images).flatMap(blobsOf))
  const blobs = unlessNotFound(() => fs.readdirSync(blobsDir(dataDir))) ?? []
  for (const b of blobs) {
    if (kept.has(b)) continue
    fs.rmSync(blobPath(dataDir, b), { force: true })
    out.blobs++
  }
  for (const [hex, keys] of renderKeys(dataDir)) {
    if (idx.images[hex] !== undefined) continue
    for (const k of keys) {
      fs.renameSync(renderDir(dataDir, k), path.join(trash().path, k))
      out.renders++
    }
  }
  return out
}

/**
 * Under the store lock, with a trash work dir (made when first asked for)
 * that is emptied after the lock is released: deleting a render takes
 * long, moving it out of renders/ does not.
 */
const changing = <T>(dataDir: string, fn: (idx: ImageIndexFile, trash: () => WorkDir) => T): T => {
  let trash: WorkDir | undefined
  try {
    return withStoreLock(dataDir, () => fn(readIndex(dataDir), () => (trash ??= WorkDir.open(dataDir, 'trash'))))
  } finally {
    trash?.discard()
  }
}

const inUse = (what: string, users: ImageUser[]): PodctlError => {
  const live = users.filter((u) => !u.garbage)
  const shown = live.slice(0, 3).map((u) => `${shortId(u.uuid)} (${u.state})`)
  const first = shortId(live[0]!.uuid)
  return new PodctlError(
    'EBADSTATE',
    `image ${what} is used by pod${live.length === 1 ? '' : 's'} ${shown.join(', ')}${live.length > 3 ? ', …' : ''}`,
    `remove ${live.length === 1 ? 'the pod' : 'those pods'} first (podctl rm ${first}), or remove the name only: podctl image rm --force ${what}`,
  )
}

export interface RemoveOptions {
  /** Remove the name only, even when pods use the image (it stays until they are gone and a prune runs). */
  force?: boolean
  refsOf?: PodImageRefs
}

export interface RemoveOutcome {
  /** The names removed. */
  untagged: string[]
  /** The image's digest, if the image itself was deleted (its last name went, and no pod uses it). */
  deleted?: string
}

/**
 * `image rm TEXT`: by NAME[:TAG], removes that name; by digest, every name
 * of the image. When the image is left without a name and no pod uses it,
 * it is deleted (its blobs that no other image shares, its renders). An
 * image a pod that is not garbage uses is refused (EBADSTATE, naming the
 * pod) unless `force`: then only the names go.
 */
export const removeImage = (dataDir: string, text: string, opts: RemoveOptions = {}): RemoveOutcome => {
  if (!checkImageLayout(dataDir)) throw new PodctlError('ENOIMAGE', `no such image: ${text}`, 'see the images there are: podctl image list')
  return changing(dataDir, (idx, trash) => {
    const f = findImage(idx, text)
    const names = f.name !== undefined ? [f.name] : namesOf(idx, f.hex)
    const left = namesOf(idx, f.hex).filter((n) => !names.includes(n))
    const users = left.length === 0 ? (imageUsers(dataDir, idx, opts.refsOf ?? imageRefsOfPod).get(f.hex) ?? []) : []
    if (users.some((u) => !u.garbage) && !opts.force) throw inUse(f.name ?? digestOf(shortHex(f.hex)), users)
    for (const n of names) delete idx.names[n]
    const outcome: RemoveOutcome = { untagged: names }
    if (left.length === 0 && users.length === 0) {
      collect(dataDir, idx, [f.hex], trash)
      outcome.deleted = f.record.digest
    }
    writeIndex(dataDir, idx)
    return outcome
  })
}

export interface PruneOptions {
  /** Delete images without a name that no pod uses (`image prune`); without it only leftovers go (gc). */
  unnamed: boolean
  refsOf?: PodImageRefs
}

/**
 * Removes what nothing uses: the work dirs of dead processes, blobs no
 * image is made of and renders of images the store does not hold (what a
 * killed import or removal leaves), and with `unnamed`, images that have
 * no name and no pod using them.
 */
export const pruneImages = (dataDir: string, opts: PruneOptions): Removed => {
  if (!checkImageLayout(dataDir)) return { images: [], blobs: 0, renders: 0, work: [] }
  const work = sweepWork(dataDir)
  const removed = changing(dataDir, (idx, trash) => {
    const named = new Set(Object.values(idx.names))
    let doomed: string[] = []
    if (opts.unnamed) {
      const unnamed = Object.keys(idx.images).filter((h) => !named.has(h))
      if (unnamed.length > 0) {
        const users = imageUsers(dataDir, idx, opts.refsOf ?? imageRefsOfPod)
        doomed = unnamed.filter((h) => !users.has(h))
      }
    }
    const out = collect(dataDir, idx, doomed, trash)
    if (doomed.length > 0) writeIndex(dataDir, idx)
    return out
  })
  return { ...removed, work }
}
