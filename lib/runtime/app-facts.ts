/**
 * What one isolated app is on this host, gathered when it starts
 * (lib/runtime/generate/facts.ts, AppFacts): its root made (an image's,
 * or its own directory in the pod's root), its user, its volumes and the
 * pod's files placed in that root, its capabilities and seccomp filter.
 * A failure here is the app's failure to start (spawn-like: 126).
 */
import fs from 'node:fs'
import path from 'node:path'
import type { App, PodManifest } from '../pod/manifest.js'
import type { Pod } from '../pod/pod.js'
import { addedCapabilities, effectiveCapabilities } from '../proc/capabilities.js'
import { tearDownAppRoot } from '../image/app-root.js'
import type { Render } from '../image/render.js'
import { isolatedVolumePath } from '../volume/layout.js'
import { normalizeMountPath } from '../volume/plan.js'
import { defaultRegistry } from '../volume/plugins/index.js'
import { appPlace } from './app-launch.js'
import { parseDb, resolveHostUser, resolveUser } from './app-users.js'
import type { AppFacts, Bind, PodFacts, ProcessUser } from './generate/facts.js'
import { byDepth } from './generate/mounts.js'
import { containerAppRoot } from './generate/root.js'
import { imageWorkingDir } from './image-apps.js'
import { addDbLine, prepareImageRoot, rootDb } from './image-root.js'
import { ensureWorkdir, type MountTarget } from './mount-targets.js'
import { podFileBinds } from './pod-files.js'
import { resourceLimits } from './pod-facts.js'
import { containersCommonProfile, ociSeccomp, userSeccomp } from './seccomp.js'
import type { PodIds } from './userns.js'

/** An app that cannot start (126). No errno code: one such as EACCES would add the hint about the data dir's permissions. */
export const cannotStart = (message: string): NodeJS.ErrnoException => new Error(message)

/** Where each volume's data is on the host, and whether the volume itself is read-only. */
export type VolumeSources = ReadonlyMap<string, { source: string; readOnly: boolean }>

export const volumeSources = (pod: Pod, m: PodManifest): VolumeSources => {
  const registry = defaultRegistry()
  const out = new Map<string, { source: string; readOnly: boolean }>()
  for (const v of m.volumes ?? []) {
    const spec = { name: v.name, volume: v }
    out.set(v.name, { source: registry.findPluginBySpec(spec).newMounter(spec, pod).path, readOnly: 'readOnly' in v && v.readOnly === true })
  }
  return out
}

/**
 * An app's volumes: each at its mount path, and each volume's data where
 * the pod's mount-point links point (isolatedVolumePath), read-only unless
 * some mount of it is writable.
 */
export const volumeBinds = (app: App, sources: VolumeSources): Bind[] => {
  const binds = new Map<string, Bind>()
  const data = new Map<string, Bind>()
  for (const mt of app.mounts ?? []) {
    const v = sources.get(mt.volume)
    if (!v) continue
    const readOnly = v.readOnly || mt.readOnly === true
    const target = normalizeMountPath(mt.path)
    binds.set(target, { source: v.source, target, readOnly })
    const at = isolatedVolumePath(mt.volume)
    data.set(at, { source: v.source, target: at, readOnly: (data.get(at)?.readOnly ?? true) && readOnly })
  }
  for (const [p, b] of data) if (!binds.has(p)) binds.set(p, b)
  return byDepth([...binds.values()])
}

/** An app's seccomp filter: containers-common's profile for its capabilities, the user's own, or none. */
const seccompOf = (app: App, caps: readonly string[]): AppFacts['seccomp'] => {
  if (app.privileged === true || app.seccomp === 'unconfined') return undefined
  if (app.seccomp !== undefined && app.seccomp !== 'default') return userSeccomp(app.seccomp)
  return ociSeccomp(containersCommonProfile(), caps)
}

/** The kernel's file systems the runtime mounts in every app's root (generate/mounts.ts). */
const SYSTEM_TARGETS = ['/proc', '/dev', '/sys']

/** Whether `cwd` is the image's own WorkingDir; where the image's config cannot be read (gone from the store), it is taken to be. */
const imagesOwnCwd = (dataDir: string, image: string, cwd: string): boolean => {
  try {
    return imageWorkingDir(dataDir, image) === cwd
  } catch {
    return true
  }
}

const isFile = (p: string): boolean => fs.statSync(p, { throwIfNoEntry: false })?.isFile() === true

/** The process's user as the pod's ids allow: rootless, only root is mapped, so the app is root with no other group. */
const mapped = (user: ProcessUser, ids: PodIds): ProcessUser => (ids.rootless ? { ...user, uid: 0, gid: 0, additionalGids: [] } : user)

export interface AppFactsInput {
  pod: Pod
  facts: PodFacts
  ids: PodIds
  app: App
  sources: VolumeSources
  render?: Render
  masked: readonly string[]
  terminal: boolean
}

/** The facts of one app, its root made; `files` are the pod's files it binds, placed in its root. */
export const gatherAppFacts = (input: AppFactsInput): { app: AppFacts; files: Bind[]; rootfs?: 'overlay' | 'copy' } => {
  const { app, ids } = input
  const privileged = app.privileged === true
  const capabilities = effectiveCapabilities({ ...app.capabilities, privileged })
  const common = {
    name: app.name,
    args: app.exec,
    env: app.env ?? {},
    capabilities,
    addedCapabilities: addedCapabilities(app.capabilities?.add, capabilities),
    seccomp: seccompOf(app, capabilities),
    privileged,
    readOnlyRootFilesystem: app.readOnlyRootFilesystem === true,
    ...(app.resources ? { resources: resourceLimits(app.resources)! } : {}),
    terminal: input.terminal,
    podUuid: input.pod.uuid,
  }
  const volumes = volumeBinds(app, input.sources)
  const files = input.facts.files ? podFileBinds(input.facts.files) : []
  if (app.image === undefined) {
    // Its working directory is a path in its container, as podman's -w is (its own directory by default).
    const { workingDirectory, ...placed } = app
    const place = appPlace(input.pod, placed, (u) => (ids.shift ? { uid: ids.shift.uid + (u?.uid ?? 0), gid: ids.shift.gid + (u?.gid ?? 0) } : u))
    let user: ProcessUser
    try {
      user = resolveHostUser({ user: app.user, group: app.group }, place.user)
    } catch (er) {
      throw cannotStart((er as Error).message)
    }
    // The host's /etc is bound read-only: a file it lacks has no place to be bound at.
    const bound = files.filter((f) => !f.target.startsWith('/etc/') || fs.existsSync(f.target))
    const cwd = workingDirectory ?? containerAppRoot(app.name)
    return { app: { ...common, root: { kind: 'pod', appDir: place.root, cwd }, user: mapped(user, ids), volumes, masked: input.masked }, files: bound }
  }
  if (input.render === undefined) throw cannotStart(`image ${app.image} was not rendered when the pod started`)
  // A mount nested in one of the app's volumes has its place in that volume, which podctl made.
  const nested = (b: Bind): boolean => volumes.some((o) => o !== b && b.target.startsWith(`${o.target}/`))
  const readOnly = app.readOnlyRootFilesystem === true
  const targets: MountTarget[] = [
    ...SYSTEM_TARGETS.map((p) => ({ path: p, kind: 'dir' as const })),
    // The tmpfs of a read-only root takes its directory's mode (runc's tmpcopyup): one the image lacks is everyone's, as podman's are.
    ...(readOnly ? ['/tmp', '/run', '/var/tmp'] : []).map((p) => ({ path: p, kind: 'dir' as const, mode: 0o1777 })),
    ...volumes.filter((b) => !nested(b)).map((b) => ({ path: b.target, kind: isFile(b.source) ? ('file' as const) : ('dir' as const) })),
    ...files.map((b) => ({ path: b.target, kind: 'file' as const })),
  ]
  const cwd = app.workingDirectory ?? '/'
  // A working directory in a volume is there once the volume is mounted.
  const checkCwd = cwd.replace(/\/+$/, '') !== '' && !volumes.some((b) => cwd === b.target || cwd.startsWith(`${b.target}/`))
  const appDir = path.join(input.pod.path, 'apps', app.name)
  let made: ReturnType<typeof prepareImageRoot> | undefined
  let user: ProcessUser
  try {
    made = prepareImageRoot(input.render, { appDir, ids, readOnly, cwd, targets })
    const found = resolveUser({ user: app.user, group: app.group }, parseDb(rootDb(made.view, 'passwd')), parseDb(rootDb(made.view, 'group')), cwd)
    if (found.passwdLine !== undefined) addDbLine(made.view, 'passwd', found.passwdLine)
    if (found.groupLine !== undefined) addDbLine(made.view, 'group', found.groupLine)
    user = found.user
    // podman makes the image's WorkingDir where it is missing, given to the app's user; one named otherwise must be there.
    const owner = ids.rootless ? undefined : { uid: (ids.shift?.uid ?? 0) + user.uid, gid: (ids.shift?.gid ?? 0) + user.gid }
    if (checkCwd && !ensureWorkdir(made.view, cwd, owner, imagesOwnCwd(input.pod.dataDir, app.image, cwd))) throw new Error(`workdir ${JSON.stringify(cwd)} does not exist in the image`)
  } catch (er) {
    // No container will take the root down with it: an overlay mounted for it goes now.
    if (made?.kind === 'overlay') tearDownAppRoot(appDir)
    throw cannotStart((er as Error).message)
  }
  const resolved = made.resolved
  const at = (b: Bind): Bind => ({ ...b, target: resolved.get(b.target) ?? b.target })
  const root = made.root
  return {
    app: { ...common, root, user: mapped(user, ids), volumes: volumes.map(at), masked: [] },
    files: files.map(at),
    rootfs: made.kind,
  }
}
