// An isolated pod is a boundary (CONTRACT §12): a root app inside it tries
// every way out that worked before pods ran on an OCI runtime — remounting
// its root and its read-only volumes, uncovering the host's /proc, joining
// another process's namespaces, the host's devices and cgroups, sysctls, a
// setuid binary, the host's network — and each fails with the kernel's
// error while the host, checked afterwards from outside, is unchanged. Run
// once with podctl as root and once as an unprivileged user (a rootless
// pod), where the machine allows.
import t from 'tap'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { podctl } from '../helpers/cli-util.js'
import { manifestFile } from '../helpers/common.js'
import { containersMissing, dataDirFor, unprivileged, type Who } from '../helpers/containers.js'

const missing = containersMissing()
const root: Who = { name: 'as root', uid: 0, gid: 0, opts: {} }
const other = unprivileged()

/** Lines "name=value" an attack script printed, as a map. */
const said = (stdout: string): Map<string, string> => new Map(stdout.split('\n').filter((l) => l.includes('=')).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]))

/** A shell step that runs `cmd`, and prints `name=ok` or `name=<its error message>`. */
const step = (name: string, cmd: string): string => `if out=$( { ${cmd}; } 2>&1 ); then echo "${name}=ok"; else echo "${name}=$(echo "$out" | head -n 1)"; fi`

const statusField = (pid: number | 'self', field: string): string => `$(grep '^${field}:' /proc/${pid}/status | cut -f2)`

for (const who of [root, other]) {
  t.test(typeof who === 'string' ? 'as an unprivileged user' : who.name, async (t) => {
    if (typeof who === 'string') return void t.plan(0, who)
    if (missing !== undefined) return void t.plan(0, `this machine cannot isolate pods: ${missing}`)
    const rootless = who.uid !== 0
    const run = (dir: string, args: string[]) => podctl(dir, args, who.opts)

    t.test('capabilities, no_new_privs and seccomp are a container\'s, not root\'s', async (t) => {
      const dir = dataDirFor(t, who)
      const r = run(dir, ['run', '--isolation', 'namespaces', '--', 'sh', '-c', `echo "eff=${statusField('self', 'CapEff')}"; echo "bnd=${statusField('self', 'CapBnd')}"; echo "nnp=${statusField('self', 'NoNewPrivs')}"; echo "seccomp=${statusField('self', 'Seccomp')}"`])
      t.equal(r.status, 0, r.stderr)
      const s = said(r.stdout)
      // CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP NET_BIND_SERVICE SYS_CHROOT SETFCAP
      t.equal(s.get('eff'), '00000000800405fb', "podman's default capabilities, and no others (was the full set)")
      t.equal(s.get('bnd'), '00000000800405fb', 'the bounding set too')
      t.equal(s.get('nnp'), '1', 'no_new_privs is set')
      t.equal(s.get('seccomp'), '2', 'a seccomp filter is in force')
    })

    t.test("remounting the pod's root or a read-only volume, and writing through it, fails; the host is unchanged", async (t) => {
      const dir = dataDirFor(t, who)
      const src = path.join(path.dirname(dir), 'ro-src')
      fs.mkdirSync(src)
      fs.writeFileSync(path.join(src, 'data'), 'host data\n')
      fs.chownSync(src, who.uid, who.gid)
      const marker = `/podctl-escape-${process.pid}-${who.uid}`
      const script = [
        step('remount-root', 'mount -o remount,bind,rw /'),
        step('write-root', `touch ${marker}`),
        step('remount-vol', 'mount -o remount,bind,rw /srv/ro'),
        step('write-vol', 'echo x > /srv/ro/data'),
        step('bind-over', 'mount --bind /tmp /srv/ro'),
        step('write-etc', 'touch /etc/podctl-escape'),
      ].join('\n')
      const m = manifestFile(path.dirname(dir), {
        apiVersion: 'podctl/v1',
        isolation: 'namespaces',
        volumes: [{ name: 'ro', kind: 'host', source: src }],
        apps: [{ name: 'attacker', exec: ['sh', '-c', script], mounts: [{ volume: 'ro', path: '/srv/ro', readOnly: true }] }],
      })
      fs.chmodSync(path.dirname(dir), 0o755)
      const r = run(dir, ['run', '--manifest', m])
      t.equal(r.status, 0, r.stderr)
      const s = said(r.stdout)
      t.match(s.get('remount-root'), /permission denied/i, 'remounting / is refused (EPERM)')
      t.match(s.get('write-root'), /Read-only file system/, "so the pod's root stays read-only (EROFS)")
      t.match(s.get('remount-vol'), /permission denied/i, 'remounting a read-only volume is refused (EPERM)')
      t.match(s.get('write-vol'), /Read-only file system/, 'so it stays read-only (EROFS)')
      t.match(s.get('bind-over'), /permission denied/i, 'no bind mount at all (EPERM)')
      t.match(s.get('write-etc'), /Read-only file system/, "the host's /etc is read-only in the pod")
      t.notOk(fs.existsSync(marker), `nothing appeared on the host's root (${marker})`)
      t.notOk(fs.existsSync('/etc/podctl-escape'), "nor in the host's /etc")
      t.equal(fs.readFileSync(path.join(src, 'data'), 'utf8'), 'host data\n', 'the volume source is unchanged')
    })

    t.test("/proc: no umount to uncover the host's, no way into another process's namespaces, no sysctl", async (t) => {
      const dir = dataDirFor(t, who)
      const hostname = fs.readFileSync('/proc/sys/kernel/hostname', 'utf8')
      const corePattern = fs.readFileSync('/proc/sys/kernel/core_pattern', 'utf8')
      const script = [
        step('umount-proc', 'umount /proc'),
        step('umount-lazy', 'umount -l /proc'),
        'echo "pids=$(ls -d /proc/[0-9]* | wc -l)"',
        step('nsenter', 'nsenter -t 1 -m -u -i -n -p true'),
        step('unshare-mount', 'unshare -m true'),
        step('write-pid1-root', 'touch /proc/1/root/etc/podctl-escape'),
        step('core-pattern', "echo '|/bin/sh -c true' > /proc/sys/kernel/core_pattern"),
        step('hostname-sysctl', 'echo escaped > /proc/sys/kernel/hostname'),
        step('kcore', 'head -c 1 /proc/kcore > /dev/null'),
        step('sysrq', 'echo h > /proc/sysrq-trigger'),
      ].join('\n')
      const r = run(dir, ['run', '--isolation', 'namespaces', '--network', 'none', '--', 'sh', '-c', script])
      t.equal(r.status, 0, r.stderr)
      const s = said(r.stdout)
      t.match(s.get('umount-proc'), /must be superuser|not permitted|permission denied/i, 'umount /proc is refused (EPERM)')
      t.match(s.get('umount-lazy'), /must be superuser|not permitted|permission denied/i, 'a lazy one too')
      t.ok(Number(s.get('pids')) < 10, `/proc shows the pod's few processes only (${s.get('pids')}), not the host's`)
      t.match(s.get('nsenter'), /Operation not permitted|Permission denied/, "joining pid 1's namespaces is refused (its /proc files are closed: the infra is not dumpable)")
      t.match(s.get('unshare-mount'), /Operation not permitted/, 'so is a mount namespace of its own')
      t.match(s.get('write-pid1-root'), /Read-only file system|Permission denied|No such file/, "pid 1's root is the pod's, read-only")
      t.match(s.get('core-pattern'), /Read-only file system/, '/proc/sys is read-only (EROFS)')
      t.match(s.get('hostname-sysctl'), /Read-only file system/, 'every sysctl')
      t.not(s.get('kcore'), 'ok', '/proc/kcore is masked')
      // A kernel without magic SysRq has no such file at all.
      t.match(s.get('sysrq'), fs.existsSync('/proc/sysrq-trigger') ? /Read-only file system/ : /nonexistent|No such file/, '/proc/sysrq-trigger cannot be written')
      t.equal(fs.readFileSync('/proc/sys/kernel/hostname', 'utf8'), hostname, "the host's hostname is unchanged")
      t.equal(fs.readFileSync('/proc/sys/kernel/core_pattern', 'utf8'), corePattern, "the host's core_pattern is unchanged")
      t.notOk(fs.existsSync('/etc/podctl-escape'), "nothing was written in the host's /etc")
    })

    t.test('network none: after every attempt on its namespaces the host loopback stays out of reach', async (t) => {
      const dir = dataDirFor(t, who)
      const server = net.createServer((c) => c.end('host\n'))
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      t.teardown(() => server.close())
      const port = (server.address() as net.AddressInfo).port
      // Bash's /dev/tcp is not there: busybox-free, a plain attempt with the shell's redirection through nc is not assumed either.
      const script = [
        step('nsenter-net', 'nsenter -t 1 -n true'),
        step('unshare-net', 'unshare -n true'),
        `echo "ifaces=$(ls /sys/class/net | tr '\\n' ' ')"`,
        step('connect', `exec 3<>/dev/tcp/127.0.0.1/${port}`),
      ].join('\n')
      const r = run(dir, ['run', '--isolation', 'namespaces', '--network', 'none', '--', 'bash', '-c', script])
      t.equal(r.status, 0, r.stderr)
      const s = said(r.stdout)
      t.match(s.get('nsenter-net'), /Operation not permitted|Permission denied/, 'no way into another network namespace (EPERM, or EACCES: the infra is not dumpable)')
      t.match(s.get('unshare-net'), /Operation not permitted/, 'nor a new one')
      t.equal(s.get('ifaces'), 'lo ', '/sys/class/net lists the pod\'s loopback only, not the host\'s interfaces')
      t.match(s.get('connect'), /Connection refused|Network is unreachable/, "the host's loopback port cannot be reached")
    })

    t.test("devices: a private /dev; the host's devices and device nodes are untouched", async (t) => {
      const dir = dataDirFor(t, who)
      const before = fs.statSync('/dev/null')
      const script = [
        `echo "dev=$(ls /dev | tr '\\n' ' ')"`,
        step('chown-null', 'chown 1:1 /dev/null'),
        step('mknod', 'mknod /tmp/disk b 8 0'),
        step('read-mem', 'head -c 1 /dev/mem'),
        step('kmsg', 'head -c 1 /dev/kmsg'),
      ].join('\n')
      const r = run(dir, ['run', '--isolation', 'namespaces', '--', 'sh', '-c', script])
      t.equal(r.status, 0, r.stderr)
      const s = said(r.stdout)
      t.same(s.get('dev')!.trim().split(' ').sort(), ['fd', 'full', 'mqueue', 'null', 'ptmx', 'pts', 'random', 'shm', 'stderr', 'stdin', 'stdout', 'tty', 'urandom', 'zero'], '/dev holds the standard nodes only')
      t.match(s.get('mknod'), /Operation not permitted/, 'no device node can be made (EPERM)')
      t.match(s.get('read-mem'), /No such file/, 'no /dev/mem (ENOENT)')
      t.match(s.get('kmsg'), /No such file/, 'no /dev/kmsg (ENOENT)')
      const after = fs.statSync('/dev/null')
      t.equal(after.uid, before.uid, "the host's /dev/null keeps its owner, whatever the pod did to its own")
      t.equal(after.mode, before.mode, 'and its mode')
    })

    t.test('cgroups: read-only, so no host process can be killed or moved through them', async (t) => {
      const dir = dataDirFor(t, who)
      const victim: ChildProcess = spawn('sleep', ['60'], { stdio: 'ignore' })
      t.teardown(() => void victim.kill('SIGKILL'))
      await new Promise((r) => victim.once('spawn', r))
      const script = [
        step('remount-cgroup', 'mount -o remount,rw /sys/fs/cgroup'),
        step('kill-v2', 'for f in $(find /sys/fs/cgroup -name cgroup.kill 2>/dev/null); do echo 1 > $f || exit 1; done; echo 1 > /sys/fs/cgroup/unified/cgroup.kill'),
        step('procs', `echo ${victim.pid} > /sys/fs/cgroup/pids/cgroup.procs`),
        step('release-agent', 'echo /x > /sys/fs/cgroup/memory/release_agent'),
      ].join('\n')
      const r = run(dir, ['run', '--isolation', 'namespaces', '--', 'sh', '-c', script])
      t.equal(r.status, 0, r.stderr)
      const s = said(r.stdout)
      t.match(s.get('remount-cgroup'), /permission denied/i, 'remounting cgroupfs is refused (EPERM)')
      t.match(s.get('kill-v2'), /Read-only file system|nonexistent|No such file|Permission denied/, 'cgroup.kill cannot be written')
      t.match(s.get('procs'), /Read-only file system|nonexistent|No such file|Permission denied/, 'nor cgroup.procs')
      t.match(s.get('release-agent'), /Read-only file system|nonexistent|No such file|Permission denied/, 'nor a release agent')
      t.equal(victim.exitCode, null, 'the host process lives on')
      t.equal(victim.signalCode, null)
    })

    t.test("the pod's own root: any mount path works, made in the pod; the host's data dir, /root, /home, /var and /run are not there", async (t) => {
      const dir = dataDirFor(t, who)
      const target = `/srv/podctl-data-${process.pid}`
      // Another pod of the data dir, which this one must not see.
      const neighbour = run(dir, ['prepare', '--', 'true']).stdout.trim()
      const script = [
        step('write-volume', `echo in > ${target}/f`),
        ...['/root', '/home', '/var'].map((p, i) => step(`hidden${i}`, `ls -d ${p}`)),
        // The app's own root is bound at a path of the pod's: nothing of the data dir is there, not even its path.
        step('data', `ls -d ${path.dirname(dir)}`),
        `echo "run=$(ls -A /run | tr '\\n' ' ')"`,
        `echo "apps=$(ls -A /run/podctl/apps | tr '\\n' ' ')"`,
        'echo "root=$PODCTL_APP_ROOT"',
      ].join('\n')
      const m = manifestFile(path.dirname(dir), {
        apiVersion: 'podctl/v1',
        isolation: 'namespaces',
        volumes: [{ name: 'd', kind: 'empty' }],
        apps: [{ name: 'app', exec: ['sh', '-c', script], mounts: [{ volume: 'd', path: target }] }],
      })
      fs.chmodSync(path.dirname(dir), 0o755)
      const r = run(dir, ['run', '--manifest', m])
      t.equal(r.status, 0, r.stderr)
      const s = said(r.stdout)
      t.equal(s.get('write-volume'), 'ok', `a volume at ${target}, which the host does not have, is written`)
      t.notOk(fs.existsSync(target), 'and the mount point was made in the pod, not on the host')
      for (let i = 0; i < 3; i++) t.match(s.get(`hidden${i}`), /No such file/, `${['/root', '/home', '/var'][i]} is not visible (ENOENT)`)
      t.match(s.get('data'), /No such file/, "the data dir's location is not there at all (CONTRACT §12a)")
      t.equal(s.get('run'), '.containerenv podctl ', "/run holds podctl's own place and podman's .containerenv only, not the host's /run")
      t.equal(s.get('apps'), 'app ', "there, the app's own root, and no other pod's or app's")
      t.equal(s.get('root'), '/run/podctl/apps/app', 'PODCTL_APP_ROOT names it')
      t.ok(neighbour, 'while another pod of the data dir was there to be seen')
    })

    t.test('a setuid binary gives an app run as nobody no privilege (no_new_privs, nosuid); with host isolation it does (the contrast)', async (t) => {
      if (rootless) return void t.plan(0, 'only root runs an app as another user')
      const dir = dataDirFor(t, who)
      const bin = path.join(path.dirname(dir), 'suid')
      fs.mkdirSync(bin)
      fs.copyFileSync('/usr/bin/id', path.join(bin, 'id'))
      fs.chmodSync(path.join(bin, 'id'), 0o4755)
      fs.chmodSync(bin, 0o755)
      fs.chmodSync(path.dirname(dir), 0o755)
      const m = (isolation: string): string =>
        manifestFile(path.dirname(dir), {
          apiVersion: 'podctl/v1',
          isolation,
          volumes: [{ name: 'bin', kind: 'host', source: bin, readOnly: true }],
          apps: [{ name: 'nobody', user: 'nobody', exec: [isolation === 'host' ? path.join(bin, 'id') : '/opt/suid/id', '-u'], mounts: [{ volume: 'bin', path: '/opt/suid' }] }],
        }, `${isolation}.json`)
      const iso = run(dir, ['run', '--manifest', m('namespaces')])
      t.equal(iso.status, 0, iso.stderr)
      t.equal(iso.stdout.trim(), '65534', 'in an isolated pod the setuid-root binary runs as nobody')
      const host = run(dir, ['run', '--manifest', m('host')])
      t.equal(host.stdout.trim(), '0', 'as a host process the same binary gets an effective uid of 0 (the check is not vacuous)')
      const ruid = spawnSync('stat', ['-c', '%u', path.join(bin, 'id')], { encoding: 'utf8' }).stdout.trim()
      t.equal(ruid, '0', 'the binary is root-owned and setuid')
    })
  })
}
