// ociSeccomp (lib/runtime/seccomp.ts): containers-common's profile, turned
// into the OCI spec's for one app's capabilities, with podctl's own rules
// over it (CONTRACT §12). The filter is judged as the kernel would run it:
// for a call and its arguments, which rules match and what they say.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { CONTAINERS_COMMON_PROFILE, containersCommonProfile, ociSeccomp, userSeccomp } from '../../lib/runtime/seccomp.js'
import type { Seccomp as OciSeccomp } from '../../lib/runtime/oci-spec.js'

const DEFAULT_CAPS = ['CAP_CHOWN', 'CAP_DAC_OVERRIDE', 'CAP_FOWNER', 'CAP_FSETID', 'CAP_KILL', 'CAP_SETGID', 'CAP_SETUID', 'CAP_SETPCAP', 'CAP_NET_BIND_SERVICE', 'CAP_SYS_CHROOT', 'CAP_SETFCAP']
const EPERM = 1
const ENOSYS = 38

interface Verdict {
  action: string
  errno?: number
}

const holds = (a: { index: number; value: number; valueTwo?: number; op: string }, args: readonly bigint[]): boolean => {
  const x = args[a.index] ?? 0n
  const v = BigInt(a.value)
  const v2 = BigInt(a.valueTwo ?? 0)
  switch (a.op) {
    case 'SCMP_CMP_EQ':
      return x === v
    case 'SCMP_CMP_NE':
      return x !== v
    case 'SCMP_CMP_LT':
      return x < v
    case 'SCMP_CMP_LE':
      return x <= v
    case 'SCMP_CMP_GT':
      return x > v
    case 'SCMP_CMP_GE':
      return x >= v
    case 'SCMP_CMP_MASKED_EQ':
      return (x & v) === v2
    default:
      throw new Error(`unknown op ${a.op}`)
  }
}

/**
 * What the filter does with `name(args)`: a rule with conditions that hold
 * comes before one without (as libseccomp builds its tree), and the
 * profile's default when none names the call. More than one verdict left
 * is a filter that says two things at once: the test fails on it.
 */
const verdicts = (p: OciSeccomp, name: string, args: readonly number[] = []): Verdict[] => {
  const a = args.map(BigInt)
  const named = p.syscalls.filter((r) => r.names.includes(name))
  const conditional = named.filter((r) => r.args && r.args.length > 0 && r.args.every((c) => holds(c, a)))
  const chosen = conditional.length > 0 ? conditional : named.filter((r) => !r.args || r.args.length === 0)
  if (chosen.length === 0) return [{ action: p.defaultAction, ...(p.defaultErrnoRet !== undefined ? { errno: p.defaultErrnoRet } : {}) }]
  const seen = new Map<string, Verdict>()
  for (const r of chosen) {
    const v: Verdict = { action: r.action, ...(r.action === 'SCMP_ACT_ERRNO' ? { errno: r.errnoRet ?? p.defaultErrnoRet ?? EPERM } : {}) }
    seen.set(JSON.stringify(v), v)
  }
  return [...seen.values()]
}

const ALLOW = [{ action: 'SCMP_ACT_ALLOW' }]
const DENY_EPERM = [{ action: 'SCMP_ACT_ERRNO', errno: EPERM }]

const CLONE_NEWNS = 0x00020000
const CLONE_NEWCGROUP = 0x02000000
const CLONE_NEWUTS = 0x04000000
const CLONE_NEWIPC = 0x08000000
const CLONE_NEWUSER = 0x10000000
const CLONE_NEWPID = 0x20000000
const CLONE_NEWNET = 0x40000000
const CLONE_NEWTIME = 0x00000080
const SIGCHLD = 17
const CLONE_THREAD_FLAGS = 0x003d0f00 // what pthread_create passes

const haveProfile = fs.existsSync(CONTAINERS_COMMON_PROFILE)
const skip = haveProfile ? false : `${CONTAINERS_COMMON_PROFILE} is not installed (golang-github-containers-common)`

t.test("containers-common's profile for podman's default capabilities", { skip }, async (t) => {
  const p = ociSeccomp(containersCommonProfile(), DEFAULT_CAPS, 'x64', '6.1.0')
  t.equal(p.defaultAction, 'SCMP_ACT_ERRNO', "the profile's default: deny")
  t.equal(p.defaultErrnoRet, ENOSYS, 'with ENOSYS, as the profile says')
  t.strictSame(p.architectures, ['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86', 'SCMP_ARCH_X32'], 'the native architecture and its sub-architectures from archMap')
  for (const n of ['read', 'write', 'openat', 'mkdir', 'execve', 'exit_group', 'socket', 'chown']) t.strictSame(verdicts(p, n), ALLOW, `${n}: allowed`)
  for (const n of ['mount', 'umount2', 'umount', 'setns', 'keyctl', 'add_key', 'request_key', 'pivot_root', 'bpf', 'perf_event_open', 'fsopen', 'fsmount', 'move_mount', 'open_tree']) {
    t.strictSame(verdicts(p, n), DENY_EPERM, `${n}: EPERM without CAP_SYS_ADMIN (errnoRet 1)`)
  }
  for (const n of ['kexec_load', 'kexec_file_load', 'init_module', 'finit_module', 'delete_module', 'open_by_handle_at', 'reboot']) t.strictSame(verdicts(p, n), DENY_EPERM, `${n}: EPERM`)
  t.strictSame(verdicts(p, 'chroot'), ALLOW, 'chroot: allowed with CAP_SYS_CHROOT, one of the defaults')
  t.strictSame(verdicts(p, 'no_such_call_at_all'), [{ action: 'SCMP_ACT_ERRNO', errno: ENOSYS }], 'a call no rule names: ENOSYS')

  // unshare and clone: a user namespace alone, or none; any other namespace flag is EPERM.
  for (const call of ['unshare', 'clone']) {
    t.strictSame(verdicts(p, call, [CLONE_NEWUSER]), ALLOW, `${call}(CLONE_NEWUSER): allowed`)
    t.strictSame(verdicts(p, call, [SIGCHLD]), ALLOW, `${call}(SIGCHLD): a plain fork is allowed`)
    t.strictSame(verdicts(p, call, [CLONE_THREAD_FLAGS]), ALLOW, `${call}(thread flags): threads are allowed`)
    for (const [flag, n] of [[CLONE_NEWNS, 'NEWNS'], [CLONE_NEWCGROUP, 'NEWCGROUP'], [CLONE_NEWUTS, 'NEWUTS'], [CLONE_NEWIPC, 'NEWIPC'], [CLONE_NEWPID, 'NEWPID'], [CLONE_NEWNET, 'NEWNET'], [CLONE_NEWTIME, 'NEWTIME']] as const) {
      t.strictSame(verdicts(p, call, [flag]), DENY_EPERM, `${call}(CLONE_${n}): EPERM`)
      t.strictSame(verdicts(p, call, [flag | CLONE_NEWUSER | SIGCHLD]), DENY_EPERM, `${call}(CLONE_${n}|CLONE_NEWUSER): EPERM too`)
    }
  }
  const unshareAllow = p.syscalls.filter((r) => r.names.includes('unshare') && r.action === 'SCMP_ACT_ALLOW')
  t.equal(unshareAllow.length, 1, 'unshare is allowed by one rule')
  t.equal(unshareAllow[0]!.args?.length, 1, 'with one condition')
  const cond = unshareAllow[0]!.args![0]!
  t.match(cond, { index: 0, valueTwo: 0, op: 'SCMP_CMP_MASKED_EQ' }, 'flags & mask == 0')
  t.equal(cond.value & CLONE_NEWUSER, 0, 'the mask leaves CLONE_NEWUSER out')
  t.equal(cond.value, CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME, 'and holds every other namespace flag')
  t.strictSame(verdicts(p, 'clone3'), [{ action: 'SCMP_ACT_ERRNO', errno: ENOSYS }], 'clone3: ENOSYS (its flags cannot be read), so the C library falls back to clone')

  // libseccomp refuses one call both allowed and denied without conditions.
  const uncond = (action: (a: string) => boolean): Set<string> => new Set(p.syscalls.filter((r) => action(r.action) && !(r.args && r.args.length > 0)).flatMap((r) => r.names))
  const allowed = uncond((a) => a === 'SCMP_ACT_ALLOW')
  const clash = [...uncond((a) => a !== 'SCMP_ACT_ALLOW')].filter((n) => allowed.has(n))
  t.strictSame(clash, [], 'no call is both allowed and denied outright')
  t.ok(p.syscalls.every((r) => r.names.length > 0), 'no rule without names')
})

t.test('with CAP_SYS_ADMIN: mounts, namespaces and the keyring are allowed; the kernel itself still is not', { skip }, async (t) => {
  const p = ociSeccomp(containersCommonProfile(), [...DEFAULT_CAPS, 'CAP_SYS_ADMIN'], 'x64', '6.1.0')
  for (const n of ['mount', 'umount2', 'setns', 'keyctl', 'pivot_root', 'clone3']) t.strictSame(verdicts(p, n), ALLOW, `${n}: allowed`)
  for (const f of [CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWPID]) t.strictSame(verdicts(p, 'unshare', [f]), ALLOW, `unshare(${f.toString(16)}): allowed`)
  for (const n of ['kexec_load', 'init_module', 'finit_module', 'delete_module', 'open_by_handle_at', 'reboot']) t.strictSame(verdicts(p, n), DENY_EPERM, `${n}: still EPERM`)
  // Every capability: still never the kernel's own calls.
  const all = ociSeccomp(containersCommonProfile(), [...DEFAULT_CAPS, 'CAP_SYS_ADMIN', 'CAP_SYS_MODULE', 'CAP_SYS_BOOT', 'CAP_DAC_READ_SEARCH'], 'x64', '6.1.0')
  for (const n of ['kexec_load', 'init_module', 'finit_module', 'delete_module', 'open_by_handle_at', 'reboot']) t.strictSame(verdicts(all, n), DENY_EPERM, `${n} with every capability: EPERM`)
})

t.test("the profile's conditions: includes.caps, includes.arches, excludes, minKernel, one name or many", async (t) => {
  const synthetic = {
    defaultAction: 'SCMP_ACT_ERRNO',
    defaultErrnoRet: ENOSYS,
    archMap: [
      { architecture: 'SCMP_ARCH_X86_64', subArchitectures: ['SCMP_ARCH_X86', 'SCMP_ARCH_X32'] },
      { architecture: 'SCMP_ARCH_AARCH64', subArchitectures: ['SCMP_ARCH_ARM'] },
    ],
    syscalls: [
      { names: ['always'], action: 'SCMP_ACT_ALLOW' },
      { names: ['withcap'], action: 'SCMP_ACT_ALLOW', includes: { caps: ['CAP_SYS_PTRACE'] } },
      { names: ['withboth'], action: 'SCMP_ACT_ALLOW', includes: { caps: ['CAP_SYS_PTRACE', 'CAP_NET_ADMIN'] } },
      { names: ['withoutcap'], action: 'SCMP_ACT_ERRNO', errnoRet: 13, excludes: { caps: ['CAP_SYS_PTRACE'] } },
      { names: ['onarm'], action: 'SCMP_ACT_ALLOW', includes: { arches: ['arm64'] } },
      { names: ['onx86'], action: 'SCMP_ACT_ALLOW', includes: { arches: ['x86_64'] } },
      { names: ['notarm'], action: 'SCMP_ACT_ALLOW', excludes: { arches: ['arm64'] } },
      { names: ['newkernel'], action: 'SCMP_ACT_ALLOW', includes: { minKernel: '5.8' } },
      { name: 'single', action: 'SCMP_ACT_ALLOW' },
      { names: ['personality'], action: 'SCMP_ACT_ALLOW', args: [{ index: 0, value: 8, op: 'SCMP_CMP_EQ' }] },
      { names: ['mount', 'read'], action: 'SCMP_ACT_ALLOW' },
      { names: ['unshare'], action: 'SCMP_ACT_ERRNO', errnoRet: EPERM },
    ],
  }
  const names = (p: OciSeccomp): string[] => [...new Set(p.syscalls.filter((r) => r.action === 'SCMP_ACT_ALLOW' && !(r.args && r.args.length > 0)).flatMap((r) => r.names))].sort()
  const x86 = ociSeccomp(synthetic, [], 'x64', '6.1.0')
  t.strictSame(names(x86), ['always', 'newkernel', 'notarm', 'onx86', 'read', 'single'].sort(), 'no capabilities, on amd64: what needs none, for amd64 (x86_64 is its alias)')
  t.strictSame(verdicts(x86, 'withoutcap'), [{ action: 'SCMP_ACT_ERRNO', errno: 13 }], 'excludes.caps: the rule holds without the capability, its errnoRet kept')
  t.strictSame(verdicts(x86, 'mount'), DENY_EPERM, 'mount, allowed by the profile, is withheld without CAP_SYS_ADMIN')
  t.strictSame(verdicts(x86, 'personality', [8]), ALLOW, 'a rule with conditions keeps them')
  t.strictSame(verdicts(x86, 'personality', [9]), [{ action: 'SCMP_ACT_ERRNO', errno: ENOSYS }])
  t.match(x86.syscalls.find((r) => r.names.includes('personality')), { args: [{ index: 0, value: 8, valueTwo: 0, op: 'SCMP_CMP_EQ' }] }, 'valueTwo filled in')
  t.notOk(x86.syscalls.some((r) => r.names.includes('unshare') && r.action === 'SCMP_ACT_ALLOW'), 'a call the profile denies outright is never allowed by podctl’s rules')
  t.strictSame(verdicts(x86, 'unshare', [CLONE_NEWUSER]), DENY_EPERM)

  const ptrace = ociSeccomp(synthetic, ['CAP_SYS_PTRACE'], 'x64', '6.1.0')
  t.ok(names(ptrace).includes('withcap'), 'includes.caps: with the capability the rule holds')
  t.notOk(names(ptrace).includes('withboth'), 'all the capabilities it includes are needed')
  t.strictSame(verdicts(ptrace, 'withoutcap'), [{ action: 'SCMP_ACT_ERRNO', errno: ENOSYS }], 'excludes.caps: with the capability the rule is left out')
  t.ok(names(ociSeccomp(synthetic, ['CAP_SYS_PTRACE', 'CAP_NET_ADMIN'], 'x64', '6.1.0')).includes('withboth'), 'with both')

  const arm = ociSeccomp(synthetic, [], 'arm64', '6.1.0')
  t.strictSame(arm.architectures, ['SCMP_ARCH_AARCH64', 'SCMP_ARCH_ARM'], 'arm64: its own architectures')
  t.ok(names(arm).includes('onarm') && !names(arm).includes('onx86') && !names(arm).includes('notarm'), 'includes.arches and excludes.arches by architecture')
  t.notOk(names(ociSeccomp(synthetic, [], 'x64', '5.4.0-100-generic')).includes('newkernel'), 'minKernel 5.8 on 5.4: left out')
  t.ok(names(ociSeccomp(synthetic, [], 'x64', '5.8.0')).includes('newkernel'), 'on 5.8: in')
  t.ok(names(ociSeccomp(synthetic, [], 'x64', '5.10.1')).includes('newkernel'), 'on 5.10: in (not compared as text)')
})

t.test("userSeccomp: a user's OCI profile is read and checked", async (t) => {
  const dir = t.testdir({
    'ok.json': JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['mkdir'], action: 'SCMP_ACT_ERRNO' }] }),
    'nosys.json': JSON.stringify({ defaultAction: 'SCMP_ACT_LOG' }),
    'bad.json': JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['mkdir'], action: 'ERRNO' }] }),
  })
  t.strictSame(userSeccomp(path.join(dir, 'ok.json')), { defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['mkdir'], action: 'SCMP_ACT_ERRNO' }] })
  t.strictSame(userSeccomp(path.join(dir, 'nosys.json')).syscalls, [], 'no syscalls: an empty list')
  t.throws(() => userSeccomp(path.join(dir, 'bad.json')), { name: 'PodctlError', code: 'EUSAGE', message: /"syscalls"\[0\]: "action": "ERRNO" is not one of/ })
})
