// Apps from images (CONTRACT §13), black box: images built with umoci from
// busybox and moved as skopeo archives, run with `run --image` and with
// manifests. What a new user does first; the image config's defaults as
// podman applies them; users from the image's own /etc/passwd (never the
// host's, never through a link the image planted); the pod's JSON, list
// and status; the app's root an overlay whose upper is the pod's, over one
// render that no pod changes; volumes; enter; image rm of a used image;
// rm and gc taking the overlays down; --userns private; a rootless user.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { subordinateRange } from '../../lib/runtime/userns.js'
import { parseTable, podShapeProblems, podctl, type Result, type RunOptions } from '../helpers/cli-util.js'
import { STACK_RE, manifestFile, podDir, pollUntil, type Test } from '../helpers/common.js'
import { containersMissing } from '../helpers/containers.js'
import { OS_RELEASE, buildBusyboxImage, detachOverlaysUnder, missingTools, overlaysUnder, renderKeys, skopeoCopy, treeState } from '../helpers/images.js'
import { appOf, processesOfPod, runtimeList, statusJson, unprivileged, userDataDir } from '../helpers/oci-util.js'
import { dataDir } from '../helpers/run-util.js'

const missing = missingTools() ?? containersMissing()
if (missing !== undefined) {
  t.comment(`skipped: ${missing}`)
  process.exit(0)
}
// Overlays need root; the rootless test needs root to make its user.
const skip = process.getuid?.() === 0 ? false : 'needs root'

// The image's users: "web" exists in the image only, "nobody" on the host only.
const PASSWD = 'root:x:0:0:root:/root:/bin/sh\nweb:x:1000:1001:web server:/home/web:/bin/sh\n'
const GROUP = 'root:x:0:\nweb:x:1001:\nstaff:x:50:web\n'

const fixtures = t.testdir({})
/** Like alpine's: no Entrypoint, Cmd /bin/sh, no User (root). */
const alpine = buildBusyboxImage(path.join(fixtures, 'alpine'), { tag: '3', files: { 'etc/passwd': PASSWD, 'etc/group': GROUP }, config: ['--config.cmd', '/bin/sh', '--config.env', 'PATH=/bin'] })
/** An application image: every default the config has (Entrypoint, Cmd, Env, WorkingDir, User). */
const app = buildBusyboxImage(path.join(fixtures, 'app'), {
  tag: '1',
  files: { 'etc/passwd': PASSWD, 'etc/group': GROUP },
  config: ['--config.entrypoint', '/bin/sh', '--config.cmd', '-c', '--config.cmd', 'cat /etc/os-release', '--config.env', 'PATH=/bin', '--config.env', 'GREETING=hello', '--config.workingdir', '/srv', '--config.user', 'web'],
})
const ALPINE_TAR = path.join(fixtures, 'alpine.tar')
const APP_TAR = path.join(fixtures, 'app.tar')
skopeoCopy(`oci:${alpine.layout}:${alpine.tag}`, `oci-archive:${ALPINE_TAR}`)
skopeoCopy(`oci:${app.layout}:${app.tag}`, `oci-archive:${APP_TAR}`)
const digestOf = (layout: string): string => JSON.parse(fs.readFileSync(path.join(layout, 'index.json'), 'utf8')).manifests[0].digest as string
const ALPINE = digestOf(alpine.layout)
const APP = digestOf(app.layout)
const hexOf = (digest: string): string => digest.slice('sha256:'.length)
const renderOf = (dir: string, digest: string): string => path.join(dir, 'images', 'renders', hexOf(digest), 'rootfs')

/** A data dir holding alpine:3 and app:1, its overlays taken down at teardown even after a failure (before the test dir goes). */
const imageDataDir = (t: Test): string => {
  let dir = ''
  t.teardown(() => detachOverlaysUnder(dir))
  dir = dataDir(t)
  for (const [tar, name] of [[ALPINE_TAR, 'alpine:3'], [APP_TAR, 'app:1']]) {
    const r = podctl(dir, ['image', 'import', `oci-archive:${tar}`, '--name', name!])
    if (r.status !== 0) throw new Error(`image import ${name}: ${r.stderr}`)
  }
  return dir
}

/** `podctl run ARGS` in the foreground, with the pod's UUID. */
const run = (dir: string, args: string[], opts: RunOptions = {}): Result & { uuid: string } => {
  const file = path.join(path.dirname(dir), `uuid-${Math.random().toString(36).slice(2)}`)
  const r = podctl(dir, ['run', '--uuid-file-save', file, ...args], opts)
  return { ...r, uuid: fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim() : '' }
}

/** `podctl run --detach ARGS`: the UUID. */
const runDetached = (t: Test, dir: string, args: string[], opts: RunOptions = {}): string => {
  const r = podctl(dir, ['run', '--detach', ...args], opts)
  t.equal(r.status, 0, `run --detach ${args.join(' ')}`, { stderr: r.stderr })
  return r.stdout.trim()
}

/** Whether a file of the pod's app root exists on the host yet (what a detached app writes lands in its upper). */
const upperHas = (dir: string, uuid: string, appName: string, rel: string): boolean => {
  const pod = podDir(dir, uuid)
  return pod !== undefined && fs.existsSync(path.join(pod, 'apps', appName, 'upper', rel))
}

const supervisorOf = (dir: string, uuid: string): number => statusJson(dir, uuid).pid as number

t.test('as a new user would: an archive skopeo made, imported as alpine:3, runs and prints the image\'s os-release, not the host\'s', { skip }, async (t) => {
  let dir = ''
  t.teardown(() => detachOverlaysUnder(dir))
  dir = dataDir(t)
  const imp = podctl(dir, ['image', 'import', `oci-archive:${ALPINE_TAR}`, '--name', 'alpine:3'])
  t.equal(imp.status, 0, imp.stderr)
  t.equal(imp.stdout, `${ALPINE}\n`)
  const r = run(dir, ['--image', 'alpine:3', '--', 'cat', '/etc/os-release'])
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, OS_RELEASE, "the image's file")
  t.not(OS_RELEASE, fs.readFileSync('/etc/os-release', 'utf8'), "(the host's is another)")
  t.equal(r.stderr, '')
  const list = parseTable(podctl(dir, ['image', 'list']).stdout)
  t.match(list, [{ NAME: 'alpine', TAG: '3', DIGEST: hexOf(ALPINE).slice(0, 12) }], 'image list shows it')
  // The app's root is the image's, without the host's directories (CONTRACT §12's binds are not made).
  const root = run(dir, ['--image', 'alpine:3', '--', 'sh', '-c', 'ls /; echo "root=$PODCTL_APP_ROOT"; test -e /usr/bin || echo no-usr'])
  t.equal(root.status, 0, root.stderr)
  const seen = root.stdout.split(/\s+/).filter(Boolean)
  t.ok(seen.includes('srv') && seen.includes('etc') && seen.includes('bin'), "the image's directories")
  for (const host of ['usr', 'home', 'root', 'var', 'lib']) t.notOk(seen.includes(host), `no /${host}: the host's is not bound in`)
  t.ok(seen.includes('root=/'), 'PODCTL_APP_ROOT is /')
  t.ok(seen.includes('no-usr'))
  const bare = run(dir, ['--image', 'alpine:3'])
  t.equal(bare.status, 0, 'no arguments: its Cmd (/bin/sh, reading an empty stdin)')
  t.equal(bare.stdout, '')
})

t.test('short names, as podman resolves local images: docker.io/library/busybox:1.36 runs as --image busybox:1.36; a missing tag lists those there are', { skip }, async (t) => {
  let dir = ''
  t.teardown(() => detachOverlaysUnder(dir))
  dir = dataDir(t)
  const imp = podctl(dir, ['image', 'import', `oci-archive:${ALPINE_TAR}`, '--name', 'docker.io/library/busybox:1.36'])
  t.equal(imp.status, 0, imp.stderr)
  const r = run(dir, ['--image', 'busybox:1.36', '--', 'cat', '/etc/os-release'])
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, OS_RELEASE)
  t.match(statusJson(dir, r.uuid).apps[0], { image: ALPINE, image_name: 'docker.io/library/busybox:1.36' }, 'the pod records the name it resolved to')
  const none = run(dir, ['--image', 'busybox', '--', 'true'])
  t.equal(none.status, 3, none.stderr)
  t.equal(none.stderr, 'podctl: no such image: busybox (no tag latest of it is stored)\nthe tags there are: docker.io/library/busybox:1.36; name one, e.g. busybox:1.36\n')
})

t.test("the image config's defaults, as podman applies them", { skip }, async (t) => {
  const dir = imageDataDir(t)
  // [what, run arguments, stdout]
  const cases: [string, string[], string][] = [
    ['no arguments: Entrypoint + Cmd', [], OS_RELEASE],
    ['arguments replace Cmd, Entrypoint stays', ['--', '-c', 'echo replaced'], 'replaced\n'],
    ['--entrypoint replaces Entrypoint and drops Cmd', ['--entrypoint', '/bin/echo'], '\n'],
    ['--entrypoint with arguments', ['--entrypoint', '/bin/echo', '--', 'a', 'b'], 'a b\n'],
    ['--entrypoint as a JSON array (podman\'s form)', ['--entrypoint', '["/bin/echo","-n"]', '--', 'x'], 'x'],
    ["--entrypoint '' clears it: the arguments are the command", ['--entrypoint', '', '--', '/bin/echo', 'none'], 'none\n'],
    ['Env from the image', ['--', '-c', 'echo "$GREETING $PATH"'], 'hello /bin\n'],
    ["the app's env overrides the image's", ['-e', 'GREETING=bye', '--', '-c', 'echo "$GREETING $PATH"'], 'bye /bin\n'],
    ['WorkingDir', ['--', '-c', 'pwd'], '/srv\n'],
    // podman sets HOME from the passwd entry, and neither USER nor LOGNAME.
    ["User, looked up in the image's /etc/passwd", ['--', '-c', 'id -u; id -g; echo "$HOME ${USER-unset}"'], '1000\n1001\n/home/web unset\n'],
  ]
  for (const [what, args, out] of cases) {
    const r = run(dir, ['--image', 'app:1', ...args])
    t.equal(r.status, 0, `${what}: exit 0`, { stderr: r.stderr })
    t.equal(r.stdout, out, what)
  }
  const none = podctl(dir, ['run', '--image', 'app:1', '--entrypoint', ''])
  t.equal(none.status, 2, "--entrypoint '' and no arguments: no command at all")
  t.match(none.stderr, /has no Entrypoint or Cmd, and app app gives no command/)
})

t.test("users come from the image's /etc/passwd and /etc/group, never from the host's", { skip }, async (t) => {
  const dir = imageDataDir(t)
  const who = (user: string): Result => podctl(dir, ['run', '--image', 'app:1', '--user', user, '--', '-c', 'echo $(id -u) $(id -g) $HOME'])
  const cases: [string, string][] = [
    ['root', '0 0 /root\n'],
    ['web:staff', '1000 50 /home/web\n'],
    ['1000', '1000 1001 /home/web\n'],
    // A uid the image does not list: group 0, and HOME the working directory (the image's /srv), as podman 4.3.1 gives it.
    ['4242', '4242 0 /srv\n'],
  ]
  for (const [user, out] of cases) {
    const r = who(user)
    t.equal(r.status, 0, `--user ${user}`, { stderr: r.stderr })
    t.equal(r.stdout, out, `--user ${user}`)
  }
  t.equal(spawnSync('id', ['nobody']).status, 0, '(the host knows nobody)')
  const host = who('nobody')
  t.equal(host.status, 2, 'a user the host has and the image has not: refused at prepare (exit 2), before anything runs')
  t.match(host.stderr, /^podctl: invalid app app: no user named "nobody" in the image's \/etc\/passwd\n/)
  t.notMatch(host.stderr, /permission|data dir/, 'no hint about permissions that are not the matter')
  const group = who('web:wheel')
  t.equal(group.status, 2)
  t.match(group.stderr, /no group named "wheel" in the image's \/etc\/group/)
})

t.test('a manifest: "image" without "exec", "exec" and "entrypoint" in the place of the image\'s, env and workingDirectory over its own; what is refused', { skip }, async (t) => {
  const dir = imageDataDir(t)
  const base = path.dirname(dir)
  const m = (apps: object[], over: object = {}): string => manifestFile(base, { apiVersion: 'podctl/v1', ...over, apps }, `m-${Math.random().toString(36).slice(2)}.json`)
  const bare = run(dir, ['--manifest', m([{ name: 'a', image: 'app:1' }])])
  t.equal(bare.status, 0, bare.stderr)
  t.equal(bare.stdout, OS_RELEASE, "no exec: the image's Entrypoint and Cmd")
  const stored = JSON.parse(podctl(dir, ['cat-manifest', bare.uuid]).stdout)
  t.match(stored, { isolation: 'namespaces', apps: [{ name: 'a', image: APP, exec: ['/bin/sh', '-c', 'cat /etc/os-release'], user: 'web', env: { PATH: '/bin', GREETING: 'hello' }, workingDirectory: '/srv' }] }, 'the pod keeps the digest and the defaults as resolved at prepare (the image\'s user "web", looked up in the image when the app starts, as podman does)')
  t.notOk('group' in stored.apps[0], 'and no group it did not name: the user\'s own and its supplementary groups come from the image')
  const over = run(dir, ['--manifest', m([{ name: 'a', image: 'app:1', exec: ['-c', 'pwd; echo "$GREETING $EXTRA"'], env: { GREETING: 'over', EXTRA: '1' }, workingDirectory: '/etc' }])])
  t.equal(over.status, 0, over.stderr)
  t.equal(over.stdout, '/etc\nover 1\n', 'exec replaces Cmd; env adds and overrides; workingDirectory replaces WorkingDir')
  const ep = run(dir, ['--manifest', m([{ name: 'a', image: 'app:1', entrypoint: ['/bin/cat'], exec: ['/etc/os-release'] }])])
  t.equal(ep.status, 0, ep.stderr)
  t.equal(ep.stdout, OS_RELEASE, '"entrypoint" replaces Entrypoint')
  const two = run(dir, ['--manifest', m([{ name: 'one', type: 'init', image: 'alpine:3', exec: ['/bin/echo', 'first'] }, { name: 'two', image: hexOf(APP).slice(0, 12), exec: ['-c', 'echo second'] }])])
  t.equal(two.status, 0, two.stderr)
  t.equal(two.stdout, '[one] first\n[two] second\n', 'apps of two images in one pod, one named by 12 hex digits of its digest')

  const refused: [string, string, number, RegExp][] = [
    ['"isolation": "host" with an image', m([{ name: 'a', image: 'app:1' }], { isolation: 'host' }), 2, /^podctl: invalid manifest: isolation: "host" cannot run an app from an image/],
    ['an image the store does not have', m([{ name: 'a', image: 'nosuch:1' }]), 3, /^podctl: no such image: nosuch:1\n/],
    ['"entrypoint" without "image"', m([{ name: 'a', exec: ['true'], entrypoint: ['/bin/sh'] }]), 2, /apps\[0\]\.entrypoint: is for an app with an "image"/],
    ['no "exec" and no "image"', m([{ name: 'a' }]), 2, /apps\[0\]\.exec: must be a non-empty array/],
  ]
  for (const [what, file, code, says] of refused) {
    const r = podctl(dir, ['prepare', '--manifest', file])
    t.equal(r.status, code, `${what}: exit ${code}`)
    t.match(r.stderr, says, what)
    t.notMatch(r.stderr, STACK_RE)
  }
  const flags: [string, string[], number, RegExp][] = [
    ['--isolation host --image', ['--isolation', 'host', '--image', 'app:1'], 2, /"host" cannot run an app from an image/],
    ['--image of an image the store does not have', ['--image', 'nosuch:1'], 3, /^podctl: no such image: nosuch:1\nsee the images there are: podctl image list\n$/],
    ['--entrypoint without --image', ['--entrypoint', '/bin/sh', '--', 'true'], 2, /--entrypoint is for a pod made from an image/],
    ['--image with --manifest', ['--image', 'app:1', '--manifest', m([{ name: 'a', image: 'app:1' }])], 2, /^podctl: give either --manifest or --image, not both\nin a manifest, give apps their "image"/],
  ]
  for (const [what, args, code, says] of flags) {
    const r = podctl(dir, ['run', ...args])
    t.equal(r.status, code, `${what}: exit ${code}`)
    t.match(r.stderr, says, what)
  }
  t.equal(JSON.parse(podctl(dir, ['list', '--format', 'json']).stdout).length, 4, 'a refused pod leaves nothing behind')
})

t.test("the pod's JSON (image digest, image_name, rootfs), list's APPS as name(image), status's lines", { skip }, async (t) => {
  const dir = imageDataDir(t)
  const named = run(dir, ['--image', 'alpine:3', '--', 'true'])
  t.equal(named.status, 0, named.stderr)
  const st = statusJson(dir, named.uuid)
  t.strictSame(podShapeProblems(st), [])
  t.equal(st.isolation, 'namespaces', 'an image pod is isolated without being told')
  t.match(appOf(st, 'alpine'), { image: ALPINE, image_name: 'alpine:3', rootfs: 'overlay', exit_code: 0 })
  const byDigest = run(dir, ['--image', APP, '--entrypoint', '/bin/true'])
  t.equal(byDigest.status, 0, byDigest.stderr)
  const app2 = appOf(statusJson(dir, byDigest.uuid), 'app')
  t.match(app2, { image: APP, rootfs: 'overlay' }, 'named by its digest: the app is called app')
  t.notOk('image_name' in app2, 'and has no image_name')
  const rows = parseTable(podctl(dir, ['list']).stdout)
  const apps = (uuid: string): string | undefined => rows.find((r) => r.UUID === uuid.slice(0, 8))?.APPS
  t.equal(apps(named.uuid), 'alpine(alpine:3)')
  t.equal(apps(byDigest.uuid), `app(sha256:${hexOf(APP).slice(0, 12)})`)
  const listed = JSON.parse(podctl(dir, ['list', '--format', 'json']).stdout) as { uuid: string; apps: { image?: string }[] }[]
  t.equal(listed.find((p) => p.uuid === named.uuid)?.apps[0]?.image, ALPINE, 'list --format json: the digest')
  const text = podctl(dir, ['status', named.uuid]).stdout
  t.match(text, /^app-alpine-image=alpine:3\napp-alpine-rootfs=overlay$/m)
  t.match(text, /^runtime=.*\nrootfs=overlay$/m, 'the pod says how its apps\' roots are made')
  t.match(podctl(dir, ['status', byDigest.uuid]).stdout, new RegExp(`^app-app-image=${APP}\\napp-app-rootfs=overlay$`, 'm'))
  const prepared = podctl(dir, ['prepare', '--image', 'alpine:3', '--', 'true'])
  t.equal(prepared.status, 0, prepared.stderr)
  const p = appOf(statusJson(dir, prepared.stdout.trim()), 'alpine')
  t.match(p, { image: ALPINE, image_name: 'alpine:3' }, 'a prepared pod records its image')
  t.notOk('rootfs' in p, 'and no root yet: it is made when the app starts')
  const ran = podctl(dir, ['run-prepared', prepared.stdout.trim()])
  t.equal(ran.status, 0, ran.stderr)
  t.equal(appOf(statusJson(dir, prepared.stdout.trim()), 'alpine').rootfs, 'overlay', 'run-prepared makes it')
})

t.test("the app's writes go to its pod's upper, never to the render; two pods share one render, and the second renders nothing", { skip }, async (t) => {
  const dir = imageDataDir(t)
  const render = renderOf(dir, ALPINE)
  const before = treeState(render)
  const info = fs.readFileSync(path.join(path.dirname(render), 'render.json'), 'utf8')
  const write = (n: number): string[] => ['--image', 'alpine:3', '--', 'sh', '-c', `echo pod${n} > /etc/os-release; rm /bin/ls; echo ${n} > /srv/new; chmod 600 /srv/data; sleep 300`]
  const keys = renderKeys(dir)
  const u1 = runDetached(t, dir, write(1))
  const u2 = runDetached(t, dir, write(2))
  await pollUntil('both apps to have written', () => upperHas(dir, u1, 'alpine', 'srv/new') && upperHas(dir, u2, 'alpine', 'srv/new'))
  t.strictSame(renderKeys(dir), keys, 'no render more: both pods use the one import made')
  t.equal(fs.readFileSync(path.join(path.dirname(render), 'render.json'), 'utf8'), info, 'made at import, not again')
  t.equal(overlaysUnder(dir).length, 2, 'an overlay per app')
  const ino = String(fs.statSync(path.join(render, 'bin/busybox')).ino)
  for (const [u, n] of [[u1, 1], [u2, 2]] as const) {
    const seen = podctl(dir, ['enter', u, '--', 'sh', '-c', 'cat /etc/os-release /srv/new; test -e /bin/ls || echo ls-gone; stat -c %i /bin/busybox'])
    t.equal(seen.status, 0, seen.stderr)
    t.equal(seen.stdout, `pod${n}\n${n}\nls-gone\n${ino}\n`, `pod ${n} sees its own changes, over the render's own busybox (its inode)`)
  }
  const upper = path.join(podDir(dir, u1)!, 'apps', 'alpine', 'upper')
  t.equal(fs.readFileSync(path.join(upper, 'etc/os-release'), 'utf8'), 'pod1\n', "the change is in the pod's upper")
  t.ok(fs.lstatSync(path.join(upper, 'bin/ls')).isCharacterDevice(), 'a removal is a whiteout there')
  t.equal(podctl(dir, ['stop', u1, u2]).status, 0)
  t.strictSame(overlaysUnder(dir), [], 'the overlays go when the apps end')
  t.strictSame(treeState(render), before, 'the render is as it was: contents, owners, modes, times')
  t.equal(fs.readFileSync(path.join(render, 'etc/os-release'), 'utf8'), OS_RELEASE)
  const third = run(dir, ['--image', 'alpine:3', '--', 'cat', '/etc/os-release', '/srv/data'])
  t.equal(third.stdout, `${OS_RELEASE}data\n`, 'a third pod sees the image as it was')
  t.equal(fs.readFileSync(path.join(path.dirname(render), 'render.json'), 'utf8'), info, 'and rendered nothing either')
})

t.test('volumes are at their mount paths in an image app, readOnly enforced', { skip }, async (t) => {
  const dir = imageDataDir(t)
  const hostDir = path.join(path.dirname(dir), 'host-vol')
  fs.mkdirSync(hostDir)
  fs.writeFileSync(path.join(hostDir, 'f'), 'from the host\n')
  const file = manifestFile(path.dirname(dir), {
    apiVersion: 'podctl/v1',
    apps: [
      { name: 'fill', type: 'init', image: 'alpine:3', exec: ['sh', '-c', 'echo shared > /data/x'], mounts: [{ volume: 'data', path: '/data' }] },
      {
        name: 'read',
        image: 'alpine:3',
        exec: ['sh', '-c', 'cat /data/x /conf/a.ini /srv/host/f; echo no > /srv/host/g || echo refused; test -e /srv/data && echo image-file-kept'],
        mounts: [{ volume: 'data', path: '/data' }, { volume: 'conf', path: '/conf' }, { volume: 'hv', path: '/srv/host', readOnly: true }],
      },
    ],
    volumes: [{ name: 'data', kind: 'empty' }, { name: 'conf', kind: 'files', files: { 'a.ini': { content: 'k=v\n' } } }, { name: 'hv', kind: 'host', source: hostDir }],
  })
  const r = run(dir, ['--manifest', file])
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, '[read] shared\n[read] k=v\n[read] from the host\n[read] refused\n[read] image-file-kept\n', "an init app's write is read by the next app; a files volume, a host volume read-only, below an image directory")
  t.match(r.stderr, /Read-only file system/)
  t.strictSame(fs.readdirSync(hostDir), ['f'], 'nothing written to the host volume')
  t.equal(fs.readFileSync(path.join(podDir(dir, r.uuid)!, 'volumes', 'data', 'x'), 'utf8'), 'shared\n', "the empty volume is the pod's, on the host")
  t.notOk(fs.existsSync(path.join(renderOf(dir, ALPINE), 'data')), 'the mount points are made in the upper, not in the render')
})

t.test("an empty volume of an app that runs as the image's user is that user's (CONTRACT §10)", { skip }, async (t) => {
  const dir = imageDataDir(t)
  const file = manifestFile(path.dirname(dir), { apiVersion: 'podctl/v1', apps: [{ name: 'web', image: 'app:1', exec: ['-c', 'id -u; echo w > /data/x && echo wrote'], mounts: [{ volume: 'data', path: '/data' }] }], volumes: [{ name: 'data', kind: 'empty' }] })
  const r = run(dir, ['--manifest', file])
  t.equal(r.stdout, '1000\nwrote\n', 'web writes its own volume')
  t.equal(r.status, 0, r.stderr)
})

t.test("enter into an image app: the image's root and the app's user", { skip }, async (t) => {
  const dir = imageDataDir(t)
  const u = runDetached(t, dir, ['--image', 'app:1', '--', '-c', 'echo mine > /tmp/mark; sleep 300'])
  await pollUntil('the app to run', () => statusJson(dir, u).apps[0].state === 'running')
  const r = podctl(dir, ['enter', u, '--', 'sh', '-c', 'cat /etc/os-release; id -un; pwd; test -e /usr/bin || echo no-usr; echo "$GREETING"'])
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, `${OS_RELEASE}web\n/srv\nno-usr\nhello\n`)
  await pollUntil('the app to write its mark', () => podctl(dir, ['enter', u, '--', 'cat', '/tmp/mark']).stdout === 'mine\n' || undefined)
  t.pass("enter sees the app's /tmp")
  t.equal(podctl(dir, ['stop', u]).status, 0)
})

t.test('image rm of an image a pod uses: exit 4 naming the pod; once gc removed the pod, it works', { skip }, async (t) => {
  const dir = imageDataDir(t)
  const r = run(dir, ['--image', 'alpine:3', '--', 'true'])
  t.equal(r.status, 0, r.stderr)
  const rm = podctl(dir, ['image', 'rm', 'alpine:3'])
  t.equal(rm.status, 4)
  t.match(rm.stderr, new RegExp(`^podctl: image alpine:3 is used by pod ${r.uuid.slice(0, 8)} \\(exited\\)\\n`))
  t.ok(fs.existsSync(renderOf(dir, ALPINE)), 'the image and its render stay')
  const gc = podctl(dir, ['gc', '--grace-period', '0s'])
  t.equal(gc.status, 0, gc.stderr)
  t.match(gc.stdout, new RegExp(`^deleted ${r.uuid}$`, 'm'))
  const again = podctl(dir, ['image', 'rm', 'alpine:3'])
  t.equal(again.status, 0, again.stderr)
  t.equal(again.stdout, `untagged alpine:3\ndeleted ${ALPINE}\n`)
  t.strictSame(renderKeys(dir), [hexOf(APP)], 'its render went with it')
  const gone = podctl(dir, ['run', '--image', 'alpine:3', '--', 'true'])
  t.equal(gone.status, 3, 'and a new pod of it is exit 3')
})

t.test('rm and gc of image pods whose supervisor was killed take their overlays down; the runtime keeps no container', { skip }, async (t) => {
  const dir = imageDataDir(t)
  const sleeper = ['--image', 'alpine:3', '--', 'sleep', '300']
  const [u1, u2] = [runDetached(t, dir, sleeper), runDetached(t, dir, sleeper)]
  await pollUntil('both overlays', () => overlaysUnder(dir).length === 2)
  for (const u of [u1, u2]) process.kill(supervisorOf(dir, u), 'SIGKILL')
  for (const u of [u1, u2]) await pollUntil(`pod ${u} to read exited`, () => podctl(dir, ['status', u]).stdout.startsWith('state=exited'))
  for (const u of [u1, u2]) await pollUntil(`the processes of pod ${u} to end`, () => processesOfPod(u).length === 0)
  t.equal(overlaysUnder(dir).length, 2, 'a killed supervisor leaves its overlay mounted')
  const pod1 = fs.realpathSync(podDir(dir, u1)!)
  const rm = podctl(dir, ['rm', u1])
  t.equal(rm.status, 0, rm.stderr)
  t.strictSame(overlaysUnder(dir).map((p) => p.startsWith(`${pod1}/`)), [false], "rm took its pod's overlay down, not the other's")
  t.notOk(fs.existsSync(pod1), 'and deleted the pod with its upper')
  const gc = podctl(dir, ['gc', '--grace-period', '0s'])
  t.equal(gc.status, 0, gc.stderr)
  t.strictSame(overlaysUnder(dir), [], 'gc took the other down')
  t.strictSame(runtimeList(dir), [], 'no container left in the runtime')
  t.strictSame(renderKeys(dir).sort(), [hexOf(ALPINE), hexOf(APP)].sort(), 'the renders stay')
  t.equal(run(dir, ['--image', 'alpine:3', '--', 'cat', '/etc/os-release']).stdout, OS_RELEASE, 'and serve the next pod')
})

/** podctl's subordinate range, or why there is none. */
const subRange = (): { uid: number; gid: number } | string => {
  const read = (f: string): string => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : '')
  const uid = subordinateRange(read('/etc/subuid'), ['podctl'])
  const gid = subordinateRange(read('/etc/subgid'), ['podctl'])
  return uid !== undefined && gid !== undefined ? { uid, gid } : 'no podctl entry of 65536 ids in /etc/subuid and /etc/subgid'
}

t.test('--userns private: a render made for the shifted ids, owned by the range on the host, root-owned in the pod', { skip }, async (t) => {
  const range = subRange()
  if (typeof range === 'string') return t.plan(0, range)
  const dir = imageDataDir(t)
  const look = ['--', '-c', 'cat /proc/self/uid_map; stat -c "%u %g" /etc/os-release /srv/data; id -u; echo x > /tmp/t && echo tmp-ok']
  const r = run(dir, ['--image', 'app:1', '--userns', 'private', ...look])
  t.equal(r.status, 0, r.stderr)
  const lines = r.stdout.split('\n').map((l) => l.trim().split(/\s+/).join(' '))
  t.equal(lines[0], `0 ${range.uid} 65536`, "the pod's root is the range's first id")
  t.strictSame(lines.slice(1, 5), ['0 0', '1000 1000', '1000', 'tmp-ok'], "the app sees the image's owners; it runs as the image's user")
  const key = `${hexOf(APP)}+${range.uid}-${range.gid}-65536`
  t.ok(renderKeys(dir).includes(key), `a render for the range: ${key}`)
  const shifted = path.join(dir, 'images', 'renders', key, 'rootfs')
  const owner = (root: string, rel: string): string => {
    const st = fs.lstatSync(path.join(root, rel))
    return `${st.uid}:${st.gid}`
  }
  t.equal(owner(shifted, 'etc/os-release'), `${range.uid}:${range.gid}`, 'on the host, its files are owned by the range')
  t.equal(owner(shifted, 'srv/data'), `${range.uid + 1000}:${range.gid + 1000}`, 'shifted by the range')
  t.equal(owner(renderOf(dir, APP), 'srv/data'), '1000:1000', 'the render for host ids is untouched')
  t.equal(appOf(statusJson(dir, r.uuid), 'app').rootfs, 'overlay')
  const info = fs.readFileSync(path.join(dir, 'images', 'renders', key, 'render.json'), 'utf8')
  const again = run(dir, ['--image', 'app:1', '--userns', 'private', ...look])
  t.equal(again.stdout, r.stdout, 'a second private pod sees the same')
  t.equal(fs.readFileSync(path.join(dir, 'images', 'renders', key, 'render.json'), 'utf8'), info, 'from the same render')
  t.strictSame(overlaysUnder(dir), [])
})

t.test('a user that is not root runs an image pod rootless, its root an overlay the runtime mounts in the pod\'s user namespace, no copy', { skip }, async (t) => {
  const who = unprivileged()
  if (typeof who === 'string') return t.plan(0, who)
  const dir = userDataDir(t, who)
  const tar = path.join(path.dirname(dir), 'alpine.tar')
  fs.copyFileSync(ALPINE_TAR, tar)
  fs.chmodSync(tar, 0o644)
  const imp = podctl(dir, ['image', 'import', `oci-archive:${tar}`, '--name', 'alpine:3'], who.opts)
  t.equal(imp.status, 0, imp.stderr)
  const r = run(dir, ['--image', 'alpine:3', '--', 'sh', '-c', 'cat /etc/os-release; id -u; echo changed > /etc/os-release; grep -c " / / .* - overlay " /proc/self/mountinfo'], who.opts)
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, `${OS_RELEASE}0\n1\n`, "the image's file; the user is root in the pod; its root is an overlay")
  const st = statusJson(dir, r.uuid, who.opts)
  t.equal(appOf(st, 'alpine').rootfs, 'overlay', 'rootfs=overlay without root (Linux 5.11 and later: CONTRACT §15)')
  t.match(podctl(dir, ['status', r.uuid], who.opts).stdout, /^app-alpine-rootfs=overlay$/m)
  t.match(podctl(dir, ['status', r.uuid], who.opts).stdout, /^rootfs=overlay$/m, 'and the pod says so')
  t.strictSame(overlaysUnder(path.dirname(dir)), [], 'nothing mounted on the host: the runtime mounted it inside the pod')
  const app = path.join(podDir(dir, r.uuid)!, 'apps', 'alpine')
  t.equal(fs.readFileSync(path.join(app, 'upper', 'etc', 'os-release'), 'utf8'), 'changed\n', 'the write went to the app\'s upper')
  t.equal(fs.readFileSync(path.join(renderOf(dir, ALPINE), 'etc/os-release'), 'utf8'), OS_RELEASE, 'not to the render')
  t.strictSame(fs.readdirSync(path.join(app, 'rootfs')), [], 'no copy: the root the runtime was handed is an empty directory')
  t.equal(podctl(dir, ['rm', r.uuid], who.opts).status, 0)
  t.notOk(fs.existsSync(app), 'rm deletes the upper')
  // One id is mapped: a user named is refused, not dropped without a word; root is what it runs as anyway.
  const named = podctl(dir, ['prepare', '--user', '1000', '--image', 'alpine:3'], who.opts)
  t.equal(named.status, 2, '--user of a rootless image pod: exit 2')
  t.match(named.stderr, /^podctl: invalid --user: a podctl that is not root runs an image's apps as the pod's root/)
  t.equal(podctl(dir, ['prepare', '--user', 'root', '--image', 'alpine:3'], who.opts).status, 0, '--user root is what it runs as')
})

t.test("an image whose /etc/passwd (or /etc) is a link to a host file: the user lookup refuses the link and never reads the host's file", { skip }, async (t) => {
  const dir = imageDataDir(t)
  const base = path.dirname(dir)
  // A host file that would give the app a uid of its choosing if podctl followed the link to it.
  const planted = path.join(base, 'planted')
  fs.mkdirSync(planted)
  fs.writeFileSync(path.join(planted, 'passwd'), 'mallory:x:4242:4242::/:/bin/sh\nroot:x:4343:4343::/:/bin/sh\n')
  const evil: [string, Record<string, string>][] = [
    ['passwd-shadow', { 'etc/passwd': '/etc/shadow' }],
    ['passwd-planted', { 'etc/passwd': path.join(planted, 'passwd') }],
    ['etc-planted', { etc: planted }],
  ]
  for (const [name, symlinks] of evil) {
    const img = buildBusyboxImage(path.join(base, name), { tag: 'x', symlinks, config: ['--config.cmd', '/bin/sh', '--config.env', 'PATH=/bin'] })
    const imp = podctl(dir, ['image', 'import', `oci:${img.layout}:x`, '--name', `${name}:1`])
    t.equal(imp.status, 0, `${name}: a link alone is no hostile entry: the import takes it`, { stderr: imp.stderr })
    for (const user of ['root', 'mallory']) {
      const r = podctl(dir, ['run', '--image', `${name}:1`, '--user', user, '--', 'id', '-u'])
      t.equal(r.status, 2, `${name}, --user ${user}: refused at prepare`)
      t.equal(r.stdout, '', `${name}, --user ${user}: no uid taken from the host's file`)
      t.match(r.stderr, new RegExp(`no user named "${user}" in the image's /etc/passwd`))
      // A hash of /etc/shadow starts with $.
      t.notMatch(r.stderr, /4242|4343|\$/, 'nothing of the host file in the message')
    }
    const numeric = podctl(dir, ['run', '--image', `${name}:1`, '--user', '7', '--', 'id', '-u'])
    t.equal(numeric.stdout, '7\n', `${name}: a uid needs no lookup, and runs`)
  }
  // The same with the image's own User: the default is refused just the same.
  const img = buildBusyboxImage(path.join(base, 'user-shadow'), { tag: 'x', symlinks: { 'etc/passwd': '/etc/shadow' }, config: ['--config.cmd', 'id', '--config.env', 'PATH=/bin', '--config.user', 'root'] })
  t.equal(podctl(dir, ['image', 'import', `oci:${img.layout}:x`, '--name', 'user-shadow:1']).status, 0)
  const r = podctl(dir, ['run', '--image', 'user-shadow:1'])
  t.equal(r.status, 2, "refused at prepare")
  t.match(r.stderr, /no user named "root" in the image's \/etc\/passwd/)
})
