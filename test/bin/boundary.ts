// The container boundary as an attacker tried it (CONTRACT §12a, the holes
// of issue 27): each attack runs from inside a pod, or from the host as
// another user while a pod runs, and the HOST is checked afterwards, not an
// exit code. A host user who becomes root through a setuid program an app
// left in its root; a host user who reads a raw device an image ships; an
// image whose /dev or whose volume's mount point is a link, steering the
// runtime onto the host; an app that reads the host through its infra's
// /proc/1/root; a rootless pod that writes a delegated cgroup through its
// /sys; a root app of host programs that reads the host's secrets, or
// learns where the data dir is. Run as root; the rootless case runs its
// pod as the unprivileged test user.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { cgroupLayout } from '../../lib/proc/cgroups.js'
import { privateIdRange } from '../../lib/runtime/userns.js'
import { podctl, type Result } from '../helpers/cli-util.js'
import { manifestFile, podDir, pollUntil, type Test } from '../helpers/common.js'
import { containersMissing, killPodsIn } from '../helpers/containers.js'
import { unprivileged, userDataDir } from '../helpers/oci-util.js'
import { BUSYBOX, detachOverlaysUnder, layerTar, missingTools, writeLayout, type Entry } from '../helpers/images.js'

const missing = process.getuid?.() !== 0 ? 'the attacks need root (a host user to attack as, loop devices, overlays)' : (containersMissing() ?? missingTools())
if (missing !== undefined) {
  t.comment(`skipped: ${missing}`)
  process.exit(0)
}

/** Host user nobody, the attacker on the host. */
const NOBODY = { uid: 65534, gid: 65534 }

/** Lines "name=value" a script printed (a multi-app pod's "[app] " prefix kept in the name), as a map. */
const said = (stdout: string): Map<string, string> => new Map(stdout.split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]))

/** A shell step that runs `cmd`, and prints `name=ok <its first line>` or `name=<its error message>`. */
const step = (name: string, cmd: string): string => `if out=$( { ${cmd}; } 2>&1 ); then echo "${name}=ok $(echo "$out" | head -n 1)"; else echo "${name}=$(echo "$out" | head -n 1)"; fi`

/** Runs `script` with sh as host user nobody (from /, no supplementary groups): what it printed. */
const asNobody = (script: string): Map<string, string> => {
  const r = spawnSync('/bin/sh', ['-c', script], { ...NOBODY, cwd: '/', encoding: 'utf8' })
  if (r.error) throw r.error
  return said(r.stdout)
}

/** The permission bits of `p` (not following a link). */
const modeOf = (p: string): number => fs.lstatSync(p).mode & 0o7777

/** Every directory from `dataDir` down to `to` (inclusive). */
const chain = (dataDir: string, to: string): string[] => {
  const rel = path.relative(dataDir, to).split('/')
  return [dataDir, ...rel.map((_, i) => path.join(dataDir, ...rel.slice(0, i + 1)))]
}

// One data dir for every case run as root, outside /tmp: a pod has a /tmp of
// its own, and case 6 looks for each component of the data dir's path in
// the pod. Its parent lets everyone pass, so what stops host user nobody is
// podctl's modes, not the test's.
const base = fs.mkdtempSync('/var/tmp/podctl-boundary-')
fs.chmodSync(base, 0o755)
const dir = path.join(base, 'data')
t.teardown(() => {
  podctl(dir, ['rm', '--all', '--force'])
  killPodsIn(dir)
  detachOverlaysUnder(dir)
  fs.rmSync(base, { recursive: true, force: true })
})

const run = (args: string[]): Result => podctl(dir, args)

/** `run --detach ARGS`: the pod's UUID; the pod is removed at the test's end. */
const detached = (t: Test, args: string[]): string => {
  const r = run(['run', '--detach', ...args])
  if (r.status !== 0) throw new Error(`run --detach exited ${r.status}: ${r.stderr}`)
  const uuid = r.stdout.trim()
  t.teardown(() => void run(['rm', '-f', uuid]))
  return uuid
}

/** A busybox image layer (the applets the attacks use), plus `extra` entries. */
const busyboxLayer = (extra: Entry[] = []): Promise<Buffer> =>
  layerTar([
    { name: 'bin/', type: 'directory' },
    { name: 'bin/busybox', content: fs.readFileSync(BUSYBOX), mode: 0o755 },
    ...['sh', 'cat', 'ls', 'echo', 'sleep', 'grep', 'head', 'tr', 'touch', 'mkdir', 'readlink'].map((a): Entry => ({ name: `bin/${a}`, type: 'symlink', linkname: 'busybox' })),
    { name: 'etc/', type: 'directory' },
    { name: 'etc/os-release', content: 'ID=podctl-boundary\n' },
    { name: 'tmp/', type: 'directory', mode: 0o1777 },
    ...extra,
  ])

/** Imports a hand-made image of `layer` as `name`. */
const importImage = async (name: string, layer: Buffer): Promise<void> => {
  const layout = writeLayout(path.join(base, 'images', name.replace(':', '-')), { layers: [layer] }).layout
  const r = run(['image', 'import', `oci:${layout}:test`, '--name', name])
  if (r.status !== 0) throw new Error(`image import ${name}: ${r.stderr}`)
}

let imported: Promise<void> | undefined
const images = (): Promise<void> => (imported ??= (async () => {
  // Plain: busybox only. Devlink: its /dev leads to case 3a's canary, by
  // the canary's host path. Datalink: /data, where a volume goes, is a link to /etc.
  await importImage('plain:1', await busyboxLayer())
  await importImage('devlink:1', await busyboxLayer([{ name: 'dev', type: 'symlink', linkname: CANARY }]))
  await importImage('datalink:1', await busyboxLayer([{ name: 'data', type: 'symlink', linkname: '/etc' }]))
})())

t.test('1. a host user does not become root through a setuid program a root app leaves in its app root', async (t) => {
  const target = path.join(base, 'root-only')
  fs.mkdirSync(target, { mode: 0o700 })
  const m = manifestFile(base, {
    apiVersion: 'podctl/v1',
    isolation: 'namespaces',
    volumes: [{ name: 'scratch', kind: 'empty' }],
    apps: [
      // A `user` app: before the fix, its way through the host opened the data dir to everyone.
      { name: 'web', user: 'nobody', exec: ['sh', '-c', 'echo mine > /scratch/mine && exec sleep 600'], mounts: [{ volume: 'scratch', path: '/scratch' }] },
      { name: 'boss', exec: ['sh', '-c', 'cp /usr/bin/touch "$PODCTL_APP_ROOT/tool" && chmod 4755 "$PODCTL_APP_ROOT/tool" && chmod 755 "$PODCTL_APP_ROOT" && touch "$PODCTL_APP_ROOT/ready" && exec sleep 600'] },
    ],
  }, 'setuid.json')
  const uuid = detached(t, ['--manifest', m])
  const pod = path.join(dir, 'pods', 'run', uuid)
  const tool = path.join(pod, 'apps', 'boss', 'tool')
  const vol = path.join(pod, 'volumes', 'scratch')
  await pollUntil('the root app to plant its tool and the user app to write its volume', () => fs.existsSync(path.join(pod, 'apps', 'boss', 'ready')) && fs.existsSync(path.join(vol, 'mine')))
  t.equal(modeOf(tool), 0o4755, 'the root app made a setuid-root program in its app root (the attack is set up)')
  t.equal(fs.statSync(tool).uid, 0)
  const s = asNobody([step('run-tool', `${tool} ${target}/pwned`), step('list-volume', `ls ${vol}`), step('read-volume', `cat ${vol}/mine`)].join('\n'))
  t.match(s.get('run-tool'), /Permission denied/, 'host user nobody cannot reach the setuid program (EACCES)')
  t.notOk(fs.existsSync(path.join(target, 'pwned')), 'no root-only file was written')
  for (const d of chain(dir, path.join(pod, 'apps'))) t.equal(modeOf(d) & 0o001, 0, `${path.relative(base, d)} (${modeOf(d).toString(8)}) has no o+x`)
  t.match(s.get('list-volume'), /Permission denied/, "the user app's empty volume is not reachable by host user nobody")
  t.match(s.get('read-volume'), /Permission denied/, 'nor what the app wrote there')
  t.equal(fs.readFileSync(path.join(vol, 'mine'), 'utf8'), 'mine\n', 'while the user app itself wrote it (the volume is its own)')
})

t.test('2. with --userns private, no host user reads a raw device an image ships or runs its setuid file', async (t) => {
  let range: number
  try {
    range = privateIdRange().gid[0]!.hostID
  } catch (er) {
    return void t.plan(0, `needs podctl's lines in /etc/subuid and /etc/subgid: ${(er as Error).message}`)
  }
  // A loop device of known content: the block node the image ships is its major:minor.
  const backing = path.join(base, 'loop.img')
  const SECRET = `podctl-boundary-secret-${process.pid}`
  fs.writeFileSync(backing, Buffer.concat([Buffer.from(SECRET), Buffer.alloc(1024 * 1024 - SECRET.length)]))
  const lo = spawnSync('losetup', ['-f', '--show', backing], { encoding: 'utf8' })
  if (lo.status !== 0) return void t.plan(0, `no loop device here: ${lo.stderr.trim()}`)
  const loop = lo.stdout.trim()
  t.teardown(() => void spawnSync('losetup', ['-d', loop]))
  const rdev = fs.statSync(loop).rdev
  const [major, minor] = [(rdev >> 8) & 0xfff, (rdev & 0xff) | ((rdev >> 12) & 0xfff00)]
  t.equal(fs.readFileSync(loop).subarray(0, SECRET.length).toString(), SECRET, `${loop} (${major}:${minor}) holds the secret (root reads it)`)
  await importImage('dev:1', await busyboxLayer([
    { name: 'disk', type: 'block-device', mode: 0o666, devmajor: major, devminor: minor },
    { name: 'suid-id', content: fs.readFileSync('/usr/bin/id'), mode: 0o4755 },
  ]))
  const uuid = detached(t, ['--image', 'dev:1', '--userns', 'private', '--entrypoint', '/bin/sleep', '--', '600'])
  const pod = path.join(dir, 'pods', 'run', uuid)
  const rootfs = path.join(pod, 'apps', 'dev', 'rootfs')
  await pollUntil("the app's root to be mounted", () => fs.existsSync(path.join(rootfs, 'disk')))
  const st = fs.lstatSync(path.join(rootfs, 'disk'))
  t.ok(st.isBlockDevice() && st.rdev === rdev && (st.mode & 0o777) === 0o666, 'the image put a 0666 node of the loop device in the app root (the attack is set up)')
  const s = asNobody([step('read-disk', `head -c ${SECRET.length} ${rootfs}/disk`), step('run-suid', `${rootfs}/suid-id -u`)].join('\n'))
  t.not(s.get('read-disk'), `ok ${SECRET}`, 'host user nobody does not read the device')
  t.match(s.get('read-disk'), /Permission denied/, 'it cannot reach it (EACCES)')
  t.match(s.get('run-suid'), /Permission denied/, "nor run the image's setuid file (EACCES), which gave the range's root before")
  for (const d of chain(dir, path.join(pod, 'apps', 'dev'))) {
    const mode = modeOf(d)
    t.equal(mode & 0o007, 0, `${path.relative(base, d)} (${mode.toString(8)}) gives others nothing`)
    t.equal(fs.lstatSync(d).gid, range, `${path.relative(base, d)}: its group, which may pass, is the range's first gid`)
  }
  const real = fs.realpathSync(rootfs)
  const mi = fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').find((l) => l.split(' ')[4] === real && l.includes(' - overlay '))
  t.ok(mi, 'the app root is an overlay')
  const opts = (mi ?? '').split(' ')[5]?.split(',') ?? []
  t.ok(opts.includes('nosuid') && opts.includes('nodev'), `the overlay is mounted nosuid,nodev (${opts.join(',')})`)
})

// The host's canary for case 3: a directory of the test whose path an
// image's /dev leads to. runc 1.1.5 follows that link on the host when it
// sets up /dev/ptmx and /dev's links (it deletes DIR/ptmx and makes five
// links there), and, through a volume mounted at the same path in the app,
// makes /dev's nodes in it; `null` leads to a file of the test's own (the
// attack's target was a host sysctl).
const CANARY = path.join(base, 'canary')

/** Each entry of the canary, by name (sorted): what it is, and its content or target. */
const canaryState = (): Record<string, string> =>
  Object.fromEntries(
    fs.readdirSync(CANARY).sort().map((n) => {
      const p = path.join(CANARY, n)
      const st = fs.lstatSync(p)
      return [n, st.isSymbolicLink() ? `link ${fs.readlinkSync(p)}` : st.isFile() ? `file ${fs.readFileSync(p, 'utf8')}` : `other ${st.mode.toString(8)}`]
    }),
  )

t.test("3a. an image's /dev link does not steer the runtime onto a host directory", async (t) => {
  await images()
  fs.mkdirSync(CANARY)
  fs.writeFileSync(path.join(CANARY, 'victim'), 'victim\n')
  fs.symlinkSync(path.join(CANARY, 'victim'), path.join(CANARY, 'null'))
  fs.writeFileSync(path.join(CANARY, 'ptmx'), 'not a device\n')
  const before = canaryState()
  const script = [
    'if [ -L /dev ]; then echo dev-link=yes; else echo dev-link=no; fi',
    'while read -r l; do echo "mountinfo $l"; done < /proc/self/mountinfo',
    step('dev-null', 'echo x > /dev/null'),
    `echo "canary=$(ls ${CANARY} | tr '\\n' ' ')"`,
  ].join('\n')
  const m = manifestFile(base, {
    apiVersion: 'podctl/v1',
    isolation: 'namespaces',
    volumes: [{ name: 'canary', kind: 'host', source: CANARY }],
    apps: [{ name: 'steer', image: 'devlink:1', entrypoint: ['/bin/sh', '-c', script], mounts: [{ volume: 'canary', path: CANARY }] }],
  }, 'devlink.json')
  const file = path.join(base, 'devlink.uuid')
  const r = run(['run', '--uuid-file-save', file, '--manifest', m])
  t.teardown(() => void run(['rm', '-f', fs.readFileSync(file, 'utf8').trim()]))
  const after = canaryState()
  t.same(Object.keys(after), Object.keys(before), "the host's canary directory has the same entries: no node or link made, nothing removed")
  t.equal(after.null, before.null, 'null is still the same link')
  t.equal(after.ptmx, 'file not a device\n', 'ptmx is still there, the same plain file')
  t.equal(after.victim, 'file victim\n', 'the file null leads to is unchanged')
  t.equal(r.status, 0, 'the app ran', { stderr: r.stderr })
  const s = said(r.stdout)
  t.equal(s.get('dev-link'), 'no', "in the app /dev is no link but a directory of the app's own root")
  const devMount = r.stdout.split('\n').filter((l) => l.startsWith('mountinfo ')).map((l) => l.slice('mountinfo '.length)).find((l) => l.split(' ')[4] === '/dev')
  t.match(devMount, / - tmpfs /, 'with a tmpfs of its own mounted there')
  t.equal(s.get('dev-null'), 'ok ', '/dev/null takes writes (a device, not the file the link leads to)')
  t.equal(s.get('canary'), `${Object.keys(before).join(' ')} `, 'and the app sees the canary as it was')
})

t.test('3b. a volume whose mount point is a link in the image (/data -> /etc) lands on a real /data, not on /etc', async (t) => {
  await images()
  const script = [
    'if [ -L /data ]; then echo data-link=yes; else echo data-link=no; fi',
    step('etc', 'cat /etc/os-release'),
    step('write-data', 'echo in > /data/f'),
  ].join('\n')
  const m = manifestFile(base, {
    apiVersion: 'podctl/v1',
    isolation: 'namespaces',
    volumes: [{ name: 'data', kind: 'empty' }],
    apps: [{ name: 'app', image: 'datalink:1', entrypoint: ['/bin/sh', '-c', script], mounts: [{ volume: 'data', path: '/data' }] }],
  }, 'datalink.json')
  const file = path.join(base, 'datalink.uuid')
  const r = run(['run', '--uuid-file-save', file, '--manifest', m])
  t.teardown(() => void run(['rm', '-f', fs.readFileSync(file, 'utf8').trim()]))
  t.equal(r.status, 0, 'the app ran', { stderr: r.stderr })
  const s = said(r.stdout)
  t.equal(s.get('data-link'), 'no', "/data is a real directory of the app's root")
  t.equal(s.get('etc'), 'ok ID=podctl-boundary', "the image's /etc is still there: the volume did not land on it")
  t.equal(s.get('write-data'), 'ok ')
  t.equal(fs.readFileSync(path.join(podDir(dir, fs.readFileSync(file, 'utf8').trim())!, 'volumes', 'data', 'f'), 'utf8'), 'in\n', 'what the app wrote to /data is in the volume')
})

// Cases 4 and 6 look from inside one pod: an image app and an app of host
// programs, both root, each trying the infra's /proc/1 and the host's
// secrets. A file of the host's /etc that only root reads, and a key in
// /etc/ssl/private, are made for it (before the pod starts: podctl looks
// for the host's secrets then).
const SECRET_FILE = `/etc/podctl-test-secret-${process.pid}`
const SSL_PRIVATE = '/etc/ssl/private'
const SSL_KEY = path.join(SSL_PRIVATE, `podctl-test-${process.pid}.key`)
/** Each component of the data dir's path: /var, /var/tmp, …, <data>. */
const DATA_PARTS = dir.split('/').slice(1).map((_, i, a) => `/${a.slice(0, i + 1).join('/')}`)
let peeked: Promise<Result> | undefined
const peek = (): Promise<Result> => (peeked ??= (async (): Promise<Result> => {
  await images()
  fs.writeFileSync(SECRET_FILE, 'secret\n', { mode: 0o600 })
  t.teardown(() => fs.rmSync(SECRET_FILE, { force: true }))
  if (fs.existsSync(SSL_PRIVATE)) {
    fs.writeFileSync(SSL_KEY, 'key\n', { mode: 0o600 })
    t.teardown(() => fs.rmSync(SSL_KEY, { force: true }))
  }
  const proc1 = [
    step('ls-root', 'ls /proc/1/root/'),
    step('shadow-via-infra', 'cat /proc/1/root/etc/shadow'),
    step('usr-via-infra', 'ls /proc/1/root/usr/bin'),
    step('environ', 'cat /proc/1/environ'),
    'echo "cmdline=$(tr "\\0" " " < /proc/1/cmdline)"',
  ]
  const host = [
    ...proc1,
    step('shadow', 'cat /etc/shadow'),
    step('gshadow', 'cat /etc/gshadow'),
    step('ssl-private', `ls -A ${SSL_PRIVATE}`),
    step('secret', `cat ${SECRET_FILE}`),
    step('passwd', 'grep ^root: /etc/passwd'),
    step('hostname', 'cat /etc/hostname'),
    'echo "app-root=$PODCTL_APP_ROOT"',
    'echo "pwd=$(pwd)"',
    ...DATA_PARTS.map((p, i) => step(`data-part${i}`, `ls -d ${p}`)),
  ]
  const m = manifestFile(base, {
    apiVersion: 'podctl/v1',
    isolation: 'namespaces',
    apps: [
      { name: 'img', image: 'plain:1', entrypoint: ['/bin/sh', '-c', proc1.join('\n')] },
      { name: 'host', exec: ['sh', '-c', host.join('\n')] },
    ],
  }, 'peek.json')
  const file = path.join(base, 'peek.uuid')
  const r = run(['run', '--uuid-file-save', file, '--manifest', m])
  t.teardown(() => void run(['rm', '-f', fs.readFileSync(file, 'utf8').trim()]))
  return r
})())

t.test("4. no app reads the host's /etc/shadow or /usr through the infra's /proc/1/root", async (t) => {
  const r = await peek()
  t.equal(r.status, 0, 'the pod ran', { stderr: r.stderr })
  const s = said(r.stdout)
  for (const app of ['img', 'host']) {
    const a = (k: string): string | undefined => s.get(`[${app}] ${k}`)
    const who = app === 'img' ? 'an image app' : 'an app of host programs'
    t.match(a('ls-root'), /Permission denied/, `${who}: the infra's root cannot be listed (EACCES)`)
    t.match(a('shadow-via-infra'), /Permission denied/, `${who}: the host's /etc/shadow is not read through it`)
    t.match(a('usr-via-infra'), /Permission denied/, `${who}: nor the host's /usr`)
    t.match(a('environ'), /Permission denied/, `${who}: the infra's environment is not read either (the infra is not dumpable)`)
    t.equal(a('cmdline'), '/catatonit -P ', `${who}: pid 1 is catatonit, paused`)
  }
  const shadow = fs.readFileSync('/etc/shadow', 'utf8').split('\n')[0]!
  t.notOk(r.stdout.includes(shadow), "no line of the host's /etc/shadow was printed")
})

t.test("5. a rootless pod with the host's network writes no delegated cgroup through its /sys", async (t) => {
  const who = unprivileged()
  if (typeof who === 'string') return void t.plan(0, who)
  const layout = cgroupLayout()
  const mount = layout.mode === 'v2' ? layout.v2 : layout.v1.get('pids')
  if (!mount) return void t.plan(0, 'no pids cgroup hierarchy is mounted here')
  // Delegated as systemd delegates: a cgroup the user owns, with its files.
  const name = `podctl-boundary-${process.pid}`
  const cg = path.join(mount.mountPoint, name)
  fs.mkdirSync(cg)
  t.teardown(() => {
    for (const d of [path.join(cg, 'child'), cg]) {
      try {
        fs.rmdirSync(d)
      } catch {
        // not there
      }
    }
  })
  for (const f of ['', 'pids.max', 'cgroup.procs', ...(layout.mode === 'v2' ? ['cgroup.subtree_control'] : ['tasks'])]) {
    if (fs.existsSync(path.join(cg, f))) fs.chownSync(path.join(cg, f), who.uid, who.gid)
  }
  const pidsMax = fs.readFileSync(path.join(cg, 'pids.max'), 'utf8')
  const probe = spawnSync('/bin/sh', ['-c', `echo 7 > ${cg}/pids.max && echo ${pidsMax.trim()} > ${cg}/pids.max`], { uid: who.uid, gid: who.gid, encoding: 'utf8' })
  t.equal(probe.status, 0, `the user may write its cgroup on the host (the delegation is real) ${probe.stderr}`)
  // The pod's /sys is the host's: the cgroup is at its host path there.
  const inPod = cg
  const dir = userDataDir(t, who)
  const r = podctl(dir, ['run', '--isolation', 'namespaces', '--network', 'host', '--', 'sh', '-c', [step('pids-max', `echo 7 > ${inPod}/pids.max`), step('mkdir', `mkdir ${inPod}/child`)].join('\n')], who.opts)
  t.equal(r.status, 0, 'the pod ran', { stderr: r.stderr })
  const s = said(r.stdout)
  t.notOk(s.get('pids-max')?.startsWith('ok'), `writing pids.max fails (${s.get('pids-max')})`)
  t.notOk(s.get('mkdir')?.startsWith('ok'), `making a child cgroup fails (${s.get('mkdir')})`)
  t.equal(fs.readFileSync(path.join(cg, 'pids.max'), 'utf8'), pidsMax, "the host's cgroup keeps its pids.max")
  t.notOk(fs.existsSync(path.join(cg, 'child')), 'and has no child')
})

t.test("6. a root app of host programs reads none of the host's secrets, and does not learn where the data dir is", async (t) => {
  const r = await peek()
  t.equal(r.status, 0, 'the pod ran', { stderr: r.stderr })
  const s = said(r.stdout)
  const a = (k: string): string | undefined => s.get(`[host] ${k}`)
  const shown = (v: string | undefined): boolean => v?.startsWith('ok ') === true && v !== 'ok '
  t.notOk(shown(a('shadow')), `/etc/shadow shows nothing (${a('shadow')})`)
  t.notOk(shown(a('gshadow')), `/etc/gshadow shows nothing (${a('gshadow')})`)
  t.notOk(shown(a('secret')), `the test's own root-only ${SECRET_FILE} shows nothing (${a('secret')})`)
  t.notOk(shown(a('ssl-private')), `${SSL_PRIVATE} shows nothing (${a('ssl-private')})`)
  t.match(a('passwd'), /^ok root:x:0:0:/, "the host's /etc/passwd still reads")
  t.match(a('hostname'), /^ok [0-9a-f]{8}$/, "and /etc/hostname, the pod's own (podman's), names the pod")
  t.notOk(a('app-root')?.includes(dir), `PODCTL_APP_ROOT (${a('app-root')}) does not hold the data dir's path`)
  t.notOk(a('pwd')?.includes(dir), `nor the working directory (${a('pwd')})`)
  DATA_PARTS.forEach((p, i) => t.match(a(`data-part${i}`), /No such file/, `${p} is not in the pod (ENOENT)`))
  t.notOk(r.stdout.includes(fs.readFileSync('/etc/shadow', 'utf8').split('\n')[0]!), "no line of the host's /etc/shadow was printed")
})
