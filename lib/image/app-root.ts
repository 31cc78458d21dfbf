/**
 * An app's writable root from a render: an overlay mount whose lower
 * layer is the render (shared, never written) and whose upper and work
 * directories are the pod's, or, where overlayfs cannot be mounted (a
 * podctl that is not root, a kernel or file system that refuses), a copy
 * of the render in the pod. The runtime prepares one per app before it
 * starts it and tears it down before the pod is deleted; `rm` and `gc`
 * tear down whatever a crashed pod left mounted (podMountsTeardown).
 *
 * ```
 * <dir>/rootfs/     the app's root (the overlay's mount point, or the copy)
 * <dir>/upper/      overlay only: what the app changed
 * <dir>/work/       overlay only: overlayfs's own
 * ```
 *
 * Paths are never handed to mount(8) or cp(1) as text: each directory is
 * opened without following a link and passed as `/proc/<pid>/fd/<fd>`, so
 * no comma, colon or link in the data dir's path changes what is mounted.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, errnoCode } from '../errors.js'
import { tmpName } from '../fs/atomic.js'
import { Dir } from '../fs/dir.js'
import { detachMount, mounts, mountsBelow, realDir, type MountEntry } from '../fs/mounts.js'
import { removeTree } from '../fs/remove-tree.js'
import type { Render } from './render.js'

/** How an app's root was made: `status` shows it as rootfs=overlay|copy. */
export type RootKind = 'overlay' | 'copy'

export interface AppRoot {
  kind: RootKind
  /** The directory the app sees as `/`. */
  rootfs: string
}

export interface AppRootOptions {
  /** `copy` makes a copy even where an overlay would work (tests; file systems known to misbehave). */
  prefer?: 'overlay' | 'copy'
  /** Owner of the upper layer's root (the pod's root user: its id map's first ids under `userns: private`). */
  owner?: { uid: number; gid: number }
}

/** Whether `<dir>/rootfs` is a mount point. */
const isMounted = (dir: string): boolean => {
  const real = realDir(dir)
  return real !== undefined && appRootOverlays(real, mounts()).includes(path.join(real, 'rootfs'))
}

const fdPath = (d: Dir): string => `/proc/${process.pid}/fd/${d.fd}`

const mkdirOwned = (parent: Dir, name: string, mode: number, owner?: { uid: number; gid: number }): void => {
  try {
    parent.mkdir(name, mode)
  } catch (er) {
    if (errnoCode(er) !== 'EEXIST') throw er
  }
  if (owner !== undefined) parent.lchown(name, owner.uid, owner.gid)
}

/** Tries the overlay: true when it is mounted. */
const mountOverlay = (lower: Dir, dir: Dir, opts: AppRootOptions): boolean => {
  mkdirOwned(dir, 'upper', 0o755, opts.owner)
  mkdirOwned(dir, 'work', 0o700, opts.owner)
  mkdirOwned(dir, 'rootfs', 0o755)
  const upper = dir.openDir('upper')
  const work = dir.openDir('work')
  const target = dir.openDir('rootfs')
  try {
    const options = `lowerdir=${fdPath(lower)},upperdir=${fdPath(upper)},workdir=${fdPath(work)}`
    // A setuid file or a device node that the image or the app puts in its
    // root is nothing to a host user who reaches it (CONTRACT §12a).
    const r = spawnSync('mount', ['-t', 'overlay', 'overlay', '-o', `nosuid,nodev,${options}`, fdPath(target)], { encoding: 'utf8' })
    return r.error === undefined && r.status === 0
  } finally {
    target.close()
    work.close()
    upper.close()
  }
}

/** Copies the render into `<dir>/rootfs` (under a temporary name until whole), keeping owners, modes, links and attributes. */
const copyRender = (lower: Dir, dir: Dir, dirPath: string): void => {
  const tmp = tmpName('rootfs')
  dir.mkdir(tmp, 0o755)
  const target = dir.openDir(tmp)
  try {
    const r = spawnSync('cp', ['-a', '--reflink=auto', '--no-target-directory', `${fdPath(lower)}/.`, `${fdPath(target)}/.`], { encoding: 'utf8' })
    if (r.error !== undefined || r.status !== 0) {
      throw new PodctlError('EFAILED', `cannot copy the image into ${path.join(dirPath, 'rootfs')}: ${r.error?.message ?? r.stderr.trim()}`, 'free some space, or run podctl as root to use an overlay instead of a copy')
    }
  } catch (er) {
    target.close()
    removeTree(path.join(dirPath, tmp))
    throw er
  }
  target.close()
  dir.rename(tmp, 'rootfs')
}

/**
 * Makes the writable root of one app in `dir` (a directory of the pod,
 * which exists) from `render`: an overlay where it can be mounted, else a
 * copy. Idempotent: an app root already made is returned as it is.
 */
export const prepareAppRoot = (render: Pick<Render, 'rootfs'>, dir: string, opts: AppRootOptions = {}): AppRoot => {
  const rootfs = path.join(dir, 'rootfs')
  if (isMounted(dir)) return { kind: 'overlay', rootfs }
  const lower = Dir.open(render.rootfs)
  const d = Dir.open(dir)
  try {
    if (d.lstat('rootfs')?.isDirectory() && !d.lstat('upper')) return { kind: 'copy', rootfs }
    const asRoot = process.geteuid?.() === 0
    if (asRoot && opts.prefer !== 'copy' && mountOverlay(lower, d, opts)) return { kind: 'overlay', rootfs }
    for (const n of ['upper', 'work', 'rootfs']) if (d.lstat(n)?.isDirectory()) removeTree(path.join(dir, n))
    copyRender(lower, d, dir)
    return { kind: 'copy', rootfs }
  } finally {
    d.close()
    lower.close()
  }
}

/**
 * The overlays of app roots below `dir` (an absolute path without links):
 * overlay file systems mounted at a directory named rootfs. Other mounts
 * below a pod are not the image room's to take down: removal refuses to
 * cross into them, as it always did.
 */
const appRootOverlays = (dir: string, table: readonly MountEntry[]): string[] =>
  mountsBelow(
    dir,
    table.filter((m) => m.fstype === 'overlay' && path.basename(m.point) === 'rootfs').map((m) => m.point),
  )

const detachAppRoots = (dir: string, table: readonly MountEntry[] = mounts()): void => {
  const real = realDir(dir)
  if (real === undefined) return
  for (const p of appRootOverlays(real, table)) detachMount(real, path.relative(real, p))
}

/** Takes down the app root made in `dir` (its overlay, reached without following a link); the caller then deletes the pod with it. */
export const tearDownAppRoot = (dir: string): void => detachAppRoots(dir)

/**
 * A pod deleter's hook (rm, gc): before a pod's directory is deleted, the
 * overlays of its apps' roots are taken down. The mount table is read
 * once, when the hook is made; a pod is looked at again only if that
 * table had such overlays below the data dir.
 */
export const podMountsTeardown = (dataDir: string): ((pod: { path: string }) => void) => {
  const real = realDir(dataDir)
  const any = real !== undefined && appRootOverlays(real, mounts()).length > 0
  return (pod) => {
    if (any) detachAppRoots(pod.path)
  }
}

/** Whether `rootfs` of an app root is an overlay mount now (for status). */
export const appRootKind = (dir: string): RootKind | undefined => {
  const rootfs = path.join(dir, 'rootfs')
  if (isMounted(dir)) return 'overlay'
  return fs.lstatSync(rootfs, { throwIfNoEntry: false })?.isDirectory() ? 'copy' : undefined
}

/**
 * The places of an overlay that is mounted elsewhere (by the runtime,
 * inside a rootless pod's user namespace): `upper`, `work` and an empty
 * `rootfs` to mount it on, made if missing, kept if there (an app's
 * upper outlives its container).
 */
export const prepareLayers = (dir: string): { upper: string; work: string; rootfs: string } => {
  const d = Dir.open(dir)
  try {
    mkdirOwned(d, 'upper', 0o755)
    mkdirOwned(d, 'work', 0o700)
    mkdirOwned(d, 'rootfs', 0o755)
  } finally {
    d.close()
  }
  return { upper: path.join(dir, 'upper'), work: path.join(dir, 'work'), rootfs: path.join(dir, 'rootfs') }
}
