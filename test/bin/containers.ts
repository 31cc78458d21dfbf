// CONTRACT §12, per app security settings and the runtime: privileged,
// capabilities add/drop, readOnlyRootFilesystem, seccomp (default,
// unconfined, a profile of the user's), the runtime a pod is prepared
// with (--runtime, PODCTL_RUNTIME, recorded in its JSON), `userns:
// private` (a range of /etc/subuid's ids, files on the host owned by it),
// and what gc deletes of the runtime's state when everything of a pod was
// SIGKILLed. Seen from inside (/proc/self/status, errno) and from the host.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { cgroupLayout } from '../../lib/proc/cgroups.js'
import { findProgram } from '../../lib/proc/executable.js'
import { subordinateRange } from '../../lib/runtime/userns.js'
import { argvFor, launcher, podctl, type RunOptions } from '../helpers/cli-util.js'
import { containersMissing } from '../helpers/containers.js'
import { STACK_RE, manifestFile, pollUntil, podDir, type Test } from '../helpers/common.js'
import { PODMAN_DEFAULT, appOf, capsOfMask, cgroupDir, hostBounding, isolatedManifest, procStatus, processesOfPod, runtimeList, statusJson, unprivileged } from '../helpers/oci-util.js'
import { alive, allPids, dataDir, exiting, procStat } from '../helpers/run-util.js'

const missing = containersMissing()
const root = process.getuid?.() === 0
const skip = missing !== undefined ? `this machine cannot isolate pods: ${missing}` : root ? false : 'needs root'

/** Runs a one-pod manifest in the foreground; stdout lines of app `app` (prefixed when there are several apps). */
const runManifest = (t: Test, dir: string, m: object, opts: RunOptions = {}): { status: number | null; stdout: string; stderr: string; uuid: string } => {
  const file = manifestFile(path.dirname(dir), m, `m-${Math.random().toString(36).slice(2)}.json`)
  const uuidFile = `${file}.uuid`
  const r = podctl(dir, ['run', '--manifest', file, '--uuid-file-save', uuidFile], opts)
  return { ...r, uuid: fs.existsSync(uuidFile) ? fs.readFileSync(uuidFile, 'utf8').trim() : '' }
}

/** The lines app `app` printed, from a foreground run of several apps. */
const linesOf = (stdout: string, app: string): string =>
  stdout
    .split('\n')
    .filter((l) => l.startsWith(`[${app}] `))
    .map((l) => `${l.slice(app.length + 3)}\n`)
    .join('')

const STATUS = 'grep -E "^(CapEff|CapBnd|NoNewPrivs|Seccomp):" /proc/self/status'

t.test('privileged: every capability, no seccomp, no_new_privs off, the host’s devices; status says so', { skip }, async (t) => {
  const dir = dataDir(t)
  const device = ['/dev/kmsg', '/dev/loop-control', '/dev/fuse', '/dev/tty0', '/dev/mem'].find((d) => fs.existsSync(d))
  const look = `${STATUS}; ls ${device ?? '/dev/null'} >/dev/null 2>&1 && echo device=yes || echo device=no`
  const r = runManifest(t, dir, isolatedManifest([
    { name: 'priv', privileged: true, exec: ['sh', '-c', look] },
    { name: 'plain', exec: ['sh', '-c', look] },
  ]))
  t.equal(r.status, 0, r.stderr)
  const priv = procStatus(linesOf(r.stdout, 'priv'))
  const plain = procStatus(linesOf(r.stdout, 'plain'))
  t.strictSame(capsOfMask(priv.get('CapEff')!), hostBounding(), 'privileged: every capability this host lets a container have')
  t.equal(priv.get('Seccomp'), '0', 'no seccomp filter')
  t.equal(priv.get('NoNewPrivs'), '0', 'no no_new_privs')
  t.strictSame(capsOfMask(plain.get('CapEff')!), PODMAN_DEFAULT, "beside it, an app has podman's defaults")
  t.equal(plain.get('Seccomp'), '2')
  t.equal(plain.get('NoNewPrivs'), '1')
  if (device !== undefined) {
    t.match(linesOf(r.stdout, 'priv'), /device=yes/, `the host's ${device} is there for the privileged app`)
    t.match(linesOf(r.stdout, 'plain'), /device=no/, 'and not for the other')
  }
  t.match(podctl(dir, ['status', r.uuid]).stdout, /^app-priv-privileged=true$/m, 'status text says the app is privileged')
  t.notMatch(podctl(dir, ['status', r.uuid]).stdout, /app-plain-privileged/)
  const st = statusJson(dir, r.uuid)
  t.equal(appOf(st, 'priv').privileged, true, 'JSON: privileged: true')
  t.notOk('privileged' in appOf(st, 'plain'), 'and nothing on the other app')
})

t.test('capabilities: add NET_ADMIN and drop CHOWN change CapEff; chown fails with EPERM', { skip }, async (t) => {
  const dir = dataDir(t)
  const chown = `${STATUS}; touch "$PODCTL_APP_ROOT/f"; chown 1:1 "$PODCTL_APP_ROOT/f" && echo chown=ok`
  const r = runManifest(t, dir, isolatedManifest([
    { name: 'tuned', capabilities: { add: ['NET_ADMIN'], drop: ['CAP_CHOWN'] }, exec: ['sh', '-c', chown] },
    { name: 'plain', exec: ['sh', '-c', chown] },
    { name: 'none', capabilities: { drop: ['ALL'] }, exec: ['sh', '-c', STATUS] },
    { name: 'lower', capabilities: { add: ['cap_sys_ptrace'] }, exec: ['sh', '-c', STATUS] },
  ]))
  const tuned = procStatus(linesOf(r.stdout, 'tuned'))
  const expected = PODMAN_DEFAULT.filter((c) => c !== 'CHOWN').concat('NET_ADMIN')
  t.strictSame(capsOfMask(tuned.get('CapEff')!).sort(), expected.sort(), 'the defaults, less CHOWN, plus NET_ADMIN')
  t.equal(tuned.get('CapBnd'), tuned.get('CapEff'), 'the bounding set is the same: nothing to regain')
  t.match(r.stderr, /\[tuned\] chown: changing ownership of .*: Operation not permitted/, 'chown without CAP_CHOWN: EPERM')
  t.notMatch(linesOf(r.stdout, 'tuned'), /chown=ok/)
  t.match(linesOf(r.stdout, 'plain'), /chown=ok/, 'with the defaults chown works')
  t.equal(procStatus(linesOf(r.stdout, 'none')).get('CapEff'), '0000000000000000', 'drop ALL: none at all')
  t.strictSame(capsOfMask(procStatus(linesOf(r.stdout, 'lower')).get('CapEff')!).sort(), [...PODMAN_DEFAULT, 'SYS_PTRACE'].sort(), 'names in lower case with cap_ work too')
  t.equal(r.status, 1, "the pod's exit code is the failed chown's")
})

t.test('capabilities of a user that is not root: what the manifest adds, effective and ambient (podman --cap-add -u); nothing else', { skip }, async (t) => {
  const dir = dataDir(t)
  const caps = 'grep -E "^Cap(Eff|Prm|Amb|Bnd):" /proc/self/status'
  const r = runManifest(t, dir, isolatedManifest([
    { name: 'bind', user: 'nobody', capabilities: { add: ['NET_BIND_SERVICE'] }, exec: ['sh', '-c', caps] },
    { name: 'plain', user: 'nobody', exec: ['sh', '-c', caps] },
  ]))
  t.equal(r.status, 0, r.stderr)
  const bind = procStatus(linesOf(r.stdout, 'bind'))
  for (const k of ['CapEff', 'CapPrm', 'CapAmb']) t.strictSame(capsOfMask(bind.get(k)!), ['NET_BIND_SERVICE'], `added: ${k} holds it`)
  t.strictSame(capsOfMask(bind.get('CapBnd')!).sort(), [...PODMAN_DEFAULT, 'NET_BIND_SERVICE'].filter((c, i, a) => a.indexOf(c) === i).sort(), 'the bounding set is the whole set')
  const plain = procStatus(linesOf(r.stdout, 'plain'))
  for (const k of ['CapEff', 'CapPrm', 'CapAmb']) t.equal(plain.get(k), '0000000000000000', `nothing added: ${k} empty`)
})

t.test('unknown capability names, and bad settings, are exit 2 at prepare', async (t) => {
  const base = t.testdir({})
  const dir = path.join(base, 'data')
  for (const [what, app, says] of [
    ['an unknown name in add', { capabilities: { add: ['NET_ADMINS'] } }, /apps\[0\]\.capabilities\.add\[0\]: "NET_ADMINS" is not a capability/],
    ['an unknown name in drop', { capabilities: { drop: ['CAP_NOPE'] } }, /apps\[0\]\.capabilities\.drop\[0\]: "CAP_NOPE" is not a capability/],
    ['an unknown key', { capabilities: { keep: ['CHOWN'] } }, /apps\[0\]\.capabilities/],
    ['privileged not a boolean', { privileged: 'yes' }, /apps\[0\]\.privileged/],
    ['readOnlyRootFilesystem not a boolean', { readOnlyRootFilesystem: 1 }, /apps\[0\]\.readOnlyRootFilesystem/],
    ['seccomp a relative path', { seccomp: 'profile.json' }, /apps\[0\]\.seccomp: "profile\.json" must be an absolute path/],
  ] as const) {
    const r = podctl(dir, ['prepare', '--manifest', manifestFile(base, isolatedManifest([{ name: 'a', exec: ['true'], ...app }]))])
    t.equal(r.status, 2, `${what}: 2`)
    t.match(r.stderr, says, what)
    t.notMatch(r.stderr, STACK_RE)
  }
  t.equal(fs.existsSync(path.join(dir, 'pods')) ? podctl(dir, ['list', '--format', 'json']).stdout : '[]\n', '[]\n', 'nothing was prepared')
})

t.test('readOnlyRootFilesystem: the app root gives EROFS, /tmp and a volume take writes', { skip }, async (t) => {
  const dir = dataDir(t)
  const js = "const fs=require('fs');for(const p of [process.env.PODCTL_APP_ROOT+'/f','/tmp/f','/data/f']){try{fs.writeFileSync(p,'x');console.log(p.split('/').slice(-2).join('/')+' ok')}catch(e){console.log(p.split('/').slice(-2).join('/')+' '+e.code)}}"
  const r = runManifest(t, dir, isolatedManifest([
    { name: 'ro', readOnlyRootFilesystem: true, exec: [process.execPath, '-e', js], mounts: [{ volume: 'data', path: '/data' }] },
  ], { volumes: [{ name: 'data', kind: 'empty' }] }))
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, 'ro/f EROFS\ntmp/f ok\ndata/f ok\n', 'the root refuses with EROFS; /tmp and the volume take the write')
  t.notOk(fs.existsSync(path.join(podDir(dir, r.uuid)!, 'apps', 'ro', 'f')), 'nothing was written in the root on the host')
})

t.test('seccomp: unconfined has no filter; a profile of the user’s is what holds; bad ones are exit 2 at prepare', { skip }, async (t) => {
  const dir = dataDir(t)
  const base = path.dirname(dir)
  const denyMkdir = path.join(base, 'deny-mkdir.json')
  fs.writeFileSync(denyMkdir, JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['mkdir', 'mkdirat'], action: 'SCMP_ACT_ERRNO' }] }))
  const mk = `${STATUS}; mkdir /tmp/d && echo mkdir=ok`
  const r = runManifest(t, dir, isolatedManifest([
    { name: 'free', seccomp: 'unconfined', exec: ['sh', '-c', mk] },
    { name: 'own', seccomp: denyMkdir, exec: ['sh', '-c', mk] },
    { name: 'default', seccomp: 'default', exec: ['sh', '-c', mk] },
  ]))
  t.equal(r.status, 1, "the pod's exit code: mkdir's failure in app own")
  const free = procStatus(linesOf(r.stdout, 'free'))
  t.equal(free.get('Seccomp'), '0', 'unconfined: no filter')
  t.equal(free.get('NoNewPrivs'), '1', 'but still no_new_privs')
  t.strictSame(capsOfMask(free.get('CapEff')!), PODMAN_DEFAULT, 'and the default capabilities')
  t.match(linesOf(r.stdout, 'free'), /mkdir=ok/)
  t.equal(procStatus(linesOf(r.stdout, 'own')).get('Seccomp'), '2', 'its own profile is a filter')
  t.match(r.stderr, /\[own\] mkdir: cannot create directory '\/tmp\/d': Operation not permitted/, 'that denies mkdir (EPERM)')
  t.notMatch(linesOf(r.stdout, 'own'), /mkdir=ok/)
  t.match(linesOf(r.stdout, 'default'), /mkdir=ok/, 'the default profile allows mkdir')

  const bad = (name: string, text: string): string => {
    const p = path.join(base, name)
    fs.writeFileSync(p, text)
    return p
  }
  for (const [what, file, says] of [
    ['not JSON', bad('text.json', 'root:x:0:0\n'), /not JSON/],
    ['no defaultAction', bad('noact.json', '{"syscalls":[]}'), /has no "defaultAction"/],
    ['syscalls not a list', bad('obj.json', '{"defaultAction":"SCMP_ACT_ALLOW","syscalls":{}}'), /"syscalls" is not an array/],
    ['an unknown defaultAction', bad('bogus.json', '{"defaultAction":"SCMP_ACT_BOGUS"}'), /"defaultAction": "SCMP_ACT_BOGUS" is not one of/],
    ['an unknown action in a rule', bad('rule.json', '{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_DENY"}]}'), /"syscalls"\[0\]: "action": "SCMP_ACT_DENY" is not one of/],
    ['a rule without names', bad('names.json', '{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"action":"SCMP_ACT_ERRNO"}]}'), /"syscalls"\[0\]: "names" is not a list/],
    ['an unknown comparison', bad('op.json', '{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir"],"action":"SCMP_ACT_ERRNO","args":[{"index":0,"value":1,"op":"SCMP_CMP_SAME"}]}]}'), /"args" is not a list of conditions/],
    ['a missing file', path.join(base, 'none.json'), /cannot read seccomp profile .*none\.json: no such file/],
    ['a directory', base, /is a directory, not a regular file/],
  ] as const) {
    const p = podctl(dir, ['prepare', '--manifest', manifestFile(base, isolatedManifest([{ name: 'a', exec: ['true'], seccomp: file }]), 'bad.json')])
    t.equal(p.status, 2, `${what}: exit 2 at prepare`)
    t.match(p.stderr, says, what)
    t.notMatch(p.stderr, STACK_RE)
  }
  t.equal(JSON.parse(podctl(dir, ['list', '--format', 'json']).stdout).length, 1, 'none of them was prepared')
})

t.test('the runtime: named, from PODCTL_RUNTIME, recorded; none usable is exit 1 (125 in a foreground run)', { skip }, async (t) => {
  const dir = dataDir(t)
  const runc = findProgram('runc')
  const env = (v: string): NodeJS.ProcessEnv => ({ ...process.env, PODCTL_RUNTIME: v })
  const viaEnv = podctl(dir, ['run', '--isolation', 'namespaces', '--uuid-file-save', path.join(dir, '..', 'u1'), '--', 'true'], { env: env('runc') })
  t.equal(viaEnv.status, 0, `PODCTL_RUNTIME=runc works: ${viaEnv.stderr}`)
  const u1 = fs.readFileSync(path.join(dir, '..', 'u1'), 'utf8').trim()
  t.equal(statusJson(dir, u1).runtime, 'runc', 'JSON: runtime "runc"')
  t.match(podctl(dir, ['status', u1]).stdout, /^runtime=runc$/m, 'text: runtime=runc')
  if (runc !== undefined) {
    const byPath = podctl(dir, ['--runtime', runc, 'prepare', '--isolation', 'namespaces', '--', 'true'])
    t.equal(byPath.status, 0, `--runtime ${runc}`)
    t.equal(statusJson(dir, byPath.stdout.trim()).runtime, 'runc', 'a path is recorded by its name')
    // A pod keeps the runtime it was prepared with, whatever the environment says later.
    const later = podctl(dir, ['run-prepared', byPath.stdout.trim()], { env: env('/nonexistent') })
    t.equal(later.status, 0, `run-prepared uses the recorded runtime: ${later.stderr}`)
  }
  const host = podctl(dir, ['run', '--uuid-file-save', path.join(dir, '..', 'u2'), '--', 'true'])
  t.equal(host.status, 0)
  const u2 = fs.readFileSync(path.join(dir, '..', 'u2'), 'utf8').trim()
  t.equal(statusJson(dir, u2).runtime, null, 'a host pod: runtime null')
  t.notMatch(podctl(dir, ['status', u2]).stdout, /^runtime=/m, 'and no runtime= line')

  const says = /^podctl: no OCI runtime "\/nonexistent": not an executable file\ninstall one: apt-get install runc/
  const prepare = podctl(dir, ['--runtime', '/nonexistent', 'prepare', '--isolation', 'namespaces', '--', 'true'])
  t.equal(prepare.status, 1, '--runtime /nonexistent: prepare exits 1')
  t.match(prepare.stderr, says)
  const detached = podctl(dir, ['--runtime', '/nonexistent', 'run', '--detach', '--isolation', 'namespaces', '--', 'true'])
  t.equal(detached.status, 1, 'run --detach exits 1')
  t.match(detached.stderr, says)
  const fg = podctl(dir, ['--runtime', '/nonexistent', 'run', '--isolation', 'namespaces', '--', 'true'])
  t.equal(fg.status, 125, "a foreground run: podctl's own failure, 125")
  t.match(fg.stderr, says)
  t.equal(podctl(dir, ['prepare', '--isolation', 'namespaces', '--', 'true'], { env: env('/nonexistent') }).status, 1, 'PODCTL_RUNTIME=/nonexistent: 1')
  t.equal(podctl(dir, ['--runtime', 'no-such-runtime', 'prepare', '--isolation', 'namespaces', '--', 'true']).status, 1, 'a name not on PATH: 1')
  t.equal(podctl(dir, ['--runtime', '/nonexistent', 'prepare', '--', 'true']).status, 0, 'a host pod needs no runtime')
})

t.test('--runtime crun on a host with hybrid cgroups: exit 1 saying why', async (t) => {
  if (missing !== undefined) return t.plan(0, `this machine cannot isolate pods: ${missing}`)
  if (cgroupLayout().mode !== 'hybrid') return t.plan(0, `this host's cgroups are ${cgroupLayout().mode}, not hybrid`)
  if (findProgram('crun') === undefined) return t.plan(0, 'crun is not installed')
  const dir = path.join(t.testdir({}), 'data')
  const r = podctl(dir, ['--runtime', 'crun', 'prepare', '--isolation', 'namespaces', '--', 'true'])
  t.equal(r.status, 1)
  t.match(r.stderr, /^podctl: the OCI runtime crun cannot be used here: crun refuses hosts with hybrid cgroups .*\nuse runc: --runtime runc\n$/)
  // By default crun is passed over here, for runc.
  const d = podctl(dir, ['prepare', '--isolation', 'namespaces', '--', 'true'])
  t.equal(d.status, 0, d.stderr)
  t.equal(statusJson(dir, d.stdout.trim()).runtime, 'runc', 'the default here is runc')
})

/** podctl's subordinate range, as /etc/subuid and /etc/subgid give it; or why there is none. */
const subRange = (): { uid: number; gid: number } | string => {
  const read = (f: string): string => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : '')
  const uid = subordinateRange(read('/etc/subuid'), ['podctl'])
  const gid = subordinateRange(read('/etc/subgid'), ['podctl'])
  return uid !== undefined && gid !== undefined ? { uid, gid } : 'no podctl entry of 65536 ids in /etc/subuid and /etc/subgid'
}

t.test('--userns private: the pod’s root is the first id of podctl’s range; its files are owned by the range on the host', { skip }, async (t) => {
  const range = subRange()
  if (typeof range === 'string') return t.plan(0, range)
  const dir = dataDir(t)
  const r = runManifest(t, dir, isolatedManifest([
    { name: 'boss', exec: ['sh', '-c', 'cat /proc/self/uid_map /proc/self/gid_map; id -u; touch "$PODCTL_APP_ROOT/mine" /data/boss'], mounts: [{ volume: 'data', path: '/data' }] },
    { name: 'worker', user: 'nobody', exec: ['sh', '-c', 'id -u; touch "$PODCTL_APP_ROOT/mine" /data/worker /own/worker'], mounts: [{ volume: 'data', path: '/data' }, { volume: 'own', path: '/own' }] },
  ], { userns: 'private', volumes: [{ name: 'data', kind: 'empty' }, { name: 'own', kind: 'empty' }] }))
  t.equal(r.status, 0, r.stderr)
  const boss = linesOf(r.stdout, 'boss').split('\n').map((l) => l.trim().split(/\s+/).join(' '))
  t.equal(boss[0], `0 ${range.uid} 65536`, "uid_map: 0 is the range's first id, 65536 of them")
  t.equal(boss[1], `0 ${range.gid} 65536`, 'gid_map likewise')
  t.equal(boss[2], '0', 'root in the pod')
  const pod = podDir(dir, r.uuid)!
  const owner = (p: string): string => {
    const st = fs.statSync(path.join(pod, p))
    return `${st.uid}:${st.gid}`
  }
  t.equal(owner('apps/boss/mine'), `${range.uid}:${range.gid}`, "a file root writes in its app root is the range root's on the host")
  t.equal(owner('volumes/data/boss'), `${range.uid}:${range.gid}`, 'in an empty volume too')
  t.equal(owner('apps/worker/mine'), `${range.uid + 65534}:${range.gid + 65534}`, 'an app run as nobody writes as the range’s 65534')
  t.equal(owner('volumes/own/worker'), `${range.uid + 65534}:${range.gid + 65534}`, 'in its own volume too')
  t.equal(owner('volumes/data/worker'), `${range.uid + 65534}:${range.gid + 65534}`, 'and in a volume it shares with a root app (CONTRACT §10: its volumes are writable by it)')
})

// A files volume is the host root's; its directories are 0755 as the
// kubelet's, and the way to it open, so that the root of a private range,
// someone else on the host, reads it.
t.test('--userns private: a files volume can be read in the pod', { skip }, async (t) => {
  if (typeof subRange() === 'string') return t.plan(0, String(subRange()))
  const dir = dataDir(t)
  const r = runManifest(t, dir, isolatedManifest([
    { name: 'reader', exec: ['cat', '/cfg/a.conf'], mounts: [{ volume: 'cfg', path: '/cfg', readOnly: true }] },
  ], { userns: 'private', volumes: [{ name: 'cfg', kind: 'files', files: { 'a.conf': { content: 'hello\n' } } }] }))
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, 'hello\n')
})

t.test('--userns private with no podctl entry in /etc/subuid and /etc/subgid: exit 1 with the line to add', { skip }, async (t) => {
  if (spawnSync('unshare', ['--version']).status !== 0) return t.plan(0, 'util-linux unshare(1) is not installed')
  // Empty files over /etc/subuid and /etc/subgid in a mount namespace of this command alone: the host's stay as they are.
  const base = t.testdir({ empty: '' })
  const dir = path.join(base, 'data')
  const empty = path.join(base, 'empty')
  const [cmd, argv] = launcher(argvFor(dir, ['prepare', '--isolation', 'namespaces', '--userns', 'private', '--', 'true']))
  const q = (a: string): string => `'${a.replace(/'/g, "'\\''")}'`
  const script = `mount --bind ${q(empty)} /etc/subuid && mount --bind ${q(empty)} /etc/subgid && exec ${[cmd, ...argv].map(q).join(' ')}`
  const r = spawnSync('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script], { encoding: 'utf8' })
  t.equal(r.status, 1, r.stderr)
  t.match(r.stderr, /^podctl: a pod with "userns": "private" needs 65536 subordinate ids of the user podctl, and \/etc\/subuid and \/etc\/subgid give it none\n/)
  t.match(r.stderr, /\nadd a range no other user has, such as: echo podctl:500000000:65536 \| tee -a \/etc\/subuid \/etc\/subgid\n$/, 'the line to add')
  t.notMatch(r.stderr, STACK_RE)
  t.notOk(fs.existsSync(path.join(dir, 'pods', 'prepared')) && fs.readdirSync(path.join(dir, 'pods', 'prepared')).length > 0, 'nothing was prepared')
})

t.test('--userns private as another user than root: exit 2', async (t) => {
  if (missing !== undefined) return t.plan(0, `this machine cannot isolate pods: ${missing}`)
  const who = unprivileged()
  if (typeof who === 'string') return t.plan(0, who)
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-iso-'))
  fs.chmodSync(base, 0o755)
  fs.chownSync(base, who.uid, who.gid)
  t.teardown(() => fs.rmSync(base, { recursive: true, force: true }))
  const r = podctl(path.join(base, 'data'), ['prepare', '--isolation', 'namespaces', '--userns', 'private', '--', 'true'], who.opts)
  t.equal(r.status, 2)
  t.match(r.stderr, /userns: "private" is for pods run by root/)
})

// On cgroup v1 every cgroup directory holds a file called "tasks": an
// app's cgroup has a prefix, so an app of that name has one all the same.
t.test('an app may be called tasks', { skip }, async (t) => {
  const dir = dataDir(t)
  const r = runManifest(t, dir, isolatedManifest([{ name: 'tasks', exec: ['echo', 'ran'] }]))
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, 'ran\n')
})

/** Whether `pid` waits in a frozen cgroup v1 freezer (false where there is none, or it is gone). */
const frozen = (pid: number): boolean => {
  try {
    const line = fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n').find((l) => /^\d+:freezer:/.test(l))
    if (line === undefined) return false
    return fs.readFileSync(`/sys/fs/cgroup/freezer${line.split(':')[2]}/freezer.state`, 'utf8').trim() === 'FROZEN'
  } catch {
    return false
  }
}

// With gc, app b's cgroup is frozen first where a cgroup v1 freezer is (what a `runc run` killed in the
// middle of its kill of every process leaves, which the SIGKILLs below make only by chance).
for (const remover of ['gc', 'rm'] as const) {
  const freeze = remover === 'gc' && cgroupLayout().mode !== 'v2'
  t.test(`${remover} after the supervisor and every runtime process were SIGKILLed${freeze ? ', an app\'s cgroup frozen' : ''}: the runtime keeps no container, the cgroups go`, { skip }, async (t) => {
    const dir = dataDir(t)
    const up = podctl(dir, ['run', '--detach', '--manifest', manifestFile(path.dirname(dir), isolatedManifest([
      { name: 'a', exec: ['sleep', '300'] },
      { name: 'b', exec: ['sh', '-c', 'sleep 301 & setsid sleep 302 & wait'] },
    ], { resources: { memory: '64Mi' } }))])
    t.equal(up.status, 0, up.stderr)
    const uuid = up.stdout.trim()
    t.equal(podctl(dir, ['status', uuid, '--wait-ready']).status, 0)
    const supervisor = statusJson(dir, uuid).pid as number
    const cmdline = (p: number): string => {
      try {
        return fs.readFileSync(`/proc/${p}/cmdline`, 'latin1')
      } catch {
        return ''
      }
    }
    // The whole set: the supervisor, each `runc run` (their arguments name the pod), the infra and the apps.
    const runtimeProcs = allPids().filter((p) => cmdline(p).includes(uuid) && !cmdline(p).includes('supervisor-main'))
    const infra = Number(fs.readFileSync(path.join(podDir(dir, uuid)!, 'bundles', '.infra', 'pid'), 'utf8'))
    const victims = [...new Set([supervisor, ...runtimeProcs, infra, ...processesOfPod(uuid)])]
    t.ok(runtimeProcs.length >= 3, `a runc process per container (${runtimeProcs.length})`)
    if (freeze) fs.writeFileSync(path.join(cgroupDir('freezer', uuid, 'b'), 'freezer.state'), 'FROZEN')
    // One killed may take others with it (the infra, its pod): those are gone already.
    for (const p of victims) {
      try {
        process.kill(p, 'SIGKILL')
      } catch (er) {
        if ((er as NodeJS.ErrnoException).code !== 'ESRCH') throw er
      }
    }
    // A `runc run` killed while it froze its app's cgroup (runc's kill of every process of a container that
    // shares the infra's pid namespace, on cgroup v1) leaves that app's processes frozen, their SIGKILL
    // pending, and the infra in its exit, where pid 1 of a namespace waits for every process of it: the
    // runtime's delete, which gc and rm run, thaws and ends them.
    const waiting = (): number[] => [...new Set([...victims, ...processesOfPod(uuid)])].filter((p) => alive(p) && !frozen(p) && !exiting(p))
    try {
      await pollUntil('every process of the pod to die, or to wait frozen for the runtime\'s delete', () => waiting().length === 0)
    } catch (er) {
      // Which, and in what state: what this wait has to say when it gives up.
      for (const p of waiting()) t.comment(`still there: ${p} ${procStat(p)?.state ?? '?'} ${cmdline(p).replaceAll('\0', ' ')} ${fs.readFileSync(`/proc/${p}/cgroup`, 'utf8').match(/^\d+:freezer:.*$/m)?.[0] ?? ''}`)
      throw er
    }
    t.match(podctl(dir, ['status', uuid]).stdout, /^state=exited$/m, 'the pod reads exited')
    const left = runtimeList(dir)
    t.ok(left.length > 0, `before ${remover} the runtime still keeps the pod's containers (${left.join(', ')})`)
    const done = podctl(dir, remover === 'gc' ? ['gc', '--grace-period', '0s'] : ['rm', uuid])
    t.equal(done.status, 0, done.stderr)
    t.match(done.stdout, remover === 'gc' ? new RegExp(`deleted ${uuid}`) : uuid)
    t.strictSame(runtimeList(dir), [], `runc --root ${path.join(dir, 'runtime', 'runc')} list is empty`)
    await pollUntil(`no process of the pod left after ${remover}`, () => processesOfPod(uuid).length === 0 && !victims.some(alive))
    t.pass(`no process of the pod is left after ${remover}, frozen or not`)
    for (const c of ['memory', 'pids']) t.notOk(fs.existsSync(cgroupDir(c, uuid)), `the pod's ${c} cgroup is gone`)
  })
}

t.test('prepare refuses what an isolated pod cannot have: a mount in /proc, /sys or /dev, a program outside its root', async (t) => {
  if (missing !== undefined) return t.plan(0, `this machine cannot isolate pods: ${missing}`)
  const dir = dataDir(t)
  for (const where of ['/proc/x', '/sys/y', '/dev/z']) {
    const m = isolatedManifest([{ name: 'a', exec: ['true'], mounts: [{ volume: 'v', path: where }] }], { volumes: [{ name: 'v', kind: 'empty' }] })
    const r = podctl(dir, ['prepare', '--manifest', '-'], { input: JSON.stringify(m) })
    t.equal(r.status, 2, `${where}: exit 2`)
    t.match(r.stderr, /is the kernel's own in the pod/)
  }
  const prog = path.join(path.dirname(dir), 'mytrue')
  fs.copyFileSync('/bin/true', prog)
  const outside = podctl(dir, ['prepare', '--isolation', 'namespaces', '--', prog])
  t.equal(outside.status, 2, 'a program the pod does not see: exit 2')
  t.match(outside.stderr, /is not in the pod's root/)
  t.equal(podctl(dir, ['prepare', '--', prog]).status, 0, 'as a host process it is fine')
})
