/**
 * The OCI runtime spec's config.json (opencontainers/runtime-spec
 * 1.0.2, specs-go/config.go), as far as podctl writes it: the type the
 * generators fill in (lib/runtime/generate/), so that the compiler checks
 * every field name and shape before runc or crun does.
 */

export interface Spec {
  ociVersion: string
  process: Process
  root: Root
  hostname?: string
  mounts: Mount[]
  linux: Linux
  annotations?: Record<string, string>
}

export interface Process {
  terminal: boolean
  user: User
  args: string[]
  env: string[]
  cwd: string
  capabilities: Capabilities
  noNewPrivileges: boolean
  rlimits?: Rlimit[]
}

export interface User {
  uid: number
  gid: number
  additionalGids?: number[]
}

export interface Capabilities {
  bounding: string[]
  effective: string[]
  permitted: string[]
  inheritable: string[]
  ambient: string[]
}

export interface Rlimit {
  type: string
  hard: number
  soft: number
}

export interface Root {
  path: string
  readonly: boolean
}

export interface Mount {
  destination: string
  type: string
  source: string
  options: string[]
}

export type NamespaceType = 'pid' | 'ipc' | 'uts' | 'mount' | 'cgroup' | 'network' | 'user'

export interface Namespace {
  type: NamespaceType
  /** Join this namespace (a /proc/PID/ns file) instead of making one. */
  path?: string
}

export interface IdMapping {
  containerID: number
  hostID: number
  size: number
}

export interface Linux {
  namespaces: Namespace[]
  uidMappings?: IdMapping[]
  gidMappings?: IdMapping[]
  cgroupsPath?: string
  resources?: Resources
  maskedPaths?: string[]
  readonlyPaths?: string[]
  seccomp?: Seccomp
  /** Namespaced sysctls the runtime writes before it makes /proc/sys read-only. */
  sysctl?: Record<string, string>
}

export interface DeviceRule {
  allow: boolean
  access: string
  type?: string
  major?: number
  minor?: number
}

export interface Resources {
  devices: DeviceRule[]
  memory?: { limit: number; swap: number }
  cpu?: { quota: number; period: number }
  pids?: { limit: number }
}

export interface SeccompArg {
  index: number
  value: number
  valueTwo?: number
  op: string
}

export interface SeccompSyscall {
  names: string[]
  action: string
  errnoRet?: number
  args?: SeccompArg[]
}

export interface Seccomp {
  defaultAction: string
  defaultErrnoRet?: number
  architectures?: string[]
  syscalls: SeccompSyscall[]
}

/** The ociVersion podctl writes: the oldest that runc 1.1 and crun 1.8 both take with every field used here. */
export const OCI_VERSION = '1.0.2'
