/**
 * An app's root (CONTRACT §12, §13). An app of host programs runs in the
 * pod's root, a read-only directory of the pod into which the host's
 * /usr, /bin, /sbin, /lib*, and /etc are bound read-only (those that are
 * links on the host are the same links there), with its own directory at
 * a path of the pod's. An image app runs in its image's root: an overlay
 * podctl mounted (as root), or, rootless, an overlay the runtime mounts
 * inside the pod's user namespace as the first of its mounts, over the
 * root directory itself (overlayfs mounts in a user namespace since
 * Linux 5.11).
 */
import type { Mount, Root } from '../oci-spec.js'
import type { AppFacts, PodFacts } from './facts.js'
import { CONTAINER_PATH } from './env.js'
import { bindMount } from './mounts.js'

/** The host's directories an app of host programs sees, read-only, in its pod's root; nothing else of the host. */
export const HOST_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc'] as const

/** What prepare checks an isolated app's program against: the PATH it starts with, and the directories its root has. */
export const ISOLATED_ROOT = { path: CONTAINER_PATH, dirs: HOST_DIRS }

/** Where an app of host programs sees its own directory (PODCTL_APP_ROOT): a path of the pod's, so the data dir's location shows nowhere inside (CONTRACT §12a). */
export const containerAppRoot = (app: string): string => `/run/podctl/apps/${app}`

export const rootOf = (pod: PodFacts, app: AppFacts): Root =>
  app.root.kind === 'pod' ? { path: pod.rootfs, readonly: true } : { path: app.root.rootfs, readonly: app.readOnlyRootFilesystem }

/** The mounts that make the root: an overlay the runtime mounts, or the host's directories. */
export const rootMounts = (pod: PodFacts, app: AppFacts): Mount[] => {
  if (app.root.kind === 'image') {
    const o = app.root.overlay
    return o ? [{ destination: '/', type: 'overlay', source: 'overlay', options: [`lowerdir=${o.lower}`, `upperdir=${o.upper}`, `workdir=${o.work}`, 'nosuid', 'nodev'] }] : []
  }
  return pod.hostDirs.filter((d) => d.link === undefined).map((d) => bindMount({ source: d.path, target: d.path, readOnly: true }, app.privileged))
}

/** The app's own directory, for an app of host programs. */
export const appDirMounts = (app: AppFacts): Mount[] =>
  app.root.kind === 'pod' ? [bindMount({ source: app.root.appDir, target: containerAppRoot(app.name), readOnly: app.readOnlyRootFilesystem }, app.privileged)] : []

/** PODCTL_APP_ROOT inside the app's container. */
export const appRootInContainer = (app: AppFacts): string => (app.root.kind === 'pod' ? containerAppRoot(app.name) : '/')
