// CONTRACT §15, "Run as podman runs", black box: for each item, an image
// app run through podctl, and as the expected value what podman 4.3.1
// printed for the same image and the same command on this kind of machine
// (`podman run --rm --network none`, runc, cgroupfs; bench/acceptance.js
// holds the cases side by side and prints podman's output). podman itself
// is not run here. One data dir and one import of two images for all.
//
// Not here: the flags of §15 (-e KEY, --env-file, -i, -t, --rm, -w,
// --hostname, --http-proxy=false) are the command line's; short names and
// image ID prefixes are the image store's; the rootless overlay is
// test/bin/image-run.ts's.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { podctl, type Result } from '../helpers/cli-util.js'
import { manifestFile, pollUntil } from '../helpers/common.js'
import { containersMissing } from '../helpers/containers.js'
import { buildBusyboxImage, detachOverlaysUnder, missingTools, skopeoCopy } from '../helpers/images.js'
import { dataDir } from '../helpers/run-util.js'

const missing = missingTools() ?? containersMissing()
if (missing !== undefined || process.getuid?.() !== 0) {
  t.comment(`skipped: ${missing ?? 'needs root'}`)
  process.exit(0)
}

const PASSWD = 'root:x:0:0:root:/root:/bin/sh\nbin:x:1:1:bin:/bin:/sbin/nologin\napp:x:1000:1000:app user:/home/app:/bin/sh\n'
const GROUP = 'root:x:0:\nbin:x:1:\nwheel:x:10:app\napp:x:1000:\nextra:x:2000:app\n'
const FILES = { 'etc/passwd': PASSWD, 'etc/group': GROUP, 'tmp/image-tmp-file': "the image's own /tmp\n" }
const APPLETS = Object.fromEntries(['whoami', 'tail', 'head', 'cut'].map((a) => [`bin/${a}`, 'busybox']))

/** What the facts image prints: one `key=value` line per item, then the pod's /etc/hosts. */
const FACTS = [
  'echo from-cmd',
  'echo "containerenv=$(test -f /run/.containerenv && echo yes || echo no)"',
  `echo "dev=$(grep -E '^[^ ]+ /dev ' /proc/mounts | cut -d' ' -f4)"`,
  `echo "shm=$(grep -E '^[^ ]+ /dev/shm ' /proc/mounts | cut -d' ' -f4)"`,
  'echo "pids=$(cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max)"',
  'echo "tmp=$(cat /tmp/image-tmp-file)"',
  'echo "proxy=$http_proxy $HTTPS_PROXY $no_proxy"',
  'echo "$(grep Groups /proc/self/status)"',
  'echo "cwd=$(pwd) $(stat -c %U:%G .)"',
  'echo hosts:',
  'cat /etc/hosts',
].join('; ')
const TRAP = 'trap "echo got QUIT; exit 3" QUIT; trap "echo got TERM; exit 4" TERM; echo ready; while :; do sleep 0.1; done'

let dir = ''
t.teardown(() => detachOverlaysUnder(dir))
dir = dataDir(t)
// Beside the data dir, in the test's own directory (a second t.testdir would empty it).
const fixtures = path.join(path.dirname(dir), 'images')
fs.mkdirSync(fixtures)
/** Entrypoint [""] (a Dockerfile's reset of its base's), a WorkingDir the image lacks, its user "app". */
const facts = buildBusyboxImage(path.join(fixtures, 'facts'), {
  tag: '1',
  files: FILES,
  symlinks: APPLETS,
  config: ['--config.entrypoint', '', '--config.cmd', 'sh', '--config.cmd', '-c', '--config.cmd', FACTS, '--config.env', 'PATH=/bin', '--config.workingdir', '/srv/work', '--config.user', 'app'],
})
/** Entrypoint `sh -c` (what takes a shell command as its argument), StopSignal SIGQUIT, a Cmd that traps signals. */
const trap = buildBusyboxImage(path.join(fixtures, 'trap'), {
  tag: '1',
  files: FILES,
  symlinks: APPLETS,
  config: ['--config.entrypoint', '/bin/sh', '--config.entrypoint', '-c', '--config.cmd', TRAP, '--config.env', 'PATH=/bin', '--config.stopsignal', 'SIGQUIT'],
})

for (const [img, name] of [[facts, 'compat/facts'], [trap, 'compat/trap']] as const) {
  const tar = path.join(fixtures, `${img.tag}-${name.replace('/', '-')}.tar`)
  skopeoCopy(`oci:${img.layout}:${img.tag}`, `docker-archive:${tar}`)
  const r = podctl(dir, ['image', 'import', `docker-archive:${tar}`, '--name', name])
  if (r.status !== 0) throw new Error(`image import ${name}: ${r.stderr}`)
}

const PROXY = { http_proxy: 'http://1.2.3.4:3128', HTTPS_PROXY: 'http://1.2.3.4:3129', no_proxy: 'localhost' }
const run = (args: string[], env: NodeJS.ProcessEnv = process.env): Result => podctl(dir, ['run', '--network', 'none', ...args], { env })
const manifest = (name: string, m: object): string => manifestFile(fixtures, { apiVersion: 'podctl/v1', network: 'none', ...m }, `${name}.json`)
/** The `key=value` lines of the facts image's output. */
const keyed = (out: string): Map<string, string> => new Map(out.split('\nhosts:\n')[0]!.split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]))

t.test('the facts image, run as its config says (its user, its WorkingDir), the caller with proxy variables', async (t) => {
  const r = run(['--image', 'compat/facts'], { ...process.env, ...PROXY })
  t.equal(r.status, 0, 'runs', { stderr: r.stderr })
  const f = keyed(r.stdout)
  // podman printed: from-cmd
  t.equal(r.stdout.split('\n')[0], 'from-cmd', 'Entrypoint [""] is no entrypoint: the image Cmd runs (was exit 127, exec: "")')
  // podman printed: containerenv=yes
  t.equal(f.get('containerenv'), 'yes', '/run/.containerenv exists')
  // podman printed: rw,nosuid,noexec,size=65536k,mode=755
  t.equal(f.get('dev'), 'rw,nosuid,noexec,size=65536k,mode=755', '/dev is a noexec tmpfs')
  // podman printed: rw,nosuid,nodev,noexec,relatime,size=64000k
  t.equal(f.get('shm'), 'rw,nosuid,nodev,noexec,relatime,size=64000k', "/dev/shm of podman's size")
  // podman printed: 2048
  t.equal(f.get('pids'), '2048', 'a pids limit of 2048 by default')
  // podman printed: the image's own /tmp
  t.equal(f.get('tmp'), "the image's own /tmp", "the image's /tmp is its own, not a tmpfs over it")
  // podman printed: http://1.2.3.4:3128 http://1.2.3.4:3129 localhost
  t.equal(f.get('proxy'), 'http://1.2.3.4:3128 http://1.2.3.4:3129 localhost', "the caller's proxy variables pass")
  // podman printed: Groups:	10 1000 2000 (with the kernel's trailing space)
  t.equal(r.stdout.split('\n').find((l) => l.startsWith('Groups:')), 'Groups:\t10 1000 2000 ', "the user's supplementary groups from the image's /etc/group, its gid among them")
  // podman printed: /srv/work app:app
  t.equal(f.get('cwd'), '/srv/work app:app', "the image's WorkingDir, missing in the image, made and given to the app's user")
  // podman printed, on this host: each entry `IP<TAB>NAMES`, the container's
  // hostname at its address. (On a network of the pod's own podctl's file
  // ends with a comment, lib/network/etc-files.ts says why; none here.)
  const hosts = (r.stdout.split('\nhosts:\n')[1] ?? '').trimEnd().split('\n').filter((l) => !l.startsWith('#'))
  t.same(hosts.filter((l) => !/^\S+\t\S+( \S+)*$/.test(l)), [], '/etc/hosts written as podman writes it: IP<TAB>NAMES, the host\'s entries rewritten so')
  t.ok(hosts.length >= 3, 'with entries (localhost and the pod\'s own at least)', { hosts })
})

t.test('a uid the image does not list', async (t) => {
  const r = run(['--image', 'compat/facts', '--user', '4242', '--', 'sh', '-c', 'whoami; tail -1 /etc/passwd; tail -1 /etc/group; echo $HOME'])
  t.equal(r.status, 0, 'runs', { stderr: r.stderr })
  // podman printed: 4242, its passwd line with the WorkingDir as home, a group line for the uid, HOME the WorkingDir
  t.equal(r.stdout, '4242\n4242:*:4242:0:container user:/srv/work:/bin/sh\n4242:x:4242:4242\n/srv/work\n', 'gets a passwd line (and a group line) as podman adds them')
})

t.test('an Entrypoint takes the arguments as its own: sh -c CMDLINE', async (t) => {
  const r = run(['--image', 'compat/trap', '--', 'cat /etc/passwd | head -1'])
  // podman printed: root:x:0:0:root:/root:/bin/sh
  t.equal(r.stdout, 'root:x:0:0:root:/root:/bin/sh\n', 'the first argument is not checked as a program (was exit 2)', { stderr: r.stderr })
})

t.test('readOnlyRootFilesystem: /run, /tmp and /var/tmp writable tmpfs, the image files there kept', async (t) => {
  const file = manifest('ro', { apps: [{ name: 'ro', image: 'compat/facts', user: 'root', workingDirectory: '/', readOnlyRootFilesystem: true, exec: ['sh', '-c', 'cat /tmp/image-tmp-file; for d in /run /tmp /var/tmp /etc; do touch $d/x 2>/dev/null && echo $d writable || echo $d read-only; done'] }] })
  const r = podctl(dir, ['run', '--manifest', file])
  // podman --read-only printed these lines
  t.equal(r.stdout, "the image's own /tmp\n/run writable\n/tmp writable\n/var/tmp writable\n/etc read-only\n", '--read-only-tmpfs as podman mounts it', { stderr: r.stderr })
  // A user that is not root: the tmpfs of a directory the image lacks is everyone's (1777), as podman's are.
  const user = manifest('ro-user', { apps: [{ name: 'ro', image: 'compat/facts', user: '1000', group: '1000', workingDirectory: '/', readOnlyRootFilesystem: true, exec: ['sh', '-c', 'for d in /run /var/tmp; do touch $d/x 2>/dev/null && echo $d writable $(stat -c %a $d) || echo $d read-only $(stat -c %a $d); done'] }] })
  const u = podctl(dir, ['run', '--manifest', user])
  // podman --read-only -u 1000 printed these lines
  t.equal(u.stdout, '/run writable 1777\n/var/tmp writable 1777\n', 'writable by a user that is not root', { stderr: u.stderr })
})

t.test("a pod's own network lets root's group ping (ping_group_range 0 0, containers.conf's default)", async (t) => {
  const r = podctl(dir, ['run', '--network', 'none', '--image', 'compat/facts', '--', 'cat', '/proc/sys/net/ipv4/ping_group_range'])
  // podman run --network none: 0	0
  t.equal(r.stdout, '0\t0\n', 'as podman sets it', { stderr: r.stderr })
})

t.test("on the host's network the pod has the host's hostname, its name notwithstanding; --hostname still names it", async (t) => {
  const { hostname } = await import('node:os')
  const r = podctl(dir, ['run', '--network', 'host', '--name', 'compat-hostnet', '--image', 'compat/facts', '--', 'cat', '/etc/hostname'])
  // podman run --network host --name webx: the host's name
  t.equal(r.stdout, hostname(), "the host's", { stderr: r.stderr })
  const named = podctl(dir, ['run', '--network', 'host', '--hostname', 'given', '--image', 'compat/facts', '--', 'cat', '/etc/hostname'])
  t.equal(named.stdout, 'given', 'the one --hostname gives', { stderr: named.stderr })
})

t.test('a program that is not executable: 126, said once as the app\'s own failure (no hint about the data dir)', async (t) => {
  const r = podctl(dir, ['run', '--network', 'none', '--image', 'compat/facts', '--', '/etc/passwd'])
  // podman: exit 126, exec: "/etc/passwd": permission denied
  t.equal(r.status, 126)
  t.match(r.stderr, /^podctl: app \S+ could not start: .*exec: "\/etc\/passwd": permission denied$/m)
  t.equal(r.stderr.split('\n').filter((l) => l.includes('exec: "/etc/passwd"')).length, 1, "said once: the runtime's own line is not passed on as the app's output", { stderr: r.stderr })
  t.notMatch(r.stderr, /owner of the data dir/, 'the data dir has nothing to do with it')
})

t.test('a working directory the image lacks, named by the app: it cannot start', async (t) => {
  const file = manifest('wd', { apps: [{ name: 'wd', image: 'compat/facts', workingDirectory: '/home/foobar', exec: ['pwd'] }] })
  const r = podctl(dir, ['run', '--manifest', file])
  // podman -w /home/foobar: exit 126, workdir "/home/foobar" does not exist
  t.equal(r.status, 126, 'exit 126, as podman -w of a missing directory', { stdout: r.stdout })
})

t.test('stop sends the image StopSignal', async (t) => {
  const d = podctl(dir, ['run', '--detach', '--quiet', '--network', 'none', '--image', 'compat/trap'])
  t.equal(d.status, 0, 'runs detached', { stderr: d.stderr })
  const uuid = d.stdout.trim()
  await pollUntil('the app traps signals', () => podctl(dir, ['logs', uuid]).stdout.includes('ready'))
  t.equal(podctl(dir, ['stop', uuid]).status, 0, 'stopped')
  // podman stop printed (podman logs): ready, got QUIT; exit code 3
  t.equal(podctl(dir, ['logs', uuid]).stdout, 'ready\ngot QUIT\n', 'SIGQUIT, not SIGTERM')
  t.match(podctl(dir, ['status', uuid]).stdout, /^app-trap=3$/m, 'the exit code its trap gave')
})
