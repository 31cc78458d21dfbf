/**
 * Where images live in a data dir (Documentation/devel/images.md). Path
 * arithmetic, and making the directories on first use.
 *
 * ```
 * <data>/images/index.json               names -> image digests, and each image's record
 * <data>/images/blobs/sha256/<hex>       content-addressed blobs (manifests, configs, layers)
 * <data>/images/renders/<key>/rootfs/    an image unpacked, shared read-only by its pods
 * <data>/images/tmp/<kind>-<unique>/     work in progress: an import, a render, a pull, a removal
 * <data>/image-locks/store               held while the index, blobs/ or renders/ change
 * <data>/image-locks/render.<key>        held while an image is being rendered
 * <data>/image-locks/<kind>-<unique>     held by the process working in images/tmp/<kind>-<unique>
 * ```
 *
 * The locks are not in `<data>/locks/`, which holds only pod locks (gc
 * treats every other name there as a dead pod's).
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, errnoCode } from '../errors.js'
import { DIR_MODE } from '../fs/modes.js'
import { registerDataDirFolders } from '../pod/layout.js'

// The store's top directories, checked with the pod room's before a
// command works on a data dir (checkImageLayout checks those below).
registerDataDirFolders('images', 'image-locks')

export const imagesRoot = (dataDir: string): string => path.join(dataDir, 'images')
export const indexPath = (dataDir: string): string => path.join(imagesRoot(dataDir), 'index.json')
export const blobsDir = (dataDir: string): string => path.join(imagesRoot(dataDir), 'blobs', 'sha256')
export const blobPath = (dataDir: string, hex: string): string => path.join(blobsDir(dataDir), hex)
export const rendersDir = (dataDir: string): string => path.join(imagesRoot(dataDir), 'renders')
export const renderDir = (dataDir: string, key: string): string => path.join(rendersDir(dataDir), key)
/** The image's file system, inside its render directory. */
export const RENDER_ROOTFS = 'rootfs'
export const renderRootfs = (dataDir: string, key: string): string => path.join(renderDir(dataDir, key), RENDER_ROOTFS)
export const imagesTmpDir = (dataDir: string): string => path.join(imagesRoot(dataDir), 'tmp')
export const imageLocksDir = (dataDir: string): string => path.join(dataDir, 'image-locks')
export const storeLockPath = (dataDir: string): string => path.join(imageLocksDir(dataDir), 'store')
export const renderLockPath = (dataDir: string, key: string): string => path.join(imageLocksDir(dataDir), `render.${key}`)
export const workLockPath = (dataDir: string, name: string): string => path.join(imageLocksDir(dataDir), name)

/** Kinds of work in images/tmp/; each entry is `<kind>-<unique>`. */
export const WORK_KINDS = ['import', 'render', 'pull', 'trash'] as const
export type WorkKind = (typeof WORK_KINDS)[number]
const WORK_RE = new RegExp(`^(?:${WORK_KINDS.join('|')})-[0-9a-z-]+$`)
/** Whether `name` (in images/tmp/ or image-locks/) is a work entry. */
export const isWorkName = (name: string): boolean => WORK_RE.test(name)

/** The directories of the store, parents first (relative to the data dir). */
const DIRS = ['images', 'images/blobs', 'images/blobs/sha256', 'images/renders', 'images/tmp', 'image-locks']

const damaged = (p: string, st: fs.Stats): PodctlError =>
  new PodctlError(
    'EFAILED',
    `${p} is ${st.isSymbolicLink() ? 'a symlink' : 'not a directory'}: the image store is damaged, and podctl never follows or deletes through it`,
    'move that entry away (after checking what put it there) and run the command again',
  )

/**
 * Checks that each directory of the store that exists is a real directory
 * (CONTRACT §10); returns whether the store exists at all.
 */
export const checkImageLayout = (dataDir: string): boolean => {
  for (const rel of DIRS) {
    const p = path.join(dataDir, rel)
    const st = fs.lstatSync(p, { throwIfNoEntry: false })
    if (st === undefined) {
      if (rel === 'images') return false
      continue
    }
    if (!st.isDirectory()) throw damaged(p, st)
  }
  return true
}

/** Creates the store's directories (0750) where missing, and checks them. The data dir must exist. */
export const ensureImageDirs = (dataDir: string): void => {
  for (const rel of DIRS) {
    try {
      fs.mkdirSync(path.join(dataDir, rel), { mode: DIR_MODE })
    } catch (er) {
      if (errnoCode(er) !== 'EEXIST') throw er
    }
  }
  checkImageLayout(dataDir)
}
