/**
 * The OCI runtime configs (config.json, runtime spec 1.0.2) of an isolated
 * pod (CONTRACT §12): one for the pod's infra process, which makes and
 * holds the pod's namespaces, and one per app, which joins them by path
 * and gets a mount namespace, capabilities, seccomp filter and cgroup of
 * its own. Pure: every fact about the host is passed in.
 */
import { INFRA_EXE } from './infra.js'
import type { OciSeccomp } from './seccomp.js'

/** A directory or file of the host seen in a container at `target`. */
export interface Bind {
  source: string
  target: string
  readOnly: boolean
}

export interface IdMapping {
  containerID: number
  hostID: number
  size: number
}

/** Whose ids the pod's root is: the host's, or mapped (rootless, or a private range). */
export interface IdMap {
  uid: IdMapping[]
  gid: IdMapping[]
}

export interface ResourceLimits {
  memoryBytes?: number
  cpuCores?: number
  pids?: number
}

/** What every container of a pod shares. */
export interface PodSpec {
  uuid: string
  hostname: string
  /** The pod's own root: a directory of the pod, read-only, with mount points made in it. */
  rootfs: string
  /** The infra's root: the infra program alone (lib/runtime/infra.ts). */
  infraRoot: string
  network: 'host' | 'none'
  /** Set when the pod has a user namespace of its own. */
  idMap?: IdMap
  /** Whether cgroups are made (a rootless runtime on cgroup v1 cannot). */
  cgroups: boolean
  /**
   * cgroup v2 only: a cgroup that has processes cannot hand controllers to
   * its children, so the infra sits in a leaf of its own beside its apps,
   * each app has a cgroup namespace of its own, and the pod's limits are
   * written on the pod's cgroup by podctl (`writePodLimits`).
   */
  unified?: boolean
  /** The host's directories bound read-only into every app's root (and links, for those that are links on the host). */
  hostDirs: readonly { path: string; link?: string }[]
  /** An app of the pod is privileged: the pod's cgroup must let it have the host's devices. */
  privilegedApps?: boolean
}

export interface AppSpec {
  name: string
  args: readonly string[]
  env: Record<string, string>
  cwd: string
  uid: number
  gid: number
  capabilities: readonly string[]
  /** Undefined: no filter (unconfined, privileged). */
  seccomp?: OciSeccomp
  privileged: boolean
  noNewPrivileges: boolean
  mounts: readonly Bind[]
  resources?: ResourceLimits
  terminal?: boolean
  /** An app from an image (CONTRACT §13): its own root in the place of the pod's, without the host's directories. */
  root?: { path: string; readonly: boolean }
  /** Paths masked besides podman's (the host's secrets in its /etc: lib/runtime/host-secrets.ts). */
  masked?: readonly string[]
}

/**
 * The cgroup of a pod (its infra's) and of each app within it: the pod's
 * limits hold for all of its apps together. An app's has a prefix: a
 * cgroup v1 directory holds files (`tasks`) that an app's name could be.
 */
export const podCgroup = (uuid: string): string => `/podctl/${uuid}`
/** The infra's cgroup: the pod's on cgroup v1, a leaf below it on v2 (see PodSpec.unified). */
export const infraCgroup = (uuid: string, unified: boolean): string => (unified ? `${podCgroup(uuid)}/infra` : podCgroup(uuid))
export const appCgroup = (uuid: string, app: string): string => `${podCgroup(uuid)}/app-${app}`

/** What podman masks and makes read-only in /proc and /sys (CONTRACT §12). */
export const MASKED_PATHS = [
  '/proc/acpi',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/fs/selinux',
  '/sys/dev/block',
]
export const READONLY_PATHS = ['/proc/asound', '/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger']

const NS_FILE: Record<string, string> = { pid: 'pid', ipc: 'ipc', uts: 'uts', cgroup: 'cgroup', network: 'net', user: 'user' }

/** A CFS period of 100 ms, the kernel's default and podman's. */
const CPU_PERIOD_US = 100_000

interface OciMount {
  destination: string
  type: string
  source: string
  options: string[]
}

const linuxResources = (r: ResourceLimits | undefined, privileged = false): Record<string, unknown> => ({
  // Only the devices runc makes itself (null, zero, full, random, urandom, tty, ptmx): no host device; privileged: every one.
  devices: [{ allow: privileged, access: 'rwm' }],
  // Memory with no swap beyond it, as rkt's isolator: a memory limit that swap can stretch is no limit.
  ...(r?.memoryBytes !== undefined ? { memory: { limit: r.memoryBytes, swap: r.memoryBytes } } : {}),
  ...(r?.cpuCores !== undefined ? { cpu: { quota: Math.round(r.cpuCores * CPU_PERIOD_US), period: CPU_PERIOD_US } } : {}),
  ...(r?.pids !== undefined ? { pids: { limit: r.pids } } : {}),
})

const idMappings = (m: IdMap | undefined): Record<string, unknown> => (m ? { uidMappings: m.uid, gidMappings: m.gid } : {})

/** The kernel's file systems every container gets: its own /proc, a private /dev, /dev/shm and /tmp. */
const systemMounts = (pod: PodSpec, privileged: boolean): OciMount[] => {
  const mounts: OciMount[] = [
    { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
    privileged
      ? { destination: '/dev', type: 'bind', source: '/dev', options: ['rbind'] }
      : { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'] },
    // A pts gid other than one the user namespace maps would be refused.
    { destination: '/dev/pts', type: 'devpts', source: 'devpts', options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620', ...(pod.idMap ? [] : ['gid=5'])] },
    { destination: '/dev/shm', type: 'tmpfs', source: 'shm', options: ['nosuid', 'noexec', 'nodev', 'mode=1777', 'size=65536k'] },
    { destination: '/dev/mqueue', type: 'mqueue', source: 'mqueue', options: ['nosuid', 'noexec', 'nodev'] },
  ]
  const ro = privileged ? [] : ['ro']
  // A new sysfs shows the network namespace of whoever mounts it; a user
  // namespace may mount one only in a network namespace of its own.
  const hostSys = pod.idMap !== undefined && pod.network === 'host'
  if (hostSys) mounts.push({ destination: '/sys', type: 'bind', source: '/sys', options: ['rbind', 'nosuid', 'noexec', 'nodev', 'ro'] })
  else mounts.push({ destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', ...ro] })
  if (pod.cgroups) mounts.push({ destination: '/sys/fs/cgroup', type: 'cgroup', source: 'cgroup', options: ['nosuid', 'noexec', 'nodev', 'relatime', ...ro] })
  // `ro` makes only the top of a recursive bind read-only, and the host's
  // cgroup mounts below it stay writable where the host delegated a cgroup
  // to this user; runc 1.1 has no `rro`, so the whole tree is masked.
  else if (hostSys && !privileged) mounts.push({ destination: '/sys/fs/cgroup', type: 'tmpfs', source: 'tmpfs', options: ['ro', 'nosuid', 'noexec', 'nodev', 'size=0', 'mode=555'] })
  mounts.push({ destination: '/tmp', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'nodev', 'mode=1777'] })
  return mounts
}

const bindMount = (b: Bind, privileged: boolean): OciMount => ({
  destination: b.target,
  type: 'bind',
  source: b.source,
  options: ['rbind', ...(privileged ? [] : ['nosuid', 'nodev']), ...(b.readOnly ? ['ro'] : [])],
})

/**
 * The infra's config: catatonit, paused, as pid 1 of the pod, in a root
 * that holds only itself, /proc and a /dev tmpfs (so that the runtime
 * makes its devices there, not in the root on disk). It has no
 * capabilities; its guardian on the host ends it when the supervisor ends
 * (lib/runtime/infra.ts).
 */
export const infraConfig = (pod: PodSpec, resources: ResourceLimits | undefined): Record<string, unknown> => ({
  ociVersion: '1.0.2',
  process: {
    terminal: false,
    user: { uid: 0, gid: 0 },
    args: [INFRA_EXE, '-P'],
    env: [],
    cwd: '/',
    capabilities: { bounding: [], effective: [], permitted: [], inheritable: [], ambient: [] },
    noNewPrivileges: true,
  },
  root: { path: pod.infraRoot, readonly: true },
  hostname: pod.hostname,
  mounts: [
    { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
    { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'noexec', 'strictatime', 'mode=755', 'size=64k'] },
  ],
  linux: {
    namespaces: [
      { type: 'pid' },
      { type: 'ipc' },
      { type: 'uts' },
      { type: 'mount' },
      ...(pod.cgroups ? [{ type: 'cgroup' }] : []),
      ...(pod.network === 'none' ? [{ type: 'network' }] : []),
      ...(pod.idMap ? [{ type: 'user' }] : []),
    ],
    ...idMappings(pod.idMap),
    ...(pod.cgroups ? { cgroupsPath: infraCgroup(pod.uuid, pod.unified === true), resources: linuxResources(pod.unified ? undefined : resources, pod.privilegedApps) } : {}),
    maskedPaths: MASKED_PATHS,
    readonlyPaths: READONLY_PATHS,
  },
})

/** The host's directories in a pod's root: each bound read-only, or the same link where the host has a link. */
const hostDirMounts = (pod: PodSpec, privileged: boolean): OciMount[] =>
  pod.hostDirs.filter((d) => d.link === undefined).map((d) => bindMount({ source: d.path, target: d.path, readOnly: true }, privileged))

/** An app's config: it joins the infra's namespaces (`infraPid` on the host) and has a mount namespace of its own. */
export const appConfig = (pod: PodSpec, app: AppSpec, infraPid: number): Record<string, unknown> => {
  const caps = [...app.capabilities]
  const join = (type: string): { type: string; path: string } => ({ type, path: `/proc/${infraPid}/ns/${NS_FILE[type]!}` })
  return {
    ociVersion: '1.0.2',
    process: {
      terminal: app.terminal === true,
      user: { uid: app.uid, gid: app.gid, additionalGids: [] },
      args: app.args,
      env: Object.entries(app.env).map(([k, v]) => `${k}=${v}`),
      cwd: app.cwd,
      capabilities: { bounding: caps, effective: caps, permitted: caps, inheritable: [], ambient: [] },
      noNewPrivileges: app.noNewPrivileges,
    },
    root: app.root ?? { path: pod.rootfs, readonly: true },
    mounts: [...systemMounts(pod, app.privileged), ...(app.root ? [] : hostDirMounts(pod, app.privileged)), ...app.mounts.map((b) => bindMount(b, app.privileged))],
    linux: {
      namespaces: [
        join('pid'),
        join('ipc'),
        join('uts'),
        { type: 'mount' },
        ...(pod.cgroups ? [pod.unified ? { type: 'cgroup' } : join('cgroup')] : []),
        ...(pod.network === 'none' ? [join('network')] : []),
        ...(pod.idMap ? [join('user')] : []),
      ],
      ...idMappings(pod.idMap),
      ...(pod.cgroups ? { cgroupsPath: appCgroup(pod.uuid, app.name), resources: linuxResources(app.resources, app.privileged) } : {}),
      ...(app.privileged ? {} : { maskedPaths: [...MASKED_PATHS, ...(app.masked ?? [])], readonlyPaths: READONLY_PATHS }),
      ...(app.seccomp ? { seccomp: app.seccomp } : {}),
    },
  }
}
