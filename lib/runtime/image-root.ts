/**
 * An image app's root, made before its container starts (CONTRACT §13,
 * §12a, §15): an overlay of its image's render with an upper layer of its
 * own, or, where no overlay can be had, a copy.
 *
 * - As root, podctl mounts the overlay itself (`nosuid,nodev`), and the
 *   runtime is handed the mounted directory (lib/image/app-root.ts).
 * - Rootless, on Linux 5.11 or later, the runtime mounts it inside the
 *   pod's user namespace as the first of the app's mounts
 *   (lib/runtime/generate/root.ts); podctl only makes its layers' places.
 *   No copy: a rootless pod of a 50 MB image costs what a root one does.
 * - Else a copy of the render in the pod (`rootfs=copy`).
 *
 * Then, whichever it is, the places the runtime mounts on are made the
 * app's own (lib/runtime/mount-targets.ts), and a uid or gid the image
 * does not list can be given its passwd or group line, both in the app's
 * upper (or copy).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { DIR_MODE, allowGroupTraverse } from '../fs/modes.js'
import { prepareAppRoot, prepareLayers } from '../image/app-root.js'
import type { Render } from '../image/render.js'
import type { AppRootFacts } from './generate/facts.js'
import { appendLine, claimMountTargets, layeredView, readFileIn, rootView, type MountTarget, type View } from './mount-targets.js'
import type { PodIds } from './userns.js'

/** An image's /etc/passwd or /etc/group is small; a bound on what is read as one. */
const MAX_DB_BYTES = 4 * 1024 * 1024

/** Whether this kernel mounts overlayfs in a user namespace (Linux 5.11 and later). */
export const userNamespaceOverlay = (release: string = os.release()): boolean => {
  const [major, minor] = release.split('.').map((n) => parseInt(n, 10))
  return major! > 5 || (major === 5 && minor! >= 11)
}

export interface ImageRootOptions {
  /** Where the app's directory is in the pod (`<pod>/apps/<name>`). */
  appDir: string
  ids: PodIds
  readOnly: boolean
  cwd: string
  targets: readonly MountTarget[]
}

export interface ImageRoot {
  kind: 'overlay' | 'copy'
  root: Extract<AppRootFacts, { kind: 'image' }>
  /** Each target as the runtime must be handed it: resolved in the app's root. */
  resolved: Map<string, string>
  /** The root as the app will see it, to read its /etc and add to it (lib/runtime/mount-targets.ts). */
  view: View
}

/** Makes the app's root from `render`; throws a plain Error (the app cannot start: 126) when a target cannot be made. */
export const prepareImageRoot = (render: Render, opts: ImageRootOptions): ImageRoot => {
  fs.mkdirSync(opts.appDir, { recursive: true, mode: DIR_MODE })
  const { shift } = opts.ids
  // The runtime enters the root as the range's root: its group may pass, no one else.
  if (shift) allowGroupTraverse([path.dirname(opts.appDir), opts.appDir], shift.gid)
  let view: View
  let kind: ImageRoot['kind']
  let root: ImageRoot['root']
  if (opts.ids.rootless && userNamespaceOverlay()) {
    const layers = prepareLayers(opts.appDir)
    view = layeredView(layers.upper, render.rootfs)
    kind = 'overlay'
    root = { kind: 'image', rootfs: layers.rootfs, cwd: opts.cwd, readOnly: opts.readOnly, overlay: { lower: render.rootfs, upper: layers.upper, work: layers.work } }
  } else {
    const made = prepareAppRoot(render, opts.appDir, shift ? { owner: shift } : {})
    view = rootView(made.rootfs, shift)
    kind = made.kind
    root = { kind: 'image', rootfs: made.rootfs, cwd: opts.cwd, readOnly: opts.readOnly }
  }
  return { kind, root, resolved: claimMountTargets(view, opts.targets), view }
}

/** The image app's /etc/passwd and /etc/group as it will see them. */
export const rootDb = (view: View, name: 'passwd' | 'group'): string => readFileIn(view, `/etc/${name}`, MAX_DB_BYTES) ?? ''

/** Adds a line for a uid or gid the image does not list to its /etc/passwd or /etc/group (CONTRACT §15), in the app's own upper or copy. */
export const addDbLine = (view: View, name: 'passwd' | 'group', line: string): void => appendLine(view, `/etc/${name}`, line, MAX_DB_BYTES)
