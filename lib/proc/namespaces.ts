/**
 * Pods with their own Linux namespaces (CONTRACT §9), in the pieces that
 * know nothing of pods: what the machine must offer, the mount table of a
 * pod's root, the argv of the process that holds the namespaces and of an
 * app that joins them. Everything runs util-linux programs (unshare,
 * nsenter, mount, pivot_root, umount) with argument arrays; the two small
 * `sh` scripts here are constant text and take every value as an argument,
 * never spliced into the script. Documentation/devel/isolation.md says why
 * this design and what it costs.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

/** The programs a pod with namespaces needs; `ip` only for network "none" (loopback up), `hostname` only without root. */
const PROGRAMS = ['unshare', 'nsenter', 'mount', 'umount', 'pivot_root'] as const

/** Where a program is: the first executable of that name on PATH (plus the sbin dirs, which a user's PATH may lack). */
export const findProgram = (name: string, env: NodeJS.ProcessEnv = process.env): string | undefined => {
  const dirs = [...(env.PATH ?? '').split(':').filter((d) => d.startsWith('/')), '/usr/sbin', '/sbin', '/usr/bin', '/bin']
  for (const d of dirs) {
    const p = path.join(d, name)
    try {
      fs.accessSync(p, fs.constants.X_OK)
      if (fs.statSync(p).isFile()) return p
    } catch {
      // not here
    }
  }
  return undefined
}

export interface NamespaceSupport {
  /** Run as root in the host's user namespace, or in a user namespace of its own. */
  userns: boolean
  /** The programs, by name, found where they are. */
  programs: Record<string, string>
}

const isRoot = (): boolean => process.getuid?.() === 0

/** Reads a small /proc/sys file, trimmed; undefined when absent. */
const sysctl = (p: string): string | undefined => {
  try {
    return fs.readFileSync(p, 'utf8').trim()
  } catch {
    return undefined
  }
}

let cached: Map<string, NamespaceSupport | string[]> | undefined

/**
 * What this machine offers a pod with namespaces, or the list of what it
 * lacks (each entry a sentence part naming the missing piece). Without
 * root, user namespaces must be allowed, which is tried for real: sysctls,
 * AppArmor and seccomp policies all can forbid them.
 */
export const namespaceSupport = (network: 'host' | 'none'): NamespaceSupport | string[] => {
  const key = network
  const hit = cached?.get(key)
  if (hit) return hit
  const missing: string[] = []
  const programs: Record<string, string> = {}
  const root = isRoot()
  const needed: string[] = [...PROGRAMS, ...(network === 'none' ? ['ip'] : []), ...(root ? [] : ['hostname'])]
  for (const name of needed) {
    const p = findProgram(name)
    if (p === undefined) missing.push(`the program ${name} (${name === 'ip' ? 'iproute2' : name === 'hostname' ? 'hostname' : 'util-linux'})`)
    else programs[name] = p
  }
  if (!root && programs.unshare !== undefined) {
    const reason = userNamespaceProblem(programs.unshare)
    if (reason !== undefined) missing.push(`root or unprivileged user namespaces (${reason})`)
  }
  const out = missing.length > 0 ? missing : { userns: !root, programs }
  ;(cached ??= new Map()).set(key, out)
  return out
}

/** Why this user cannot make a user namespace with a pid and mount namespace in it, or undefined if it can. */
const userNamespaceProblem = (unshare: string): string | undefined => {
  if (sysctl('/proc/sys/kernel/unprivileged_userns_clone') === '0') return 'kernel.unprivileged_userns_clone is 0'
  if (sysctl('/proc/sys/user/max_user_namespaces') === '0') return 'user.max_user_namespaces is 0'
  const r = spawnSync(unshare, ['--user', '--map-root-user', '--pid', '--fork', '--mount', '--', 'true'], { encoding: 'utf8', timeout: 10_000 })
  if (r.status === 0) return undefined
  const said = (r.stderr ?? '').trim().split('\n')[0]
  return said ? `unshare --user says: ${said}` : `unshare --user exited ${r.status ?? r.signal}`
}

/** One line of /proc/self/mountinfo, the parts used here. */
export interface MountInfo {
  mountPoint: string
  /** Per-mount options (rw/ro, nosuid, nodev, noexec, atime). */
  options: string[]
}

/** mountinfo escapes space, tab, newline and backslash as octal. */
const unescape = (s: string): string => s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)))

/** The mounts this process sees, in the kernel's order (parents before what is mounted on them). */
export const readMountInfo = (text = fs.readFileSync('/proc/self/mountinfo', 'utf8')): MountInfo[] =>
  text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const f = l.split(' ')
      return { mountPoint: unescape(f[4] ?? ''), options: (f[5] ?? '').split(',') }
    })

/** fstab fields escape the same characters mountinfo does. */
const fstabField = (s: string): string => s.replace(/[\\ \t\n]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`)

const under = (p: string, dir: string): boolean => p === dir || p.startsWith(dir === '/' ? '/' : `${dir}/`)

/** The per-mount flags a remount must keep: in a user namespace, the kernel refuses to drop them. */
const LOCKED_FLAGS = new Set(['nosuid', 'nodev', 'noexec', 'noatime', 'nodiratime', 'relatime', 'strictatime'])

/** A directory or file mounted into the pod at `target`, writable or not. */
export interface Bind {
  source: string
  target: string
  readOnly: boolean
}

export interface PodMountPlan {
  /** An empty directory on the host where the pod's root is assembled (it becomes `/`). */
  root: string
  binds: readonly Bind[]
}

/** The flags of the mount that `p` lies in (the longest mount point above it). */
const mountOf = (mounts: readonly MountInfo[], p: string): MountInfo | undefined => {
  let best: MountInfo | undefined
  for (const m of mounts) if (under(p, m.mountPoint) && (!best || m.mountPoint.length >= best.mountPoint.length)) best = m
  return best
}

const keptFlags = (m: MountInfo | undefined): string[] => (m?.options ?? []).filter((o) => LOCKED_FLAGS.has(o))

/**
 * The mount table (fstab syntax, for one `mount -a -T`) that makes the
 * pod's root: the host's tree bound recursively and every mount in it
 * made read-only, a new /proc, a private /tmp and /dev/shm, then the
 * binds, read-only ones made so. Remounts name a source no mount has
 * ("podctl-ro"), or `mount -a` would skip them as "already mounted".
 * `canReach` leaves out mounts this user cannot even reach: neither can
 * the pod's apps, and remounting them fails with EACCES.
 */
export const podMountTable = (plan: PodMountPlan, mounts: readonly MountInfo[] = readMountInfo(), canReach: (p: string) => boolean = reachable): string => {
  const R = (p: string): string => (p === '/' ? plan.root : path.join(plan.root, p))
  const lines: string[] = []
  const add = (src: string, target: string, type: string, opts: string[]): void => {
    lines.push(`${fstabField(src)} ${fstabField(target)} ${type} ${opts.join(',')} 0 0`)
  }
  add('/', plan.root, 'none', ['rbind'])
  // The topmost of mounts stacked on one path is the one a remount reaches.
  const seen = new Set<string>()
  for (const m of [...mounts].reverse()) {
    const mp = m.mountPoint
    if (seen.has(mp)) continue
    seen.add(mp)
    // /proc and /tmp get their own; /dev stays writable (its nodes, ptys); the assembly dir is ours.
    if (under(mp, '/proc') || under(mp, '/dev') || under(mp, '/tmp') || under(mp, plan.root)) continue
    if (m.options.includes('ro') || !canReach(mp)) continue
    add('podctl-ro', R(mp), 'none', ['remount', 'bind', 'ro', ...keptFlags(m)])
  }
  add('proc', R('/proc'), 'proc', ['nosuid', 'nodev', 'noexec'])
  add('tmpfs', R('/tmp'), 'tmpfs', ['nosuid', 'nodev', 'mode=1777'])
  add('tmpfs', R('/dev/shm'), 'tmpfs', ['nosuid', 'nodev', 'mode=1777'])
  for (const b of plan.binds) {
    const isDir = fs.statSync(b.source, { throwIfNoEntry: false })?.isDirectory() ?? true
    // A mount point is made only where the pod can write (its /tmp); on the read-only host it must exist.
    add(b.source, R(b.target), 'none', ['bind', ...(isDir && under(b.target, '/tmp') ? ['X-mount.mkdir'] : [])])
    if (b.readOnly) add('podctl-ro', R(b.target), 'none', ['remount', 'bind', 'ro', ...keptFlags(mountOf(mounts, b.source))])
  }
  return `${lines.join('\n')}\n`
}

const reachable = (p: string): boolean => {
  if (isRoot()) return true
  try {
    fs.statSync(p)
    return true
  } catch {
    return false
  }
}

/**
 * Where a bind's target cannot be made: the host's file system is
 * read-only in the pod, so a mount point outside /tmp must exist there
 * already. Undefined when it can.
 */
export const bindTargetProblem = (target: string, sourceIsDir: boolean): string | undefined => {
  if (under(target, '/tmp')) return undefined
  const st = fs.statSync(target, { throwIfNoEntry: false })
  if (st === undefined) return `${target} does not exist on this host; with "isolation": "namespaces" the host's file system is read-only in the pod, so a volume is mounted on an existing ${sourceIsDir ? 'directory' : 'file'} or under /tmp`
  if (st.isDirectory() !== sourceIsDir) return `${target} is ${st.isDirectory() ? 'a directory' : 'not a directory'} on this host, and the volume is ${sourceIsDir ? 'a directory' : 'a file'}`
  return undefined
}

/**
 * The holder: the pod's first process, pid 1 of its pid namespace. It
 * sets the hostname, assembles the root from the mount table, brings up
 * loopback in a network of its own, moves into the new root, says
 * "ready <its host pid>" on stdout, and then only waits for end of file
 * on fd 3, whose other end only the supervisor holds: when the supervisor
 * ends, however it ends, pid 1 exits and the kernel kills every process
 * of the pod. Its `wait` also reaps the pod's orphans (dash waits for any
 * child). Arguments: hostname, mount table file, root dir, network.
 */
const HOLDER = [
  // The host's /proc still: NSpid's first number is this process's pid on the host.
  'while read -r k v; do if [ "$k" = NSpid: ]; then h=${v%%[!0-9]*}; break; fi; done </proc/self/status',
  '{ printf %s "$1" >/proc/sys/kernel/hostname; } 2>/dev/null || hostname "$1" || exit 1',
  'mount -a -T "$2" || exit 1',
  'if [ "$4" = none ]; then ip link set lo up || exit 1; fi',
  'cd "$3" && pivot_root . . && umount -l . && cd / || exit 1',
  'echo "ready $h"',
  '( while read -r _; do :; done ) <&3 >/dev/null 2>&1 &',
  'exec 3<&- </dev/null',
  'wait $!',
].join('\n')

/** What the pod's first process is called in `ps` ($0 of its script). */
export const HOLDER_NAME = 'podctl-pod'

export interface HolderOptions {
  hostname: string
  mountTable: string
  root: string
  network: 'host' | 'none'
  userns: boolean
}

/** The argv of the holder (spawn it with fd 3 a pipe that only the supervisor holds). */
export const holderArgs = (support: NamespaceSupport, o: HolderOptions): [string, string[]] => [
  support.programs.unshare!,
  [
    ...(o.userns ? ['--user', '--map-root-user'] : []),
    '--pid',
    '--fork',
    '--kill-child',
    '--mount',
    '--propagation',
    'private',
    '--uts',
    '--ipc',
    ...(o.network === 'none' ? ['--net'] : []),
    '--',
    '/bin/sh',
    '-c',
    HOLDER,
    HOLDER_NAME,
    o.hostname,
    o.mountTable,
    o.root,
    o.network,
  ],
]

/**
 * An app's wrapper, in every namespace of the pod but its pid namespace
 * (nsenter --no-fork): it goes to the app's working directory and runs
 * the app as its child, which is in the pod's pid namespace. It stays
 * between the supervisor and the app so that a signal to the app's group
 * does not end the wrapper before the app (the app may take its time over
 * SIGTERM): its traps only interrupt the wait, and the app gets default
 * signal handling. It exits with the app's status (128+n for a signal).
 */
const JOIN = [
  'cd "$1" || exit 126',
  'shift',
  "trap : INT TERM HUP QUIT USR1 USR2",
  '"$@" &',
  'p=$!',
  'while :; do wait $p; s=$?; kill -0 $p 2>/dev/null || break; done',
  'exit $s',
].join('\n')

/** What an app's wrapper is called in `ps`. */
export const JOIN_NAME = 'podctl-app'

export interface JoinOptions {
  holderPid: number
  network: 'host' | 'none'
  userns: boolean
  cwd: string
  uid?: number
  gid?: number
}

/** The argv that runs `file args` in the pod whose holder is `holderPid`. */
export const joinArgs = (support: NamespaceSupport, o: JoinOptions, file: string, args: readonly string[]): [string, string[]] => [
  support.programs.nsenter!,
  [
    '--target',
    String(o.holderPid),
    ...(o.userns ? ['--user', '--preserve-credentials'] : []),
    '--mount',
    '--uts',
    '--ipc',
    '--pid',
    ...(o.network === 'none' ? ['--net'] : []),
    '--root',
    '--wd',
    '--no-fork',
    ...(o.uid !== undefined ? ['--setuid', String(o.uid)] : []),
    ...(o.gid !== undefined ? ['--setgid', String(o.gid)] : []),
    '--',
    '/bin/sh',
    '-c',
    JOIN,
    JOIN_NAME,
    o.cwd,
    file,
    ...args,
  ],
]
