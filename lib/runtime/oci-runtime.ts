/**
 * Isolated pods (`"isolation": "namespaces"`, CONTRACT §12) as the
 * supervisor runs them, behind the one PodRuntime seam: the facts of the
 * pod and of each app gathered (pod-facts.ts, app-facts.ts), turned into
 * OCI configs by the generators (generate/), and run by the pod's runtime
 * (pod-containers.ts, driver.ts).
 */
import type { ChildProcess } from 'node:child_process'
import path from 'node:path'
import { PodctlError, isPodctlError, shortId } from '../errors.js'
import { allowGroupTraverse } from '../fs/modes.js'
import { tearDownAppRoot } from '../image/app-root.js'
import { ensureRender, type Render } from '../image/render.js'
import type { App, PodManifest } from '../pod/manifest.js'
import type { Pod } from '../pod/pod.js'
import { appRoot } from '../pod/prepare.js'
import { podEnvMark } from '../pod/reap.js'
import { writeUnifiedLimits } from '../proc/cgroups.js'
import { killMarked } from '../proc/escaped.js'
import { procStart, sameProcess } from '../proc/identity.js'
import { pathToPod } from './app-launch.js'
import { gatherAppFacts, volumeSources } from './app-facts.js'
import { RuntimeDriver } from './driver.js'
import type { PodFacts } from './generate/facts.js'
import { appSpec, infraSpec } from './generate/index.js'
import { CPU_PERIOD_US, podCgroup } from './generate/resources.js'
import { signalExitCode } from './host.js'
import { hostSecrets } from './host-secrets.js'
import { ensureInfraRoot, infraRootPath } from './infra.js'
import { PodContainers } from './pod-containers.js'
import { limitsRefused, makePodRoot, podFacts, podLimits } from './pod-facts.js'
import type { Attachment } from '../network/records.js'
import { hostAddress, writePodFiles } from './pod-files.js'
import { addHostsOf, reserveNetworks, resolvOf, type PendingNetworks, type PodNetworking } from './pod-network.js'
import { findRuntime, type RuntimeRef } from './runtime.js'
import type { AppProcess, PodRuntime, StartOptions } from './types.js'
import { podIds, type PodIds } from './userns.js'

/** How often an app without a cgroup is looked at, to end what it left behind once it ends. */
const ORPHAN_WATCH_MS = 200

/** The pod's own root, in the pod dir. */
export const ROOTFS_DIR = 'rootfs'

export interface OciRuntimeOptions {
  /** The runtime the pod was prepared with (default: this host's default). */
  runtime?: RuntimeRef
}

/** Whether any memory limit holds for `app`: then its container is kept after it exits, to read the OOM counter. */
const memoryLimited = (m: PodManifest, app: App): boolean => m.resources?.memory !== undefined || app.resources?.memory !== undefined

export class OciRuntime implements PodRuntime {
  readonly #pod: Pod
  readonly #manifest: () => PodManifest
  readonly #containers: PodContainers
  readonly #facts: PodFacts
  readonly #ids: PodIds
  /** The renders of the pod's images, by digest, made before its first app starts. */
  readonly #renders: Map<string, Render>
  /** The host's secrets, masked in every app of host programs. */
  readonly #hostSecrets: readonly string[]

  /** The pod on its networks, left when it closes. */
  readonly #network: PodNetworking | undefined

  private constructor(pod: Pod, manifest: () => PodManifest, containers: PodContainers, facts: PodFacts, ids: PodIds, renders: Map<string, Render>, hostSecrets: readonly string[], network: PodNetworking | undefined) {
    this.#network = network
    this.#pod = pod
    this.#manifest = manifest
    this.#containers = containers
    this.#facts = facts
    this.#ids = ids
    this.#renders = renders
    this.#hostSecrets = hostSecrets
  }

  get holder(): { pid: number; start: string | null } {
    return { pid: this.#containers.infraPid, start: this.#containers.infraStart }
  }

  /** Starts the pod's infra; `manifest` is read again at each app's start (a mutable pod's changes). */
  static async start(pod: Pod, manifest: () => PodManifest, opts: OciRuntimeOptions = {}): Promise<OciRuntime> {
    const m = manifest()
    const driver = new RuntimeDriver(pod.dataDir, opts.runtime ?? findRuntime())
    const refused = limitsRefused(m, `pod ${shortId(pod.uuid)}`)
    if (refused) throw refused
    const ids = podIds(m)
    const facts = podFacts(m, { uuid: pod.uuid, podRoot: path.join(pod.path, ROOTFS_DIR), infraRoot: ensureInfraRoot(pod.dataDir), ids })
    // The runtime enters the roots as the range's root, which is nobody on the
    // host: its group, and no one else, may pass through the directories above.
    if (ids.shift) allowGroupTraverse([...pathToPod(pod), ...infraRootPath(pod.dataDir)], ids.shift.gid)
    // Each image rendered once for this id map (nothing to do when it was rendered before: CONTRACT §13).
    const renders = new Map<string, Render>()
    const renderIds = ids.shift ? { uid: ids.shift.uid, gid: ids.shift.gid, size: ids.map!.uid[0]!.size } : undefined
    for (const a of m.apps) {
      if (a.image !== undefined && !renders.has(a.image)) renders.set(a.image, await ensureRender(pod.dataDir, a.image, renderIds ? { idMap: renderIds } : {}))
    }
    const limits = facts.cgroups ? podLimits(m) : undefined
    // The infra, in a root of its own, needs nothing of what the apps need:
    // its runtime starts first, and that is made while it works.
    const starting = PodContainers.start(driver, pod.uuid, pod.path, infraSpec(facts, limits))
    let secrets: Promise<string[]>
    let reserving: Promise<PendingNetworks | undefined>
    try {
      // Root without a user namespace reads what modes forbid: the host's secrets are masked in its apps.
      secrets = ids.map === undefined && m.apps.some((a) => a.image === undefined) ? hostSecrets() : Promise.resolve([])
      secrets.catch(() => {})
      makePodRoot(facts, ids.map ? { uid: ids.map.uid[0]!.hostID, gid: ids.map.gid[0]!.hostID } : undefined)
      facts.files = writePodFiles(pod.path, {
        hostname: facts.hostname,
        names: m.name !== undefined && m.name !== facts.hostname ? [m.name] : [],
        network: facts.network,
        addHosts: addHostsOf(m),
        resolv: resolvOf(m),
        hostAddress: hostAddress(),
      })
      // What the networks need no namespace for (checks, the record, the ports) is done while the infra starts.
      reserving = reserveNetworks(m, { dataDir: pod.dataDir, podDir: pod.path, uuid: pod.uuid, hostname: facts.hostname })
    } catch (er) {
      await starting.then((c) => c.close(), () => {})
      throw er
    }
    const [started, reserved] = await Promise.allSettled([starting, reserving])
    if (started.status === 'rejected') {
      if (reserved.status === 'fulfilled') reserved.value?.cancel()
      throw started.reason
    }
    const containers = started.value
    let network: PodNetworking | undefined
    try {
      if (reserved.status === 'rejected') throw reserved.reason
      const pending = reserved.value
      try {
        if (facts.unified && limits !== undefined) {
          writeUnifiedLimits(podCgroup(pod.uuid), { ...limits, ...(limits.cpuCores !== undefined ? { cpuQuotaUs: Math.round(limits.cpuCores * CPU_PERIOD_US), cpuPeriodUs: CPU_PERIOD_US } : {}) })
        }
      } catch (er) {
        pending?.cancel()
        throw er
      }
      network = await pending?.join({ pid: containers.infraPid, start: containers.infraStart })
      return new OciRuntime(pod, manifest, containers, facts, ids, renders, await secrets, network)
    } catch (er) {
      await containers.close()
      await network?.leave().catch(() => {})
      // A network or port that cannot be had keeps its own code (3, 4): the pod did not start for it.
      if (isPodctlError(er)) throw er
      throw new PodctlError('EFAILED', `pod ${shortId(pod.uuid)} cannot start: ${(er as Error).message}`)
    }
  }

  /** The networks the pod joined, with its addresses, as its record shows them. */
  get networks(): Attachment[] {
    return this.#network?.attachments ?? []
  }

  startApp(app: App, opts: StartOptions): AppProcess {
    const m = this.#manifest()
    // A terminal is podctl's own, which the runtime takes as its console (a foreground `runc run` copies between them).
    const terminal = opts.interactive && app.tty === true
    const stdin = opts.interactive && (app.stdin === true || terminal)
    const gathered = gatherAppFacts({
      pod: this.#pod,
      facts: this.#facts,
      ids: this.#ids,
      app,
      sources: volumeSources(this.#pod, m),
      ...(app.image !== undefined && this.#renders.has(app.image) ? { render: this.#renders.get(app.image)! } : {}),
      masked: this.#hostSecrets,
      terminal,
    })
    const spec = appSpec(this.#facts, gathered.app, this.#containers.infraPid, gathered.files)
    const started = this.#containers.startApp(app.name, spec, { keep: this.#facts.cgroups && memoryLimited(m, app), stdio: [stdin ? 'inherit' : 'ignore', 'pipe', 'pipe'] })
    if (!this.#facts.cgroups) void started.running.then((pid) => this.#endOrphansWith(pid, app.name, started.child), () => {})
    const rootfs = gathered.rootfs
    const dir = appRoot(this.#pod.path, app.name)
    return {
      ...started,
      contained: this.#facts.cgroups,
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

  /**
   * Ends the pod and takes it off its networks (what a DEL leaves, gc
   * deletes): beside the infra's end for podctl's own networks, whose DEL
   * needs no namespace, after it for the others (detach).
   */
  async close(): Promise<void> {
    const ending = this.#containers.close()
    await Promise.all([ending, this.#network?.leave(ending).catch(() => {})])
  }
}
