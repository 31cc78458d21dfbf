/**
 * The default seccomp profile of isolated pods (CONTRACT §12): the
 * containers-common profile that podman uses, read from the distribution's
 * package and turned from its own format (rules that depend on the
 * capabilities and the architecture) into the OCI runtime spec's, for one
 * app's capabilities. On top of it podctl denies what lets a root app
 * reach outside its pod (mounts, joining or making namespaces other than a
 * user namespace, the kernel keyring, module loading) unless the app was
 * given CAP_SYS_ADMIN, as Docker's profile does; the package's older
 * versions allow some of these and leave them to the capabilities alone.
 */
import fs from 'node:fs'
import { PodctlError } from '../errors.js'
import { readUserFile } from '../fs/read.js'
import type { Seccomp, SeccompArg, SeccompSyscall } from './oci-spec.js'

/** Where containers-common puts its profile (Debian: golang-github-containers-common; Fedora: containers-common). */
export const CONTAINERS_COMMON_PROFILE = '/usr/share/containers/seccomp.json'
/** A profile is a few tens of KiB; a bound on what is read as one. */
const MAX_PROFILE_BYTES = 1024 * 1024

interface CommonRule {
  names?: string[]
  name?: string
  action: string
  errnoRet?: number
  args?: SeccompArg[] | null
  includes?: { caps?: string[]; arches?: string[]; minKernel?: string }
  excludes?: { caps?: string[]; arches?: string[] }
}

interface CommonProfile {
  defaultAction: string
  defaultErrnoRet?: number
  archMap?: { architecture: string; subArchitectures?: string[] }[]
  syscalls?: CommonRule[]
}

/** Node's names of architectures, as Go (and so the profile's `arches`) names them. */
const GO_ARCH: Record<string, string> = { x64: 'amd64', arm64: 'arm64', arm: 'arm', ia32: '386', ppc64: 'ppc64le', s390x: 's390x', riscv64: 'riscv64', mips64el: 'mips64le' }
/** The profile's `archMap` names the native architecture by libseccomp's name. */
const SCMP_ARCH: Record<string, string> = { x64: 'SCMP_ARCH_X86_64', arm64: 'SCMP_ARCH_AARCH64', arm: 'SCMP_ARCH_ARM', ia32: 'SCMP_ARCH_X86', ppc64: 'SCMP_ARCH_PPC64LE', s390x: 'SCMP_ARCH_S390X', riscv64: 'SCMP_ARCH_RISCV64' }
/** Go's "386" is "x86" in the profile's lists. */
const archAliases = (goArch: string): string[] => (goArch === '386' ? ['386', 'x86'] : goArch === 'amd64' ? ['amd64', 'x86_64'] : [goArch])

const EPERM = 1
const ENOSYS = 38
/** The namespace flags of clone(2) and unshare(2), CLONE_NEWUSER aside. */
const NEW_NAMESPACES_BUT_USER = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x20000000 | 0x40000000 | 0x00000080
const CLONE_NEWUSER = 0x10000000

/**
 * What only CAP_SYS_ADMIN may call: mounting and moving mounts (a root app
 * could otherwise remount its read-only root or uncover the host's /proc),
 * joining namespaces, and the kernel keyring, which is not namespaced.
 */
const SYS_ADMIN_ONLY = [
  'mount',
  'umount',
  'umount2',
  'pivot_root',
  'setns',
  'fsopen',
  'fsconfig',
  'fsmount',
  'fspick',
  'move_mount',
  'open_tree',
  'mount_setattr',
  'keyctl',
  'add_key',
  'request_key',
  'bpf',
  'perf_event_open',
  'lookup_dcookie',
  'fanotify_init',
  'quotactl',
  'quotactl_fd',
  'syslog',
  'name_to_handle_at',
]
/** Never, whatever the capabilities: the kernel itself. */
const NEVER = ['kexec_load', 'kexec_file_load', 'init_module', 'finit_module', 'delete_module', 'reboot', 'open_by_handle_at']

const kernelAtLeast = (min: string, release: string): boolean => {
  const [a, b] = min.split('.').map(Number)
  const [x, y] = release.split('.').map((n) => parseInt(n, 10))
  return x! > a! || (x === a && y! >= (b ?? 0))
}

/**
 * The OCI profile for an app holding `caps` (names with `CAP_`), from a
 * containers-common profile: a rule applies when the app holds every
 * capability it includes and none it excludes, on an architecture it
 * names; podctl's own rules (SYS_ADMIN_ONLY, NEVER, namespace flags) are
 * then laid over it.
 */
export const ociSeccomp = (profile: CommonProfile, caps: readonly string[], arch: string = process.arch, kernel: string = osRelease()): Seccomp => {
  const goArch = GO_ARCH[arch] ?? arch
  const arches = archAliases(goArch)
  const held = new Set(caps)
  const sysAdmin = held.has('CAP_SYS_ADMIN')
  const native = SCMP_ARCH[arch]
  const archEntry = profile.archMap?.find((a) => a.architecture === native)
  const withheld = new Set([...NEVER, ...(sysAdmin ? [] : SYS_ADMIN_ONLY), 'unshare', 'clone', 'clone3'])
  const syscalls: SeccompSyscall[] = []
  for (const r of profile.syscalls ?? []) {
    const inc = r.includes ?? {}
    const exc = r.excludes ?? {}
    if (inc.caps?.some((c) => !held.has(c))) continue
    if (inc.arches && !inc.arches.some((a) => arches.includes(a))) continue
    if (inc.minKernel && !kernelAtLeast(inc.minKernel, kernel)) continue
    if (exc.caps?.some((c) => held.has(c))) continue
    if (exc.arches?.some((a) => arches.includes(a))) continue
    const names = (r.names ?? (r.name ? [r.name] : [])).filter((n) => !(r.action === 'SCMP_ACT_ALLOW' && withheld.has(n)))
    if (names.length === 0) continue
    syscalls.push({
      names,
      action: r.action,
      ...(r.errnoRet !== undefined ? { errnoRet: r.errnoRet } : {}),
      ...(r.args && r.args.length > 0 ? { args: r.args.map((a) => ({ index: a.index, value: a.value, valueTwo: a.valueTwo ?? 0, op: a.op })) } : {}),
    })
  }
  // A rule the profile denies outright stays; the same name allowed by podctl's rules below would clash in libseccomp.
  const denied = new Set(syscalls.filter((s) => s.action !== 'SCMP_ACT_ALLOW' && !s.args).flatMap((s) => s.names))
  const allow = (names: string[], args?: SeccompArg[]): void => {
    const left = names.filter((n) => !denied.has(n))
    if (left.length > 0) syscalls.push({ names: left, action: 'SCMP_ACT_ALLOW', ...(args ? { args } : {}) })
  }
  if (sysAdmin) {
    allow(['unshare', 'clone', 'clone3'])
  } else {
    // A user namespace alone may be made, as an unprivileged process may on the host; no other.
    const flags = (name: string, index: number): void => {
      allow([name], [{ index, value: NEW_NAMESPACES_BUT_USER, valueTwo: 0, op: 'SCMP_CMP_MASKED_EQ' }])
      // Any one of the other namespace flags: EPERM, as the kernel says to a process without the capability.
      for (let bit = 1; bit !== 0 && bit <= NEW_NAMESPACES_BUT_USER; bit <<= 1) {
        if ((NEW_NAMESPACES_BUT_USER & bit) !== 0) syscalls.push({ names: [name], action: 'SCMP_ACT_ERRNO', errnoRet: EPERM, args: [{ index, value: bit, valueTwo: bit, op: 'SCMP_CMP_MASKED_EQ' }] })
      }
    }
    flags('unshare', 0)
    flags('clone', cloneFlagsArg(arch))
    // clone3 passes its flags in memory a filter cannot read: ENOSYS makes the C library fall back to clone.
    syscalls.push({ names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: ENOSYS })
  }
  // What is withheld fails as the kernel fails a process without the capability (EPERM), not as an unknown call.
  const withheldNow = [...NEVER, ...(sysAdmin ? [] : SYS_ADMIN_ONLY)].filter((n) => !denied.has(n))
  if (withheldNow.length > 0) syscalls.push({ names: withheldNow, action: 'SCMP_ACT_ERRNO', errnoRet: EPERM })
  return {
    defaultAction: profile.defaultAction,
    defaultErrnoRet: profile.defaultErrnoRet ?? EPERM,
    ...(native ? { architectures: [native, ...(archEntry?.subArchitectures ?? [])] } : {}),
    syscalls,
  }
}

/** On s390 the flags of clone(2) are its second argument; elsewhere its first. */
const cloneFlagsArg = (arch: string): number => (arch === 's390x' ? 1 : 0)

const osRelease = (): string => {
  try {
    return fs.readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim()
  } catch {
    return '0.0'
  }
}

let commonProfile: CommonProfile | undefined

/**
 * containers-common's profile, read once; EFAILED naming the package when
 * it is not installed, since an isolated pod without its default profile
 * would not be the boundary CONTRACT §12 promises.
 */
export const containersCommonProfile = (file = CONTAINERS_COMMON_PROFILE): CommonProfile => {
  if (commonProfile && file === CONTAINERS_COMMON_PROFILE) return commonProfile
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (er) {
    throw new PodctlError(
      'EFAILED',
      `the default seccomp profile of isolated pods, ${file}, cannot be read (${(er as NodeJS.ErrnoException).code ?? (er as Error).message})`,
      'install it: apt-get install golang-github-containers-common (Debian, Ubuntu) or dnf install containers-common (Fedora); or give the app "seccomp": "unconfined"',
    )
  }
  const p = JSON.parse(text) as CommonProfile
  if (file === CONTAINERS_COMMON_PROFILE) commonProfile = p
  return p
}

/** The actions and argument comparisons of the OCI runtime spec (config-linux.md, "Seccomp"). */
const OCI_ACTIONS: readonly string[] = ['SCMP_ACT_KILL', 'SCMP_ACT_KILL_PROCESS', 'SCMP_ACT_KILL_THREAD', 'SCMP_ACT_TRAP', 'SCMP_ACT_ERRNO', 'SCMP_ACT_TRACE', 'SCMP_ACT_ALLOW', 'SCMP_ACT_LOG', 'SCMP_ACT_NOTIFY']
const OCI_OPS: readonly string[] = ['SCMP_CMP_NE', 'SCMP_CMP_LT', 'SCMP_CMP_LE', 'SCMP_CMP_EQ', 'SCMP_CMP_GE', 'SCMP_CMP_GT', 'SCMP_CMP_MASKED_EQ']

/**
 * A user's own OCI seccomp profile (`"seccomp": PATH`), read and checked
 * at prepare time; EUSAGE naming the file when it is not one.
 */
export const userSeccomp = (file: string): Seccomp => {
  const bad = (why: string): PodctlError => new PodctlError('EUSAGE', `seccomp profile ${file}: ${why}`, 'give an OCI seccomp profile (the "linux.seccomp" object of an OCI config), "default" or "unconfined"')
  let value: unknown
  try {
    value = JSON.parse(readUserFile(file, MAX_PROFILE_BYTES, 'seccomp profile').toString('utf8'))
  } catch (er) {
    if (er instanceof PodctlError) throw er
    throw bad(`not JSON: ${(er as Error).message}`)
  }
  const v = value as Partial<Seccomp>
  if (value === null || typeof value !== 'object' || typeof v.defaultAction !== 'string' || !v.defaultAction.startsWith('SCMP_ACT_')) {
    throw bad('has no "defaultAction" such as "SCMP_ACT_ERRNO"')
  }
  if (!OCI_ACTIONS.includes(v.defaultAction)) throw bad(`"defaultAction": ${JSON.stringify(v.defaultAction)} is not one of ${OCI_ACTIONS.join(', ')}`)
  if (v.syscalls !== undefined && !Array.isArray(v.syscalls)) throw bad('"syscalls" is not an array')
  // What the runtime would refuse only when the app starts.
  for (const [i, r] of (v.syscalls ?? []).entries()) {
    const at = `"syscalls"[${i}]`
    if (r === null || typeof r !== 'object') throw bad(`${at} is not an object`)
    if (!Array.isArray(r.names) || r.names.length === 0 || r.names.some((n) => typeof n !== 'string')) throw bad(`${at}: "names" is not a list of system call names`)
    if (typeof r.action !== 'string' || !OCI_ACTIONS.includes(r.action)) throw bad(`${at}: "action": ${JSON.stringify(r.action)} is not one of ${OCI_ACTIONS.join(', ')}`)
    if (r.args !== undefined && r.args !== null && (!Array.isArray(r.args) || r.args.some((a) => a === null || typeof a !== 'object' || !OCI_OPS.includes(a.op)))) {
      throw bad(`${at}: "args" is not a list of conditions with "op" one of ${OCI_OPS.join(', ')}`)
    }
  }
  return { ...(value as Seccomp), syscalls: v.syscalls ?? [] }
}
