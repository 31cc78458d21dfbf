/**
 * Isolated pods (`"isolation": "namespaces"`, CONTRACT §12) as the
 * supervisor runs them: the pod's manifest and host turned into the specs
 * of its infra and app containers (lib/runtime/spec.ts), run by an OCI
 * runtime (lib/runtime/oci-pod.ts).
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, shortId } from '../errors.js'
import type { AppUser } from '../pod/app-user.js'
import { cpuCores, memoryBytes, networkOf, usernsOf, type App, type PodManifest, type Resources } from '../pod/manifest.js'
import type { Pod } from '../pod/pod.js'
import { CONTAINER_PATH, HOST_DIRS, appRoot } from '../pod/prepare.js'
import { effectiveCapabilities } from '../proc/capabilities.js'
import type { ChildProcess } from 'node:child_process'
import { podEnvMark } from '../pod/reap.js'
import { canMakeCgroups, cgroupLayout, writeUnifiedLimits } from '../proc/cgroups.js'
import { killMarked } from '../proc/escaped.js'
import { procStart, sameProcess } from '../proc/identity.js'
import { isolatedVolumePath } from '../volume/layout.js'
import { normalizeMountPath } from '../volume/plan.js'
import { defaultRegistry } from '../volume/plugins/index.js'
import { allowGroupTraverse } from '../fs/modes.js'
import { prepareAppRoot, tearDownAppRoot, type AppRoot } from '../image/app-root.js'
import { ensureRender, type Render } from '../image/render.js'
import { DIR_MODE } from '../fs/modes.js'
import { appPlace, pathToPod } from './app-launch.js'
import { imageUser, type ImageUser } from './image-user.js'
import { signalExitCode } from './host.js'
import { OciPod, ROOTFS_DIR } from './oci-pod.js'
import { hostSecrets } from './host-secrets.js'
import { ensureInfraRoot, infraRootPath } from './infra.js'
import { claimMountTargets } from './mount-targets.js'
import { findRuntime, type RuntimeRef } from './runtime.js'
import { containersCommonProfile, ociSeccomp, userSeccomp } from './seccomp.js'
import { podCgroup, type AppSpec, type Bind, type IdMap, type PodSpec, type ResourceLimits } from './spec.js'
import type { AppProcess, PodRuntime } from './types.js'
import { privateIdRange } from './userns.js'


/** Each of HOST_DIRS that this host has: a directory to bind, or a link to make the same. */
export const hostDirs = (): { path: string; link?: string }[] => {
  const out: { path: string; link?: string }[] = []
  for (const d of HOST_DIRS) {
    const st = fs.lstatSync(d, { throwIfNoEntry: false })
    if (st?.isSymbolicLink()) out.push({ path: d, link: fs.readlinkSync(d) })
    else if (st?.isDirectory()) out.push({ path: d })
  }
  return out
}

/** A manifest's limits as numbers (validated already). */
export const resourceLimits = (r: Resources | undefined): ResourceLimits | undefined =>
  r === undefined
    ? undefined
    : {
        ...(r.memory !== undefined ? { memoryBytes: memoryBytes(r.memory)! } : {}),
        ...(r.cpu !== undefined ? { cpuCores: cpuCores(r.cpu)! } : {}),
        ...(r.pids !== undefined ? { pids: r.pids } : {}),
      }

/**
 * Why a pod's limits cannot be had here (EFAILED), or undefined: a user
 * other than root who cannot make cgroups (a rootless runtime on cgroup v1)
 * gets none. Checked at prepare, and again when the pod starts.
 */
export const limitsRefused = (m: PodManifest, which: string): PodctlError | undefined => {
  if (m.resources === undefined && !m.apps.some((a) => a.resources !== undefined)) return undefined
  if (process.geteuid?.() === 0 || canMakeCgroups()) return undefined
  return new PodctlError('EFAILED', `${which} has resource limits, and this user cannot make cgroups on this host`, 'run it as root, or leave the limits out')
}

/** How often an app without a cgroup is looked at, to end what it left behind once it ends. */
const ORPHAN_WATCH_MS = 200

/** The pod's infra (catatonit), not counted in the pod's own limit. */
const INFRA_PIDS = 1

/** A pod's limits on its infra's cgroup, which holds its apps' cgroups: the infra's own processes come on top of what the apps may have. */
const podLimits = (r: Resources | undefined): ResourceLimits | undefined => {
  const l = resourceLimits(r)
  return l?.pids !== undefined ? { ...l, pids: l.pids + INFRA_PIDS } : l
}

/** The ids of a pod without root: the invoking user is root in the pod's user namespace, and no one else is mapped. */
const rootlessIds = (): IdMap => ({
  uid: [{ containerID: 0, hostID: process.geteuid!(), size: 1 }],
  gid: [{ containerID: 0, hostID: process.getegid!(), size: 1 }],
})

/**
 * Whose ids a pod has: the host's (root, `userns: host`), the invoking
 * user's alone (rootless), or a private range (`userns: private`, passed
 * in as found at prepare).
 */
export const podIdMap = (m: PodManifest): IdMap | undefined => {
  if (process.geteuid?.() !== 0) return rootlessIds()
  return usernsOf(m) === 'private' ? privateIdRange() : undefined
}

/** Where each volume's data is on the host. */
const volumeSources = (pod: Pod, m: PodManifest): Map<string, { source: string; readOnly: boolean }> => {
  const registry = defaultRegistry()
  const out = new Map<string, { source: string; readOnly: boolean }>()
  for (const v of m.volumes ?? []) {
    const spec = { name: v.name, volume: v }
    out.set(v.name, { source: registry.findPluginBySpec(spec).newMounter(spec, pod).path, readOnly: 'readOnly' in v && v.readOnly === true })
  }
  return out
}

/** Where an isolated app sees its own root (PODCTL_APP_ROOT): a path of the pod's, so that the data dir's location shows nowhere inside (CONTRACT §12a). */
export const containerAppRoot = (app: string): string => `/run/podctl/apps/${app}`

/**
 * The binds of an app's volumes: each at its mount path, and each volume's
 * data where the pod's mount-point links point (isolatedVolumePath),
 * read-only unless some mount of it is writable. Parents before what is
 * mounted in them.
 */
const volumeBinds = (app: App, sources: ReadonlyMap<string, { source: string; readOnly: boolean }>): Bind[] => {
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

const byDepth = (binds: Bind[]): Bind[] => binds.sort((a, b) => a.target.split('/').length - b.target.split('/').length)

/** An app of host programs: its own root at containerAppRoot, and its volumes. */
export const appBinds = (root: string, app: App, sources: ReadonlyMap<string, { source: string; readOnly: boolean }>, readOnlyRoot: boolean): Bind[] =>
  byDepth([{ source: root, target: containerAppRoot(app.name), readOnly: readOnlyRoot }, ...volumeBinds(app, sources)])

const isFile = (p: string): boolean => fs.statSync(p, { throwIfNoEntry: false })?.isFile() === true

/** The kernel's file systems the runtime mounts in every app's root (spec.ts systemMounts): their places must be the app's own. */
const SYSTEM_TARGETS = ['/proc', '/dev', '/sys', '/tmp'] as const

/**
 * Makes the places where the runtime mounts into an image app's root real
 * directories of that root (lib/runtime/mount-targets.ts), and returns
 * `binds` with their targets resolved. A mount nested in one of the app's
 * volumes has its place in that volume, which podctl made: it is left to
 * the runtime's own resolution.
 */
const ownTargets = (rootfs: string, binds: Bind[], owner: { uid: number; gid: number } | undefined): Bind[] => {
  const nested = (b: Bind): boolean => binds.some((o) => o !== b && b.target.startsWith(`${o.target}/`))
  const targets = [...SYSTEM_TARGETS.map((p) => ({ path: p, kind: 'dir' as const })), ...binds.filter((b) => !nested(b)).map((b) => ({ path: b.target, kind: isFile(b.source) ? ('file' as const) : ('dir' as const) }))]
  let resolved: Map<string, string>
  try {
    resolved = claimMountTargets(rootfs, targets, owner)
  } catch (er) {
    throw cannotStart((er as Error).message)
  }
  return binds.map((b) => ({ ...b, target: resolved.get(b.target) ?? b.target }))
}

/**
 * An app that cannot start for a reason of its image (exit 126). No errno
 * code: one such as EACCES would add the hint about the data dir's
 * permissions, which has nothing to do with it.
 */
const cannotStart = (message: string): NodeJS.ErrnoException => new Error(message)

/** The environment of an isolated app: podman's few defaults, the app's own, podctl's. */
const appEnv = (pod: Pod, app: App, root: string, user: AppUser | undefined, hostname: string): Record<string, string> => ({
  PATH: CONTAINER_PATH,
  HOSTNAME: hostname,
  HOME: user?.home ?? (user === undefined || user.uid === 0 ? '/root' : '/'),
  ...(user?.name !== undefined ? { USER: user.name, LOGNAME: user.name } : {}),
  container: 'podctl',
  ...(app.env ?? {}),
  PODCTL_POD_UUID: pod.uuid,
  PODCTL_APP_NAME: app.name,
  PODCTL_APP_ROOT: root,
})

/** An app's seccomp filter: containers-common's profile for its capabilities, the user's own, or none. */
const seccompOf = (app: App, caps: readonly string[]): AppSpec['seccomp'] => {
  if (app.privileged === true || app.seccomp === 'unconfined') return undefined
  if (app.seccomp !== undefined && app.seccomp !== 'default') return userSeccomp(app.seccomp)
  return ociSeccomp(containersCommonProfile(), caps)
}

/** Whether any memory limit holds for `app`: then its container is kept after it exits, to read the OOM counter. */
const memoryLimited = (m: PodManifest, app: App): boolean => m.resources?.memory !== undefined || app.resources?.memory !== undefined

export interface OciRuntimeOptions {
  /** The runtime the pod was prepared with (default: this host's default). */
  runtime?: RuntimeRef
}

export class OciRuntime implements PodRuntime {
  readonly #pod: Pod
  readonly #manifest: () => PodManifest
  readonly #oci: OciPod
  readonly #sources: () => Map<string, { source: string; readOnly: boolean }>
  /** The renders of the pod's images, by digest, made before its first app starts. */
  readonly #renders: Map<string, Render>

  /** The host's secrets, masked in every app of host programs. */
  readonly #hostSecrets: readonly string[]

  private constructor(pod: Pod, manifest: () => PodManifest, oci: OciPod, renders: Map<string, Render>, hostSecrets: readonly string[]) {
    this.#hostSecrets = hostSecrets
    this.#pod = pod
    this.#manifest = manifest
    this.#oci = oci
    this.#sources = () => volumeSources(pod, manifest())
    this.#renders = renders
  }

  get holder(): { pid: number; start: string | null } {
    return { pid: this.#oci.infraPid, start: this.#oci.infraStart }
  }

  /** Starts the pod's infra; `manifest` is read again at each app's start (a mutable pod's changes). */
  static async start(pod: Pod, manifest: () => PodManifest, opts: OciRuntimeOptions = {}): Promise<OciRuntime> {
    const m = manifest()
    const runtime = opts.runtime ?? findRuntime()
    const idMap = podIdMap(m)
    const cgroups = process.geteuid?.() === 0 || canMakeCgroups()
    const refused = limitsRefused(m, `pod ${shortId(pod.uuid)}`)
    if (refused) throw refused
    const spec: PodSpec = {
      uuid: pod.uuid,
      hostname: m.name ?? shortId(pod.uuid),
      rootfs: path.join(pod.path, ROOTFS_DIR),
      infraRoot: ensureInfraRoot(pod.dataDir),
      network: networkOf(m),
      ...(idMap ? { idMap } : {}),
      cgroups,
      hostDirs: hostDirs(),
      privilegedApps: m.apps.some((a) => a.privileged === true),
      ...(cgroups && cgroupLayout().mode === 'v2' ? { unified: true } : {}),
    }
    // The runtime enters the roots as the range's root, which is nobody on the
    // host: its group, and no one else, may pass through the directories above.
    if (idMap && process.geteuid?.() === 0) allowGroupTraverse([...pathToPod(pod), ...infraRootPath(pod.dataDir)], idMap.gid[0]!.hostID)
    // Each image rendered once for this id map (nothing to do when it was rendered before: CONTRACT §13).
    const renders = new Map<string, Render>()
    const renderIds = idMap && process.geteuid?.() === 0 ? { uid: idMap.uid[0]!.hostID, gid: idMap.gid[0]!.hostID, size: idMap.uid[0]!.size } : undefined
    for (const a of m.apps) {
      if (a.image !== undefined && !renders.has(a.image)) renders.set(a.image, await ensureRender(pod.dataDir, a.image, renderIds ? { idMap: renderIds } : {}))
    }
    // Root without a user namespace reads what modes forbid: the host's secrets are looked for while the infra starts.
    const secrets = idMap === undefined && m.apps.some((a) => a.image === undefined) ? hostSecrets() : Promise.resolve([])
    secrets.catch(() => {})
    const limits = podLimits(m.resources)
    const oci = await OciPod.start({ dataDir: pod.dataDir, podDir: pod.path, uuid: pod.uuid, runtime }, spec, limits)
    let masked: string[]
    try {
      masked = await secrets
    } catch (er) {
      await oci.close()
      throw new PodctlError('EFAILED', `pod ${shortId(pod.uuid)} cannot start: ${(er as Error).message}`)
    }
    if (spec.unified && limits !== undefined) {
      try {
        writeUnifiedLimits(podCgroup(pod.uuid), { ...limits, ...(limits.cpuCores !== undefined ? { cpuQuotaUs: Math.round(limits.cpuCores * 100_000), cpuPeriodUs: 100_000 } : {}) })
      } catch (er) {
        await oci.close()
        throw new PodctlError('EFAILED', `the limits of pod ${shortId(pod.uuid)} could not be set: ${(er as Error).message}`)
      }
    }
    return new OciRuntime(pod, manifest, oci, renders, masked)
  }

  startApp(app: App): AppProcess {
    const m = this.#manifest()
    const spec = this.#oci.spec
    const idMap = spec.idMap
    // The host ids of the pod's root: shifted into a private range; the invoking user's when rootless.
    const shift = idMap && process.geteuid?.() === 0 ? { uid: idMap.uid[0]!.hostID, gid: idMap.gid[0]!.hostID } : undefined
    const rootless = idMap !== undefined && shift === undefined
    const privileged = app.privileged === true
    const capabilities = effectiveCapabilities({ ...app.capabilities, privileged })
    const common = {
      name: app.name,
      args: app.exec,
      capabilities,
      seccomp: seccompOf(app, capabilities),
      privileged,
      noNewPrivileges: !privileged,
      ...(app.resources ? { resources: resourceLimits(app.resources)! } : {}),
    }
    let appSpec: AppSpec
    let rootfs: AppProcess['rootfs']
    if (app.image !== undefined) {
      const made = this.#imageApp(app, shift)
      rootfs = made.kind
      const user = made.user
      appSpec = {
        ...common,
        env: { PATH: CONTAINER_PATH, HOSTNAME: spec.hostname, HOME: user.home ?? '/', ...(user.name ? { USER: user.name, LOGNAME: user.name } : {}), container: 'podctl', ...(app.env ?? {}), PODCTL_POD_UUID: this.#pod.uuid, PODCTL_APP_NAME: app.name, PODCTL_APP_ROOT: '/' },
        cwd: app.workingDirectory ?? '/',
        uid: rootless ? 0 : user.uid,
        gid: rootless ? 0 : user.gid,
        mounts: ownTargets(made.rootfs, volumeBinds(app, this.#sources()), shift),
        root: { path: made.rootfs, readonly: app.readOnlyRootFilesystem === true },
      }
    } else {
      const place = appPlace(this.#pod, app, (user) => (shift ? { uid: shift.uid + (user?.uid ?? 0), gid: shift.gid + (user?.gid ?? 0) } : user))
      appSpec = {
        ...common,
        env: appEnv(this.#pod, app, containerAppRoot(app.name), place.user, spec.hostname),
        cwd: path.posix.join(containerAppRoot(app.name), path.relative(place.root, place.cwd)),
        uid: rootless ? 0 : place.user?.uid ?? 0,
        gid: rootless ? 0 : place.user?.gid ?? 0,
        mounts: appBinds(place.root, app, this.#sources(), app.readOnlyRootFilesystem === true),
        masked: this.#hostSecrets,
      }
    }
    const started = this.#oci.startApp(appSpec, spec.cgroups && memoryLimited(m, app))
    if (!spec.cgroups) void started.running.then((pid) => this.#endOrphansWith(pid, app.name, started.child), () => {})
    const dir = appRoot(this.#pod.path, app.name)
    return {
      ...started,
      ...(rootfs ? { rootfs } : {}),
      ended: async (code, signal) => {
        const end = await started.ended(code ?? signalExitCode(signal ?? 'SIGKILL'))
        // The overlay goes with the container; what the app wrote stays in the pod's upper.
        if (rootfs === 'overlay') tearDownAppRoot(dir)
        return end
      },
    }
  }

  /**
   * Without a cgroup (a rootless pod on cgroup v1) the runtime cannot find
   * what an app left behind, and waits on it after the app's first
   * process has ended, for as long as it lives. So podctl watches that
   * process, and when it is gone ends what carries the app's mark.
   */
  #endOrphansWith(pid: number, app: string, runtime: ChildProcess): void {
    const start = procStart(pid) ?? null
    const timer = setInterval(() => {
      if (sameProcess(pid, start)) return
      clearInterval(timer)
      killMarked([podEnvMark(this.#pod.uuid), `PODCTL_APP_NAME=${app}`], { startedSince: start })
    }, ORPHAN_WATCH_MS)
    runtime.once('exit', () => clearInterval(timer))
  }

  /** An image app's root (an overlay of its image's render, or a copy) and its user, looked up in the image. Throws spawn-like. */
  #imageApp(app: App, shift: { uid: number; gid: number } | undefined): AppRoot & { user: ImageUser } {
    const render = this.#renders.get(app.image!)
    if (render === undefined) throw cannotStart(`image ${app.image} was not rendered when the pod started`)
    let user: ImageUser
    try {
      user = imageUser(render.rootfs, app.user, app.group)
    } catch (er) {
      throw cannotStart((er as Error).message)
    }
    const dir = appRoot(this.#pod.path, app.name)
    fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE })
    if (shift) allowGroupTraverse([path.join(this.#pod.path, 'apps'), dir], shift.gid)
    return { ...prepareAppRoot(render, dir, shift ? { owner: shift } : {}), user }
  }

  close(): Promise<void> {
    return this.#oci.close()
  }
}
