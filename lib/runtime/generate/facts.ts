/**
 * What the generators of an isolated pod's OCI configs are handed: every
 * fact about the pod, the app and the host, gathered once with whatever
 * I/O it took (lib/runtime/oci-runtime.ts), so that the generators
 * themselves are pure functions, as podman's pkg/specgen/generate are of
 * their SpecGenerator.
 */
import type { Capabilities, IdMapping, Seccomp } from '../oci-spec.js'

/** A directory or file of the host seen in a container at `target`. */
export interface Bind {
  source: string
  target: string
  readOnly: boolean
}

/** Whose ids a pod's root is: the host's (none), or mapped (rootless, or a private range). */
export interface IdMap {
  uid: IdMapping[]
  gid: IdMapping[]
}

/** Limits as numbers, for the app's cgroup or the pod's. */
export interface ResourceLimits {
  memoryBytes?: number
  cpuCores?: number
  pids?: number
}

/** The files podctl makes for a pod and binds read-only into every app (CONTRACT §14, §15). */
export interface PodFiles {
  hosts: string
  hostname: string
  /** Absent where the pod keeps its image's own (podman with the host's network and none). */
  resolvConf?: string
  containerenv: string
}

/** What every container of a pod shares. */
export interface PodFacts {
  uuid: string
  hostname: string
  /** The pod's own root for apps of host programs: a directory of the pod, read-only, with mount points made in it. */
  rootfs: string
  /** The infra's root: the infra program alone. */
  infraRoot: string
  /** The host's network, none (loopback only), or networks joined once the infra runs (a network namespace of its own). */
  network: 'host' | 'none' | 'joined'
  /** Set when the pod has a user namespace of its own. */
  idMap?: IdMap
  /** Whether cgroups are made (a rootless runtime on cgroup v1 cannot). */
  cgroups: boolean
  /** cgroup v2: the infra in a leaf of its own beside its apps, each app with a cgroup namespace of its own. */
  unified: boolean
  /** The host's directories bound read-only into the pod's root (and links, for those that are links on the host). */
  hostDirs: readonly { path: string; link?: string }[]
  /** An app of the pod is privileged: the pod's cgroup must let it have the host's devices. */
  privilegedApps: boolean
  /** The pod's generated files (none before they are written). */
  files?: PodFiles
}

/** Who the app's process is, in the container's ids. */
export interface ProcessUser {
  uid: number
  gid: number
  additionalGids: number[]
  /** From its passwd entry: HOME, USER and LOGNAME. */
  name?: string
  home: string
}

/** An app's root: the pod's (host programs, with the app's own directory bound in it) or an image's. */
export type AppRootFacts =
  | { kind: 'pod'; appDir: string; cwd: string }
  | { kind: 'image'; rootfs: string; cwd: string; readOnly: boolean; overlay?: { lower: string; upper: string; work: string } }

/** One app, with everything gathered for its config. */
export interface AppFacts {
  name: string
  args: readonly string[]
  /** The app's own variables (the image's, the proxy's and the manifest's, merged at prepare). */
  env: Readonly<Record<string, string>>
  root: AppRootFacts
  user: ProcessUser
  capabilities: readonly string[]
  /** Those of `capabilities` the manifest adds: a user that is not root has these alone, ambient (podman's rule). */
  addedCapabilities: readonly string[]
  /** Undefined: no filter (unconfined, privileged). */
  seccomp?: Seccomp
  privileged: boolean
  readOnlyRootFilesystem: boolean
  /** Its volumes, targets resolved in its root. */
  volumes: readonly Bind[]
  resources?: ResourceLimits
  terminal: boolean
  /** Paths masked besides podman's (the host's secrets). */
  masked: readonly string[]
  /** The pod's uuid, for PODCTL_POD_UUID. */
  podUuid: string
}

export type { Capabilities }
