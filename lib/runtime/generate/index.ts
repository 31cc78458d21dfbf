/**
 * The OCI configs of an isolated pod (CONTRACT §12), made as podman makes
 * a container's: a pipeline of small generators, one per concern, over the
 * runtime spec's own type (lib/runtime/oci-spec.ts), each a pure function
 * of the facts gathered for it (facts.ts). One config for the pod's infra,
 * which makes and holds the pod's namespaces, and one per app, which joins
 * them by path.
 */
import { INFRA_EXE } from '../infra.js'
import { OCI_VERSION, type Spec } from '../oci-spec.js'
import { appEnvironment, envLines } from './env.js'
import type { AppFacts, Bind, PodFacts, ResourceLimits } from './facts.js'
import { DEV_TMPFS, bindMount, byDepth, systemMounts, writableMounts } from './mounts.js'
import { appNamespaces, idMappings, infraNamespaces } from './namespaces.js'
import { appResourcesOf, infraCgroup, linuxResources } from './resources.js'
import { appDirMounts, appRootInContainer, rootMounts, rootOf } from './root.js'
import { MASKED_PATHS, READONLY_PATHS, appCapabilities, capabilitySet, securityOf } from './security.js'

/**
 * The infra's config: catatonit, paused, as pid 1 of the pod, in a root
 * that holds only itself, /proc and a /dev tmpfs (so that the runtime
 * makes its devices there, not in the root on disk); no capabilities.
 * It carries the pod's limits (on cgroup v1; on v2 podctl writes them on
 * the pod's cgroup above it).
 */
export const infraSpec = (pod: PodFacts, limits: ResourceLimits | undefined): Spec => ({
  ociVersion: OCI_VERSION,
  process: {
    terminal: false,
    user: { uid: 0, gid: 0 },
    args: [INFRA_EXE, '-P'],
    env: [],
    cwd: '/',
    capabilities: capabilitySet([]),
    noNewPrivileges: true,
  },
  root: { path: pod.infraRoot, readonly: true },
  hostname: pod.hostname,
  mounts: [
    { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
    { ...DEV_TMPFS, options: ['nosuid', 'noexec', 'strictatime', 'mode=755', 'size=64k'] },
  ],
  linux: {
    namespaces: infraNamespaces(pod),
    ...idMappings(pod),
    ...(pod.cgroups ? { cgroupsPath: infraCgroup(pod.uuid, pod.unified), resources: linuxResources(pod.unified ? undefined : limits, pod.privilegedApps) } : {}),
    maskedPaths: [...MASKED_PATHS],
    readonlyPaths: [...READONLY_PATHS],
    // As containers.conf's default_sysctls: root's group may open ICMP echo sockets (ping without CAP_NET_RAW, which podman's defaults lack).
    ...(pod.network !== 'host' ? { sysctl: { 'net.ipv4.ping_group_range': '0 0' } } : {}),
  },
})

/**
 * An app's config: it joins the infra's namespaces (`infraPid` on the
 * host) and has a mount namespace, capabilities, seccomp filter and cgroup
 * of its own. `files` are the pod's generated files this app binds.
 */
export const appSpec = (pod: PodFacts, app: AppFacts, infraPid: number, files: readonly Bind[]): Spec => ({
  ociVersion: OCI_VERSION,
  process: {
    terminal: app.terminal,
    user: { uid: app.user.uid, gid: app.user.gid, additionalGids: app.user.additionalGids },
    args: [...app.args],
    env: envLines(appEnvironment(pod, app, appRootInContainer(app))),
    cwd: app.root.cwd,
    capabilities: appCapabilities(app),
    noNewPrivileges: !app.privileged,
  },
  root: rootOf(pod, app),
  mounts: [
    ...rootMounts(pod, app).filter((m) => m.destination === '/'),
    ...systemMounts(pod, app.privileged),
    ...rootMounts(pod, app).filter((m) => m.destination !== '/'),
    ...writableMounts(app),
    ...appDirMounts(app),
    ...byDepth(app.volumes).map((b) => bindMount(b, app.privileged)),
    ...files.map((b) => bindMount(b, app.privileged)),
  ],
  linux: {
    namespaces: appNamespaces(pod, infraPid),
    ...idMappings(pod),
    ...appResourcesOf(pod.cgroups, pod.uuid, app),
    ...securityOf(app),
  },
})

export type { AppFacts, Bind, PodFacts, ResourceLimits } from './facts.js'
