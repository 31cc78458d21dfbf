/**
 * The pod manifest (CONTRACT §3, `podctl/v1`): its types and a validator
 * that reports every problem with the path of the field and what is wrong.
 * Unknown fields are errors. Nothing here touches the disk.
 *
 * The pod checks its own part: the top level, the apps, and that each
 * volume has a unique name. A volume's kind, what each kind holds,
 * and how mounts may nest, are volume rules (lib/volume/manifest.ts),
 * which callers that make pods pass in as `rules`.
 */
import os from 'node:os'
import path from 'node:path'
import { sizeBytes } from '../bytes.js'
import { PodctlError, oneLine } from '../errors.js'
import { MAX_MANIFEST_BYTES } from '../fs/read.js'
import { capabilityName } from '../proc/capabilities.js'
import { ID_NAME_RE } from '../proc/users.js'
import { clashes, describeHostPort, isDnsOption, isIpAddress, isPort, isSearchDomain, normalizePort, parseAddHost, type Protocol, type PublishedPort } from './network-rules.js'

export const API_VERSION = 'podctl/v1'
export { MAX_MANIFEST_BYTES }

export type AppType = 'init' | 'regular' | 'ephemeral'

export interface Mount {
  volume: string
  path: string
  readOnly?: boolean
}

export interface App {
  name: string
  type?: AppType
  /**
   * The program and its arguments. With `image`, it may be left out in the
   * manifest a user writes: prepare fills it from the image's Entrypoint
   * and Cmd, as podman does, so a stored manifest always has it.
   */
  exec: string[]
  /** CONTRACT §13: the app's root is this image's (NAME[:TAG] or sha256:…); prepare records its digest here. */
  image?: string
  /** With `image`: replaces the image's Entrypoint (podman's --entrypoint); `exec` then replaces its Cmd. */
  entrypoint?: string[]
  env?: Record<string, string>
  workingDirectory?: string
  mounts?: Mount[]
  /** Runs as this user (a name or a uid) and its group; CONTRACT §10. */
  user?: string
  /** Runs with this group (a name or a gid). */
  group?: string
  /** What `stop` sends the app first (an image's StopSignal, podman's --stop-signal); SIGTERM when absent. */
  stopSignal?: string
  /** Its standard input is podctl's, in a foreground run (podman's -i, Kubernetes' stdin). */
  stdin?: boolean
  /** It runs on a terminal: podctl's, in a foreground run (podman's -t, Kubernetes' tty). Isolated pods only. */
  tty?: boolean
  /** CONTRACT §12, isolated pods only: capabilities(7) names added to or dropped from podman's defaults. */
  capabilities?: { add?: string[]; drop?: string[] }
  /** The app's own root (PODCTL_APP_ROOT) is mounted read-only. */
  readOnlyRootFilesystem?: boolean
  /** "default" (containers-common's profile), "unconfined", or the path of an OCI seccomp JSON. */
  seccomp?: string
  /** Every capability, no seccomp, the host's devices: no boundary at all. */
  privileged?: boolean
  resources?: Resources
}

/** Limits enforced by the runtime's cgroups (CONTRACT §12): for one app, or for the whole pod. */
export interface Resources {
  /** Bytes as volumes write them: "256Mi", "1G", or a number. */
  memory?: string | number
  /** A fraction of one core: "0.5", "2", or a number. */
  cpu?: string | number
  /** The most processes (and threads) at once; 0 for no limit (a pod's default is podman's 2048). */
  pids?: number
}

/** Whose ids a pod's root is (CONTRACT §12): the host's, or an unprivileged range of its own. */
export type UserNamespace = 'host' | 'private'

export interface ProjectedFile {
  content: string
  mode?: number
}

export type AccessMode = 'ReadWriteOnce' | 'ReadWriteMany'
/** How a manifest may spell an access mode: the names, or Kubernetes' abbreviations (as on the command line). */
export type AccessModeName = AccessMode | 'RWO' | 'RWX'

export type Volume =
  | { name: string; kind: 'empty' }
  | { name: string; kind: 'host'; source: string; readOnly?: boolean }
  | { name: string; kind: 'files'; files: Record<string, ProjectedFile> }
  | { name: string; kind: 'persistent'; claim: string; readOnly?: boolean; accessMode?: AccessModeName; class?: string; size?: string }

/** How a pod's apps are isolated (CONTRACT §9): host processes, or one set of Linux namespaces. */
export type Isolation = 'host' | 'namespaces'
/**
 * A pod's network (CONTRACT §14): the host's, its own with loopback only
 * (`none`), or the networks it joins: `bridge` (podctl's default network)
 * or a network's name.
 */
export type Network = 'host' | 'none' | (string & {})
export const ISOLATIONS: readonly Isolation[] = ['host', 'namespaces']
/** The default network: what an isolated pod joins unless it says otherwise (podman's and rkt's default). */
export const DEFAULT_NETWORK = 'bridge'

/** A host port forwarded to the pod (CONTRACT §14, podman's -p). */
export interface PortMapping {
  hostPort: number
  containerPort: number
  /** "tcp" when absent. */
  protocol?: 'tcp' | 'udp'
  /** Every address of the host when absent. */
  hostIP?: string
}

export interface PodManifest {
  apiVersion: typeof API_VERSION
  name?: string
  labels?: Record<string, string>
  annotations?: Record<string, string>
  mutable?: boolean
  /** "host" when absent. */
  isolation?: Isolation
  /** "host" for a pod of host processes, "bridge" for an isolated one, when absent; anything but "host" needs isolation "namespaces". */
  network?: Network
  /** Several networks to join (eth0, eth1, … in order); in the place of `network`. */
  networks?: string[]
  /** Host ports forwarded to the pod on its networks. */
  ports?: PortMapping[]
  /** Name servers, search domains and resolver options of the pod's /etc/resolv.conf, in the place of the host's. */
  dns?: string[]
  dnsSearch?: string[]
  dnsOptions?: string[]
  /** More lines of the pod's /etc/hosts: "NAME:IP". */
  addHosts?: string[]
  /** "host" when absent; "private" needs isolation "namespaces" and root. */
  userns?: UserNamespace
  /** Limits for all the pod's apps together. */
  resources?: Resources
  /** An isolated pod's hostname (--hostname); without it, the pod's name or the first 8 characters of its UUID. */
  hostname?: string
  /** The pod is removed once it has exited (--rm). */
  autoRemove?: boolean
  /** false: the caller's http_proxy, https_proxy, ftp_proxy and no_proxy (either case) do not pass to the apps (--http-proxy=false); they do when absent. */
  httpProxy?: boolean
  apps: App[]
  volumes?: Volume[]
}

export const NAME_RE = /^[a-z0-9][a-z0-9-]{0,62}$/
/** A network's name, as podman's and CNI's allow it. */
export const NETWORK_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/
const NAME_RULE = 'must be 1 to 63 characters of a-z, 0-9 and "-", starting with a letter or digit'
const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/

/** One thing wrong with a manifest: where, and what. */
export interface ManifestProblem {
  path: string
  problem: string
}

/**
 * A check of another layer (the volume rules). It runs on every manifest
 * that is an object, so that one message names every problem; when the
 * pod's own part has problems (`wellFormed` false) `m` is not yet a valid
 * PodManifest, and the rule reads it as the unknown it is.
 */
export type ManifestRule = (m: PodManifest, wellFormed: boolean) => ManifestProblem[]

export interface ValidateOptions {
  /** Ephemeral apps only come from `app add`; a stored manifest may have them. */
  allowEphemeral?: boolean
  rules?: readonly ManifestRule[]
}

type Obj = Record<string, unknown>
export const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v)
/** How a wrong value is named in a problem: "missing", "null", "an array", `string "x"`. */
export const describe = (v: unknown): string =>
  v === undefined ? 'missing' : v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `${typeof v} ${JSON.stringify(v)}`

/** Collects problems; its checks return whether the value passed. */
export class Checker {
  readonly problems: ManifestProblem[] = []
  add(p: string, problem: string): void {
    this.problems.push({ path: p || '(top level)', problem })
  }

  fields(o: Obj, at: string, allowed: readonly string[]): void {
    for (const k of Object.keys(o)) {
      if (!allowed.includes(k)) this.add(join(at, k), `unknown field (allowed: ${allowed.join(', ')})`)
    }
  }

  string(v: unknown, at: string, opts: { nonEmpty?: boolean } = {}): v is string {
    if (typeof v !== 'string') {
      this.add(at, `must be a string, not ${describe(v)}`)
      return false
    }
    if (v.includes('\0')) {
      this.add(at, 'must not contain a NUL character')
      return false
    }
    if (opts.nonEmpty && v === '') {
      this.add(at, 'must not be empty')
      return false
    }
    return true
  }

  name(v: unknown, at: string): v is string {
    if (!this.string(v, at)) return false
    if (!NAME_RE.test(v)) {
      this.add(at, `${JSON.stringify(v)} ${NAME_RULE}`)
      return false
    }
    return true
  }

  bool(v: unknown, at: string): void {
    if (typeof v !== 'boolean') this.add(at, `must be true or false, not ${describe(v)}`)
  }

  stringMap(v: unknown, at: string, keyCheck?: (k: string, at: string) => void): void {
    if (!isObj(v)) {
      this.add(at, `must be an object of strings, not ${describe(v)}`)
      return
    }
    for (const [k, val] of Object.entries(v)) {
      if (k === '' || k.includes('\0')) this.add(at, `has an empty or invalid key ${JSON.stringify(k)}`)
      else keyCheck?.(k, join(at, k))
      this.string(val, join(at, k))
    }
  }

  absPath(v: unknown, at: string): v is string {
    if (!this.string(v, at, { nonEmpty: true })) return false
    if (!v.startsWith('/')) {
      this.add(at, `${JSON.stringify(v)} must be an absolute path`)
      return false
    }
    if (v.split('/').includes('..')) {
      this.add(at, `${JSON.stringify(v)} must not contain ".."`)
      return false
    }
    const tooLong = nameLengthProblem(v)
    if (tooLong !== undefined) {
      this.add(at, tooLong)
      return false
    }
    return true
  }
}

/** Linux's limits on a file name (NAME_MAX) and a path (PATH_MAX, with its NUL). */
export const NAME_MAX = 255
export const PATH_MAX = 4096

/**
 * Why a path would fail with ENAMETOOLONG wherever it is used: a part
 * over NAME_MAX bytes, or the whole over PATH_MAX. Checked when the pod
 * is prepared, not when it runs.
 */
export const nameLengthProblem = (p: string): string | undefined => {
  const long = p.split('/').find((part) => Buffer.byteLength(part) > NAME_MAX)
  if (long !== undefined) return `has a part of ${Buffer.byteLength(long)} bytes (${JSON.stringify(long.slice(0, 20))}…); a file name is at most ${NAME_MAX} bytes`
  if (Buffer.byteLength(p) >= PATH_MAX) return `is ${Buffer.byteLength(p)} bytes long; a path is at most ${PATH_MAX - 1} bytes`
  return undefined
}

/** The field path of `key` below `at`: apps[0].env.HOME, labels["a.b"]. */
export const join = (at: string, key: string | number): string =>
  typeof key === 'number' ? `${at}[${key}]` : /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? (at ? `${at}.${key}` : key) : `${at}[${JSON.stringify(key)}]`

const APP_FIELDS = ['name', 'type', 'image', 'entrypoint', 'exec', 'env', 'workingDirectory', 'mounts', 'user', 'group', 'stopSignal', 'stdin', 'tty', 'capabilities', 'readOnlyRootFilesystem', 'seccomp', 'privileged', 'resources'] as const
/** The app fields that only an isolated pod can honour. */
const CONTAINER_APP_FIELDS = ['capabilities', 'readOnlyRootFilesystem', 'seccomp', 'privileged', 'resources', 'tty'] as const
const RESOURCE_FIELDS = ['memory', 'cpu', 'pids'] as const
/** Below this the kernel's own use of a cgroup (page tables, slabs) leaves an app nothing; podman's floor too. */
export const MIN_MEMORY_BYTES = 6 * 1024 * 1024
/** The smallest CFS quota the kernel takes is 1 ms of a 100 ms period. */
export const MIN_CPU = 0.01
/** The runtime's own init (a Go program, its threads) counts in a pids limit while it starts an app: below this it cannot. */
export const MIN_PIDS = 8
const MOUNT_FIELDS = ['volume', 'path', 'readOnly'] as const
const TOP_FIELDS = ['apiVersion', 'name', 'labels', 'annotations', 'mutable', 'isolation', 'network', 'networks', 'ports', 'dns', 'dnsSearch', 'dnsOptions', 'addHosts', 'userns', 'resources', 'hostname', 'autoRemove', 'httpProxy', 'apps', 'volumes'] as const
/** A hostname as sethostname(2) takes it (64 bytes) and RFC 1123 writes it: dot-separated labels of letters, digits and inner hyphens. */
export const HOSTNAME_RE = /^(?=.{1,64}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/

/** A memory size as bytes (lib/bytes.ts: podman's units, "64m" is 64 MiB); undefined when it is not one (the checker says why). */
export const memoryBytes = (v: string | number): number | undefined =>
  typeof v === 'number' ? (Number.isSafeInteger(v) && v > 0 ? v : undefined) : sizeBytes(v)

/**
 * A signal as podman's --stop-signal and an image's StopSignal give it
 * ("SIGQUIT", "QUIT", "3"), by Node's name; undefined when it is none.
 */
export const stopSignalName = (v: string): NodeJS.Signals | undefined => {
  const signals = os.constants.signals as Record<string, number>
  const name = /^\d+$/.test(v) ? Object.keys(signals).find((k) => signals[k] === Number(v)) : v.toUpperCase().startsWith('SIG') ? v.toUpperCase() : `SIG${v.toUpperCase()}`
  return name !== undefined && signals[name] !== undefined ? (name as NodeJS.Signals) : undefined
}

/** A cpu share as a number of cores; undefined when it is not one. */
export const cpuCores = (v: string | number): number | undefined => {
  const n = typeof v === 'number' ? v : /^\d+(\.\d+)?$/.test(v.trim()) ? Number(v) : NaN
  return Number.isFinite(n) && n > 0 ? n : undefined
}

const checkResources = (c: Checker, v: unknown, at: string): void => {
  if (!isObj(v)) {
    c.add(at, `must be an object with "memory", "cpu" or "pids", not ${describe(v)}`)
    return
  }
  c.fields(v, at, RESOURCE_FIELDS)
  if (v.memory !== undefined) {
    const bytes = typeof v.memory === 'string' || typeof v.memory === 'number' ? memoryBytes(v.memory) : undefined
    if (bytes === undefined) c.add(join(at, 'memory'), `must be a size such as "256Mi" or "1G", not ${describe(v.memory)}`)
    else if (bytes < MIN_MEMORY_BYTES) c.add(join(at, 'memory'), `${JSON.stringify(v.memory)} is below the smallest limit, 6Mi`)
  }
  if (v.cpu !== undefined) {
    const cores = typeof v.cpu === 'string' || typeof v.cpu === 'number' ? cpuCores(v.cpu) : undefined
    if (cores === undefined) c.add(join(at, 'cpu'), `must be a number of cores such as "0.5" or "2", not ${describe(v.cpu)}`)
    else if (cores < MIN_CPU) c.add(join(at, 'cpu'), `${JSON.stringify(v.cpu)} is below the smallest share, 0.01 of a core`)
  }
  // 0 is no limit, as podman's --pids-limit 0 (a pod's default is 2048).
  if (v.pids !== undefined && !(Number.isSafeInteger(v.pids) && (v.pids as number) >= 0)) {
    c.add(join(at, 'pids'), `must be a whole number, 0 for no limit, not ${describe(v.pids)}`)
  } else if (v.pids !== undefined && v.pids !== 0 && (v.pids as number) < MIN_PIDS) {
    c.add(join(at, 'pids'), `${v.pids as number} is below the smallest limit, ${MIN_PIDS}: the runtime needs a few processes of its own to start an app`)
  }
}

const checkCapabilities = (c: Checker, v: unknown, at: string): void => {
  if (!isObj(v)) {
    c.add(at, `must be an object with "add" and "drop" lists, not ${describe(v)}`)
    return
  }
  c.fields(v, at, ['add', 'drop'])
  for (const key of ['add', 'drop'] as const) {
    const list = v[key]
    if (list === undefined) continue
    if (!Array.isArray(list)) {
      c.add(join(at, key), `must be an array of capability names, not ${describe(list)}`)
      continue
    }
    list.forEach((n: unknown, i) => {
      if (c.string(n, join(join(at, key), i)) && capabilityName(n) === undefined) {
        c.add(join(join(at, key), i), `${JSON.stringify(n)} is not a capability (capabilities(7) names such as "NET_ADMIN" or "CAP_NET_ADMIN", or "ALL")`)
      }
    })
  }
}

/** The pod's part of a volume: a name, which mounts refer to; its kind and what that needs are volume rules. */
const checkVolumeEntry = (c: Checker, v: unknown, at: string): void => {
  if (!isObj(v)) {
    c.add(at, `must be an object, not ${describe(v)}`)
    return
  }
  c.name(v.name, join(at, 'name'))
}

const checkApp = (c: Checker, a: unknown, at: string, volumeNames: Set<string> | undefined, opts: ValidateOptions): void => {
  if (!isObj(a)) {
    c.add(at, `must be an object, not ${describe(a)}`)
    return
  }
  c.fields(a, at, APP_FIELDS)
  c.name(a.name, join(at, 'name'))
  if (a.type !== undefined) {
    if (a.type !== 'init' && a.type !== 'regular' && a.type !== 'ephemeral') {
      c.add(join(at, 'type'), `must be "init", "regular" or "ephemeral", not ${describe(a.type)}`)
    } else if (a.type === 'ephemeral' && !opts.allowEphemeral) {
      c.add(join(at, 'type'), 'ephemeral apps are only added to a running mutable pod, with "podctl app add --ephemeral"')
    }
  }
  const exec = a.exec
  if (a.image !== undefined && c.string(a.image, join(at, 'image'), { nonEmpty: true }) && !/^[^\s]{1,255}$/.test(a.image)) {
    c.add(join(at, 'image'), `${JSON.stringify(a.image)} is not an image name (NAME[:TAG]) or digest (sha256:…)`)
  }
  if (a.entrypoint !== undefined) {
    if (a.image === undefined) c.add(join(at, 'entrypoint'), 'is for an app with an "image": it replaces the image\'s Entrypoint')
    else if (!Array.isArray(a.entrypoint) || a.entrypoint.length === 0) c.add(join(at, 'entrypoint'), `must be a non-empty array of strings, not ${describe(a.entrypoint)}`)
    else a.entrypoint.forEach((arg: unknown, i) => c.string(arg, join(join(at, 'entrypoint'), i)))
  }
  if (exec === undefined && a.image !== undefined) {
    // The image's Entrypoint and Cmd are the defaults.
  } else if (!Array.isArray(exec) || exec.length === 0) {
    c.add(join(at, 'exec'), `must be a non-empty array of strings, not ${Array.isArray(exec) ? 'an empty array' : describe(exec)}`)
  } else {
    exec.forEach((arg, i) => c.string(arg, join(join(at, 'exec'), i)))
    const cmd = exec[0]
    // An image app's `exec` is its image's Cmd: with an Entrypoint, arguments to it, not a program (CONTRACT §15).
    if (a.image === undefined && typeof cmd === 'string' && !cmd.includes('\0')) {
      if (cmd === '') c.add(join(join(at, 'exec'), 0), 'must name a program')
      else if (!cmd.startsWith('/') && cmd.includes('/')) {
        c.add(join(join(at, 'exec'), 0), `${JSON.stringify(cmd)} must be an absolute path or a name to look up on PATH`)
      }
    }
  }
  if (a.env !== undefined) {
    c.stringMap(a.env, join(at, 'env'), (k, kat) => {
      if (!ENV_NAME_RE.test(k)) c.add(kat, 'is not a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)')
    })
  }
  if (a.workingDirectory !== undefined) c.absPath(a.workingDirectory, join(at, 'workingDirectory'))
  for (const key of ['user', 'group'] as const) {
    const v = a[key]
    if (v !== undefined && c.string(v, join(at, key)) && !ID_NAME_RE.test(v)) {
      c.add(join(at, key), `${JSON.stringify(v)} is not a ${key} name or number (letters, digits, ".", "_", "-"; at most 32)`)
    }
  }
  if (a.stopSignal !== undefined && c.string(a.stopSignal, join(at, 'stopSignal')) && stopSignalName(a.stopSignal) === undefined) {
    c.add(join(at, 'stopSignal'), `${JSON.stringify(a.stopSignal)} is not a signal name such as "SIGTERM", "QUIT" or "9"`)
  }
  if (a.stdin !== undefined) c.bool(a.stdin, join(at, 'stdin'))
  if (a.tty !== undefined) c.bool(a.tty, join(at, 'tty'))
  if (a.capabilities !== undefined) checkCapabilities(c, a.capabilities, join(at, 'capabilities'))
  if (a.readOnlyRootFilesystem !== undefined) c.bool(a.readOnlyRootFilesystem, join(at, 'readOnlyRootFilesystem'))
  if (a.privileged !== undefined) c.bool(a.privileged, join(at, 'privileged'))
  if (a.seccomp !== undefined && c.string(a.seccomp, join(at, 'seccomp'), { nonEmpty: true })) {
    if (a.seccomp !== 'default' && a.seccomp !== 'unconfined') c.absPath(a.seccomp, join(at, 'seccomp'))
  }
  if (a.resources !== undefined) checkResources(c, a.resources, join(at, 'resources'))
  if (a.mounts !== undefined) {
    if (!Array.isArray(a.mounts)) {
      c.add(join(at, 'mounts'), `must be an array, not ${describe(a.mounts)}`)
      return
    }
    const paths = new Map<string, string>()
    a.mounts.forEach((m: unknown, i) => {
      const mat = join(join(at, 'mounts'), i)
      if (!isObj(m)) {
        c.add(mat, `must be an object, not ${describe(m)}`)
        return
      }
      c.fields(m, mat, MOUNT_FIELDS)
      if (c.name(m.volume, join(mat, 'volume')) && volumeNames && !volumeNames.has(m.volume)) {
        c.add(join(mat, 'volume'), `names no volume of the pod: ${JSON.stringify(m.volume)} is not in "volumes"`)
      }
      if (c.absPath(m.path, join(mat, 'path'))) {
        const norm = path.posix.normalize(m.path).replace(/(.)\/+$/, '$1')
        if (norm === '/') c.add(join(mat, 'path'), 'cannot be "/", the app root itself')
        const other = paths.get(norm)
        if (other) c.add(join(mat, 'path'), `${JSON.stringify(m.path)} is already the mount path of ${other}`)
        else paths.set(norm, mat)
      }
      if (m.readOnly !== undefined) c.bool(m.readOnly, join(mat, 'readOnly'))
    })
  }
}

/** Why a pod of host processes cannot have a network of its own. */
const HOST_NETWORK = "host processes have the host's network"
/** The fields that only a pod with a network of its own can honour (CONTRACT §14). */
const OWN_NETWORK_FIELDS = ['ports', 'dns', 'dnsSearch', 'dnsOptions', 'addHosts'] as const
const PORT_FIELDS = ['hostPort', 'containerPort', 'protocol', 'hostIP'] as const

/** The manifest's `ports`: {hostPort, containerPort, protocol, hostIP} entries (lib/pod/network-rules.ts), no host port twice. */
const checkPorts = (c: Checker, v: unknown, at: string): void => {
  if (!Array.isArray(v)) return c.add(at, `must be an array of {"hostPort", "containerPort", "protocol", "hostIP"}, not ${describe(v)}`)
  const seen: PublishedPort[] = []
  v.forEach((p: unknown, i) => {
    const pat = join(at, i)
    if (!isObj(p)) return c.add(pat, `must be an object, not ${describe(p)}`)
    c.fields(p, pat, PORT_FIELDS)
    if (!isPort(p.hostPort)) c.add(join(pat, 'hostPort'), `must be a port, 1 to 65535, not ${describe(p.hostPort)}`)
    if (!isPort(p.containerPort)) c.add(join(pat, 'containerPort'), `must be a port, 1 to 65535, not ${describe(p.containerPort)}`)
    const protocolOk = p.protocol === undefined || p.protocol === 'tcp' || p.protocol === 'udp'
    if (!protocolOk) c.add(join(pat, 'protocol'), `must be "tcp" or "udp", not ${describe(p.protocol)}`)
    const hostIPOk = p.hostIP === undefined || (typeof p.hostIP === 'string' && (p.hostIP === '' || isIpAddress(p.hostIP)))
    if (!hostIPOk) c.add(join(pat, 'hostIP'), `must be an IP address of the host, or "" for all, not ${describe(p.hostIP)}`)
    if (!isPort(p.hostPort) || !isPort(p.containerPort) || !protocolOk || !hostIPOk) return
    const m = normalizePort(p as { hostPort: number; containerPort: number; protocol?: Protocol; hostIP?: string })
    if (seen.some((s) => clashes(s, m))) c.add(join(pat, 'hostPort'), `host port ${describeHostPort(m)} is published twice`)
    seen.push(m)
  })
}

/** A list of strings, each of which `problem` finds nothing wrong with. */
const checkList = (c: Checker, v: unknown, at: string, what: string, problem: (s: string) => string | undefined): void => {
  if (!Array.isArray(v)) return c.add(at, `must be an array of ${what}, not ${describe(v)}`)
  v.forEach((s: unknown, i) => {
    if (!c.string(s, join(at, i))) return
    const bad = problem(s)
    if (bad !== undefined) c.add(join(at, i), bad)
  })
}

/**
 * The network fields (CONTRACT §14): `network` (a mode or a network),
 * `networks` (several networks, in its place), and what needs a network
 * of the pod's own: `ports`, `dns`, `dnsSearch`, `dnsOptions`, `addHosts`.
 * Whether a named network exists is the runtime's question, at prepare.
 */
const checkNetworkFields = (c: Checker, value: Obj): void => {
  const isolated = value.isolation === 'namespaces' || (value.isolation === undefined && Array.isArray(value.apps) && value.apps.some((a: unknown) => isObj(a) && a.image !== undefined))
  const networkOk = value.network === undefined || (typeof value.network === 'string' && NETWORK_NAME_RE.test(value.network))
  if (!networkOk) c.add('network', `must be "host", "none", "bridge" or the name of a network, not ${describe(value.network)}`)
  else if (value.network !== undefined && value.network !== 'host' && !isolated) {
    // Only a pod with its own namespaces can have its own network.
    c.add('network', `${JSON.stringify(value.network)} needs "isolation": "namespaces" (${HOST_NETWORK})`)
  }
  if (value.networks !== undefined) {
    if (value.network !== undefined) c.add('networks', 'give "network" or "networks", not both')
    if (!Array.isArray(value.networks) || value.networks.length === 0) {
      c.add('networks', `must be a non-empty array of network names ("bridge", or a network's), not ${Array.isArray(value.networks) ? 'an empty array' : describe(value.networks)}`)
    } else {
      const seen = new Set<string>()
      value.networks.forEach((n: unknown, i) => {
        const at = join('networks', i)
        if (typeof n !== 'string' || !NETWORK_NAME_RE.test(n)) c.add(at, `must be "bridge" or the name of a network, not ${describe(n)}`)
        else if (n === 'host' || n === 'none') c.add(at, `"${n}" is not a network to join beside others: give "network": "${n}" alone`)
        else if (seen.has(n)) c.add(at, `${JSON.stringify(n)} is named twice`)
        if (typeof n === 'string') seen.add(n)
      })
      if (!isolated) c.add('networks', `needs "isolation": "namespaces" (${HOST_NETWORK})`)
    }
  }
  if (value.ports !== undefined) checkPorts(c, value.ports, 'ports')
  if (value.dns !== undefined) checkList(c, value.dns, 'dns', 'IP addresses', (s) => (isIpAddress(s) ? undefined : `${JSON.stringify(s)} is not an IP address`))
  if (value.dnsSearch !== undefined) {
    checkList(c, value.dnsSearch, 'dnsSearch', 'domains', (s) => (isSearchDomain(s) ? undefined : `${JSON.stringify(s)} is not a domain (letters, digits and "-" in labels joined by "."; "." for none)`))
  }
  if (value.dnsOptions !== undefined) {
    checkList(c, value.dnsOptions, 'dnsOptions', 'resolver options', (s) => (isDnsOption(s) ? undefined : `${JSON.stringify(s)} is not a resolver option (one word such as "ndots:2" or "edns0", without "#" or ";")`))
  }
  if (value.addHosts !== undefined) checkList(c, value.addHosts, 'addHosts', '"NAME:IP" entries', (s) => {
    const e = parseAddHost(s)
    return 'problem' in e ? e.problem : undefined
  })
  // A pod of host processes is told so by containerOnlyProblems; an isolated one on the host's network or none here.
  const own = value.networks !== undefined ? undefined : networkOk && typeof value.network === 'string' && (value.network === 'host' || value.network === 'none') ? value.network : undefined
  if (isolated && own !== undefined) {
    for (const f of OWN_NETWORK_FIELDS) if (value[f] !== undefined) c.add(f, `needs a network of the pod's own ("bridge" or a network's name), not "network": "${own}"`)
  }
}

/**
 * What only an isolated pod can do (CONTRACT §12: resources, capabilities,
 * seccomp, a private user namespace) asked of a pod of host processes:
 * each such field is named, with the isolation it needs.
 */
/** A terminal is the OCI runtime's console: podctl hands it to runc, which has none to give a host process. */
const TTY_NEEDS = 'needs "isolation": "namespaces" (an app\'s terminal is the OCI runtime\'s console)'

const containerOnlyProblems = (c: Checker, value: Obj): void => {
  const needs = 'needs "isolation": "namespaces" (host processes have no cgroups, capabilities or seccomp of their own)'
  if (value.resources !== undefined) c.add('resources', needs)
  if (value.userns === 'private') c.add('userns', needs)
  if (value.hostname !== undefined) c.add('hostname', 'needs "isolation": "namespaces" (host processes have the host\'s hostname)')
  for (const f of OWN_NETWORK_FIELDS) if (value[f] !== undefined) c.add(f, `needs "isolation": "namespaces" (${HOST_NETWORK})`)
  if (!Array.isArray(value.apps)) return
  value.apps.forEach((a: unknown, i) => {
    if (!isObj(a)) return
    for (const f of CONTAINER_APP_FIELDS) if (a[f] !== undefined) c.add(join(join('apps', i), f), f === 'tty' ? TTY_NEEDS : needs)
  })
}

/**
 * Validates a parsed manifest. Returns every problem found; an empty list
 * means `value` is a PodManifest.
 */
export const manifestProblems = (value: unknown, opts: ValidateOptions = {}): ManifestProblem[] => {
  const c = new Checker()
  if (!isObj(value)) {
    c.add('', `a manifest must be a JSON object, not ${describe(value)}`)
    return c.problems
  }
  c.fields(value, '', TOP_FIELDS)
  if (value.apiVersion !== API_VERSION) c.add('apiVersion', `must be "${API_VERSION}", not ${describe(value.apiVersion)}`)
  if (value.name !== undefined) c.name(value.name, 'name')
  if (value.labels !== undefined) c.stringMap(value.labels, 'labels')
  if (value.annotations !== undefined) c.stringMap(value.annotations, 'annotations')
  if (value.mutable !== undefined) c.bool(value.mutable, 'mutable')
  if (value.isolation !== undefined && !ISOLATIONS.includes(value.isolation as Isolation)) {
    c.add('isolation', `must be "host" or "namespaces", not ${describe(value.isolation)}`)
  }
  checkNetworkFields(c, value)

  if (value.userns !== undefined && value.userns !== 'host' && value.userns !== 'private') {
    c.add('userns', `must be "host" or "private", not ${describe(value.userns)}`)
  }
  if (value.resources !== undefined) checkResources(c, value.resources, 'resources')
  if (value.hostname !== undefined && c.string(value.hostname, 'hostname') && !HOSTNAME_RE.test(value.hostname)) {
    c.add('hostname', `${JSON.stringify(value.hostname)} is not a hostname (at most 64 characters: letters, digits and "-" in labels joined by ".", no label starting or ending with "-")`)
  }
  if (value.autoRemove !== undefined) c.bool(value.autoRemove, 'autoRemove')
  if (value.httpProxy !== undefined) c.bool(value.httpProxy, 'httpProxy')
  const imageApps = Array.isArray(value.apps) && value.apps.some((a: unknown) => isObj(a) && a.image !== undefined)
  if (value.isolation === 'host' && imageApps) c.add('isolation', '"host" cannot run an app from an image: an image app has a root of its own ("isolation": "namespaces", implied when "isolation" is left out)')
  else if (value.isolation !== 'namespaces' && !imageApps) containerOnlyProblems(c, value)

  let volumeNames: Set<string> | undefined = new Set()
  if (value.volumes !== undefined) {
    if (!Array.isArray(value.volumes)) {
      c.add('volumes', `must be an array, not ${describe(value.volumes)}`)
      volumeNames = undefined
    } else {
      value.volumes.forEach((v: unknown, i) => {
        const at = join('volumes', i)
        checkVolumeEntry(c, v, at)
        if (isObj(v) && typeof v.name === 'string') {
          if (volumeNames!.has(v.name)) c.add(join(at, 'name'), `${JSON.stringify(v.name)} is the name of another volume`)
          volumeNames!.add(v.name)
        }
      })
    }
  }

  const apps = value.apps
  if (!Array.isArray(apps)) {
    c.add('apps', `must be an array, not ${describe(apps)}`)
  } else {
    if (apps.length === 0 && value.mutable !== true) c.add('apps', 'must have at least one app (only a mutable pod may start with none)')
    const names = new Set<string>()
    apps.forEach((a: unknown, i) => {
      const at = join('apps', i)
      checkApp(c, a, at, volumeNames, opts)
      if (isObj(a) && typeof a.name === 'string') {
        if (names.has(a.name)) c.add(join(at, 'name'), `${JSON.stringify(a.name)} is the name of another app`)
        names.add(a.name)
      }
    })
  }
  const wellFormed = c.problems.length === 0
  for (const rule of opts.rules ?? []) c.problems.push(...rule(value as unknown as PodManifest, wellFormed))
  return c.problems
}

/** Formats problems as one message: "apps[0].name: ...; volumes: ...". */
export const formatProblems = (problems: ManifestProblem[]): string =>
  problems.map((p) => `${p.path}: ${p.problem}`).join('; ')

/** Validates and returns the manifest, or throws EUSAGE naming every bad field. */
export const validateManifest = (value: unknown, opts: ValidateOptions = {}): PodManifest => {
  const problems = manifestProblems(value, opts)
  if (problems.length > 0) {
    throw new PodctlError('EUSAGE', `invalid manifest: ${formatProblems(problems)}`, 'see Documentation/manifest.md for the format')
  }
  return value as PodManifest
}

/** Manifest text (JSON) as a value, not yet validated; EUSAGE if it is too large or not JSON. */
export const parseManifestJson = (text: string): unknown => {
  if (Buffer.byteLength(text) > MAX_MANIFEST_BYTES) {
    throw new PodctlError('EUSAGE', `invalid manifest: larger than ${MAX_MANIFEST_BYTES} bytes`)
  }
  try {
    return JSON.parse(text)
  } catch (er) {
    throw new PodctlError('EUSAGE', `invalid manifest: not valid JSON: ${oneLine((er as Error).message)}`, 'see Documentation/manifest.md for the format')
  }
}

/** Parses manifest text (JSON) and validates it. */
export const parseManifest = (text: string, opts: ValidateOptions = {}): PodManifest => validateManifest(parseManifestJson(text), opts)

/** The isolation of a pod: "host" unless the manifest says otherwise, or an app runs from an image (CONTRACT §13: implied). */
export const isolationOf = (m: Pick<PodManifest, 'isolation'> & { apps?: readonly Pick<App, 'image'>[] }): Isolation =>
  m.isolation ?? (m.apps?.some((a) => a.image !== undefined) ? 'namespaces' : 'host')
/**
 * The network of a pod as its record shows it: what the manifest says,
 * else "host" for host processes and the default network for an isolated
 * pod (CONTRACT §14); a pod of several networks shows the first.
 */
export const networkOf = (m: Pick<PodManifest, 'network' | 'networks' | 'isolation'> & { apps?: readonly Pick<App, 'image'>[] }): Network =>
  m.network ?? m.networks?.[0] ?? (isolationOf(m) === 'namespaces' ? DEFAULT_NETWORK : 'host')

/** The networks an isolated pod joins (none for "host" and "none"). */
export const podNetworks = (m: Pick<PodManifest, 'network' | 'networks' | 'isolation'> & { apps?: readonly Pick<App, 'image'>[] }): string[] => {
  if (m.networks !== undefined) return m.networks
  const n = networkOf(m)
  return n === 'host' || n === 'none' ? [] : [n]
}
/** The user namespace of a pod: "host" unless the manifest says otherwise. */
export const usernsOf = (m: Pick<PodManifest, 'userns'>): UserNamespace => m.userns ?? 'host'

/** The type an app runs as: "regular" when the manifest does not say. */
export const appType = (a: App): AppType => a.type ?? 'regular'

/** Bit mask of app types, for visitApps (after Kubernetes' VisitContainers). */
export const AppTypeMask = { init: 1, regular: 2, ephemeral: 4, all: 7 } as const

/** Calls `fn` for every app whose type is in `mask`, in manifest order; stops when fn returns false. */
export const visitApps = (m: PodManifest, mask: number, fn: (app: App, index: number) => boolean | void): boolean => {
  for (const [i, a] of m.apps.entries()) {
    if ((AppTypeMask[appType(a)] & mask) === 0) continue
    if (fn(a, i) === false) return false
  }
  return true
}
