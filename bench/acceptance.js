#!/usr/bin/env node
// The side-by-side with podman (CONTRACT §15): the same cases, ported from
// podman's own end-to-end tests (test/e2e/run_*_test.go, images_test.go),
// run through podman and through podctl on the same busybox images, and
// what each prints compared after the differences that must be there are
// normalised away (ids, generated hostnames, podctl's PODCTL_* variables,
// `container=podctl`). A tool for the team, not part of `npm test`:
//   npm run build && node bench/acceptance.js [--only SUBSTRING] [--verbose] [--keep]
// Needs root, podman, runc, umoci, skopeo and busybox-static. podman runs
// with a root, runroot and containers.conf of its own under a temp dir
// (the distribution's containers.conf plus `default_ulimits = []`: root
// here lacks CAP_SYS_RESOURCE, and runc fails on rlimits otherwise), with
// `--cgroup-manager cgroupfs --runtime runc --events-backend file`.
// Where podctl has no flag yet for what a case asks, its side runs from a
// manifest that says the same (marked "manifest" in the table).
// Exit code: 0 when every difference is one CONTRACT names as podctl's by
// design, 1 otherwise.
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const BIN = path.resolve(here, '..', 'bin', 'podctl')
const argv = process.argv.slice(2)
const only = argv.includes('--only') ? argv[argv.indexOf('--only') + 1] : undefined
const verbose = argv.includes('--verbose')
/** Leaves the temp dir (images, both stores) for a look by hand; its path is printed. */
const keep = argv.includes('--keep')

const sh = (cmd, args, opts = {}) => {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: opts.timeout ?? 120_000, env: opts.env ?? process.env, ...(opts.input !== undefined ? { input: opts.input } : { stdio: ['ignore', 'pipe', 'pipe'] }) })
  if (r.error) throw r.error
  return { status: r.status, signal: r.signal, stdout: r.stdout ?? '', stderr: r.stderr ?? '' }
}
const must = (cmd, args, opts) => {
  const r = sh(cmd, args, opts)
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status}: ${r.stderr.trim()}`)
  return r.stdout
}
const has = (tool) => sh('sh', ['-c', `command -v ${tool}`]).status === 0

// ---- the images ------------------------------------------------------------

const PASSWD = 'root:x:0:0:root:/root:/bin/sh\nbin:x:1:1:bin:/bin:/sbin/nologin\napp:x:1000:1000:app user:/home/app:/bin/sh\n'
const GROUP = 'root:x:0:\nbin:x:1:\nwheel:x:10:app\napp:x:1000:\nextra:x:2000:app\n'
const CREATED = '2024-01-02T03:04:05Z'
/** The processes the stop-signal image traps. */
const TRAP = 'trap "echo got QUIT; exit 3" QUIT; trap "echo got TERM; exit 4" TERM; trap "echo got INT; exit 5" INT; echo ready; while :; do sleep 0.1; done'

/** Every image: the base's config changed by umoci config's flags. */
const IMAGES = {
  base: [],
  'ep-empty': ['--config.entrypoint', '', '--config.cmd', 'echo', '--config.cmd', 'from-cmd'],
  'ep-shc': ['--config.entrypoint', '/bin/sh', '--config.entrypoint', '-c', '--config.cmd', 'echo from-cmd'],
  'ep-echo': ['--config.entrypoint', '/bin/echo', '--config.entrypoint', 'ep-arg', '--config.cmd', 'cmd-arg'],
  'ep-shellform': ['--config.entrypoint', '/bin/sh', '--config.entrypoint', '-c', '--config.entrypoint', 'echo shell-form $0 $@', '--config.cmd', 'ignored'],
  nocmd: ['--clear', 'config.cmd'],
  'wd-missing': ['--config.workingdir', '/srv/work', '--config.user', 'app'],
  'wd-exists': ['--config.workingdir', '/srv'],
  'user-name': ['--config.user', 'app'],
  'user-uid': ['--config.user', '1000'],
  'user-nopasswd': ['--config.user', '4242'],
  stop: ['--config.stopsignal', 'SIGQUIT', '--config.cmd', 'sh', '--config.cmd', '-c', '--config.cmd', TRAP],
  'stop-default': ['--config.cmd', 'sh', '--config.cmd', '-c', '--config.cmd', TRAP],
  'prune-old': ['--config.label', 'prune=old'],
}

/** Builds the busybox layout with a tag per image, and a docker-archive of each: what both tools load. */
const buildImages = (work) => {
  const layout = path.join(work, 'layout')
  const bundle = path.join(work, 'bundle')
  must('umoci', ['init', '--layout', layout])
  must('umoci', ['new', '--image', `${layout}:base`])
  must('umoci', ['unpack', '--image', `${layout}:base`, bundle])
  const root = path.join(bundle, 'rootfs')
  for (const d of ['bin', 'etc', 'srv', 'tmp', 'var/tmp', 'run', 'root', 'home/app', 'usr/bin', 'sbin']) fs.mkdirSync(path.join(root, d), { recursive: true })
  fs.chmodSync(path.join(root, 'tmp'), 0o1777)
  fs.chmodSync(path.join(root, 'var/tmp'), 0o1777)
  fs.chownSync(path.join(root, 'home/app'), 1000, 1000)
  const busybox = fs.realpathSync(sh('sh', ['-c', 'command -v busybox']).stdout.trim())
  fs.copyFileSync(busybox, path.join(root, 'bin/busybox'))
  fs.chmodSync(path.join(root, 'bin/busybox'), 0o755)
  for (const applet of must(busybox, ['--list']).split('\n').filter((a) => a !== '' && a !== 'busybox')) fs.symlinkSync('busybox', path.join(root, 'bin', applet))
  const files = {
    'etc/passwd': PASSWD,
    'etc/group': GROUP,
    'etc/hosts': '127.0.0.1\timage-hosts-file\n',
    'etc/resolv.conf': 'nameserver 192.0.2.53\n',
    'etc/hostname': 'image-hostname\n',
    'tmp/image-tmp-file': 'the image\'s own /tmp\n',
    'srv/data': 'data\n',
  }
  for (const [rel, text] of Object.entries(files)) fs.writeFileSync(path.join(root, rel), text)
  must('umoci', ['repack', '--image', `${layout}:base`, bundle])
  must('umoci', ['config', '--image', `${layout}:base`, '--created', CREATED, '--config.env', 'PATH=/usr/sbin:/usr/bin:/sbin:/bin', '--config.env', 'GREETING=hello', '--config.cmd', 'sh', '--config.cmd', '-c', '--config.cmd', 'echo base-cmd', '--config.label', 'team=infra'])
  for (const [tag, flags] of Object.entries(IMAGES)) if (tag !== 'base') must('umoci', ['config', '--image', `${layout}:base`, '--tag', tag, '--created', CREATED, ...flags])
  fs.rmSync(bundle, { recursive: true, force: true })
  const archives = {}
  for (const tag of Object.keys(IMAGES)) {
    archives[tag] = path.join(work, `${tag}.tar`)
    must('skopeo', ['copy', '--quiet', `oci:${layout}:${tag}`, `docker-archive:${archives[tag]}:localhost/acc/${tag}:latest`])
  }
  return archives
}

// ---- the two tools ------------------------------------------------------------

const setUp = (work) => {
  const conf = path.join(work, 'containers.conf')
  // The distribution's settings (its capabilities among them), which CONTAINERS_CONF would otherwise replace.
  const distro = fs.existsSync('/usr/share/containers/containers.conf') ? fs.readFileSync('/usr/share/containers/containers.conf', 'utf8') : '[containers]\n'
  fs.writeFileSync(conf, distro.replace(/^\[containers\]$/m, '[containers]\ndefault_ulimits = []'))
  const podmanGlobal = ['--root', path.join(work, 'podman-root'), '--runroot', path.join(work, 'podman-runroot'), '--cgroup-manager', 'cgroupfs', '--runtime', 'runc', '--events-backend', 'file', '--tmpdir', path.join(work, 'podman-tmp')]
  const env = { ...process.env, CONTAINERS_CONF: conf }
  delete env.NODE_OPTIONS
  const dataDir = path.join(work, 'podctl-data')
  return {
    podman: (args, opts = {}) => sh('podman', [...podmanGlobal, ...args], { ...opts, env: { ...env, ...(opts.env ?? {}) } }),
    podctl: (args, opts = {}) => sh(process.execPath, [BIN, '--dir', dataDir, ...args], { ...opts, env: { ...env, ...(opts.env ?? {}) } }),
    dataDir,
  }
}

// ---- the cases ---------------------------------------------------------------------

/**
 * A case: `image` (a tag of IMAGES) and `args` (what follows the image) for
 * both; `podman` and `podctl` are each tool's own flags for the same thing,
 * or `app`/`pod` manifest fields where podctl has no flag yet. `net` is
 * the network of both (default none). `env` is the callers' environment.
 * `sort` compares the lines sorted. `design` names the CONTRACT's reason
 * when the difference is podctl's by design. `script` runs a case that is
 * more than one `run`.
 */
const PROXY_ENV = { http_proxy: 'http://1.2.3.4:3128', HTTPS_PROXY: 'http://1.2.3.4:3129', no_proxy: 'localhost,127.0.0.1', FTP_PROXY: 'ftp://1.2.3.4' }
const MASKED = ['/proc/acpi', '/proc/kcore', '/proc/keys', '/proc/latency_stats', '/proc/timer_list', '/proc/timer_stats', '/proc/sched_debug', '/proc/scsi', '/sys/firmware', '/sys/fs/selinux']
const READONLY = ['/proc/asound', '/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger']
const shc = (script) => ['sh', '-c', script]
/** busybox-static has no printenv: each variable as `NAME=value`, or `NAME unset`. */
const pe = (...names) => shc(names.map((n) => `[ -n "\${${n}+x}" ] && echo "${n}=\$${n}" || echo "${n} unset"`).join('; '))

const CASES = [
  // entrypoint and cmd (run_entrypoint_test.go)
  { name: 'cmd of the image', image: 'base', args: [] },
  { name: 'cmd replaced by args', image: 'base', args: ['echo', 'hello'] },
  { name: 'Entrypoint [""]: the image Cmd runs', image: 'ep-empty', args: [] },
  { name: 'Entrypoint [""]: args run', image: 'ep-empty', args: ['echo', 'hello'] },
  { name: 'Entrypoint with Cmd', image: 'ep-echo', args: [] },
  { name: 'Entrypoint: args replace Cmd', image: 'ep-echo', args: ['x', 'y'] },
  { name: 'Entrypoint sh -c: args not a program', image: 'ep-shc', args: ['cat /etc/passwd | head -1'] },
  { name: 'shell-form Entrypoint ignores Cmd', image: 'ep-shellform', args: ['extra'] },
  { name: '--entrypoint replaces Entrypoint and Cmd', image: 'ep-echo', args: [], podman: ['--entrypoint', 'uname'], podctl: ['--entrypoint', 'uname'] },
  { name: '--entrypoint with args', image: 'ep-echo', args: ['a', 'b'], podman: ['--entrypoint', '/bin/echo'], podctl: ['--entrypoint', '/bin/echo'] },
  { name: "--entrypoint ''", image: 'ep-echo', args: ['echo', 'hi'], podman: ['--entrypoint', ''], podctl: ['--entrypoint', ''] },
  { name: '--entrypoint JSON array', image: 'base', args: ['echo $0 $1', 'a', 'b'], podman: ['--entrypoint', '["/bin/sh","-c"]'], podctl: ['--entrypoint', '["/bin/sh","-c"]'] },
  { name: 'no Entrypoint, no Cmd, no args', image: 'nocmd', args: [], exitOnly: true, contract: 'CONTRACT §4: bad input is exit 2 (podman: 125)' },
  // environment (run_env_test.go)
  { name: 'environment', image: 'base', args: ['env'], sort: true },
  { name: 'HOME of root', image: 'base', args: pe('HOME') },
  { name: 'HOME of --user app', image: 'base', args: pe('HOME'), podman: ['--user', 'app'], podctl: ['--user', 'app'] },
  { name: 'HOME of a uid without passwd entry', image: 'base', args: pe('HOME'), podman: ['--user', '4242'], podctl: ['--user', '4242'] },
  { name: '-e HOME=/foo', image: 'base', args: pe('HOME'), podman: ['-e', 'HOME=/foo'], podctl: ['-e', 'HOME=/foo'] },
  { name: '-e FOO=BAR,BAZ', image: 'base', args: pe('FOO'), podman: ['-e', 'FOO=BAR,BAZ'], podctl: ['-e', 'FOO=BAR,BAZ'] },
  { name: '-e PATH=/bin', image: 'base', args: pe('PATH'), podman: ['-e', 'PATH=/bin'], podctl: ['-e', 'PATH=/bin'] },
  { name: '-e over the image Env', image: 'base', args: pe('GREETING'), podman: ['-e', 'GREETING=bye'], podctl: ['-e', 'GREETING=bye'] },
  { name: '-e KEY from the caller', image: 'base', args: pe('FOO'), env: { FOO: 'from-caller' }, podman: ['-e', 'FOO'], app: { env: { FOO: 'from-caller' } } },
  { name: '--env-file', image: 'base', args: pe('A', 'B'), podman: ['--env-file', '@envfile'], app: { env: { A: '1', B: 'two words' } } },
  { name: 'proxy variables pass', image: 'base', args: pe('http_proxy', 'HTTPS_PROXY', 'no_proxy', 'FTP_PROXY'), env: PROXY_ENV },
  { name: '--http-proxy=false', image: 'base', args: shc('env | grep -i proxy; true'), env: PROXY_ENV, podman: ['--http-proxy=false'], pod: { httpProxy: false } },
  { name: '-e over a proxy variable', image: 'base', args: pe('http_proxy'), env: PROXY_ENV, podman: ['-e', 'http_proxy=5.6.7.8'], podctl: ['-e', 'http_proxy=5.6.7.8'] },
  // working directory (run_working_dir_test.go)
  { name: 'no WorkingDir', image: 'base', args: ['pwd'] },
  { name: 'image WorkingDir', image: 'wd-exists', args: ['pwd'] },
  { name: 'image WorkingDir missing: made', image: 'wd-missing', args: shc('pwd; stat -c "%U:%G %a" .') },
  { name: '-w missing: exit 126', fails: true, image: 'base', args: shc('pwd; stat -c "%U:%G %a" .'), podman: ['-w', '/home/foobar'], app: { workingDirectory: '/home/foobar' } },
  { name: '-w over the image WorkingDir', image: 'wd-exists', args: ['pwd'], podman: ['-w', '/etc'], app: { workingDirectory: '/etc' } },
  // users (run_passwd_test.go, run_userns_test.go)
  { name: 'image User by name', image: 'user-name', args: shc('id; grep Groups /proc/self/status') },
  { name: 'image User by uid', image: 'user-uid', args: shc('id; grep Groups /proc/self/status') },
  { name: 'image User without passwd entry', image: 'user-nopasswd', args: shc('id; whoami; grep 4242 /etc/passwd; grep Groups /proc/self/status') },
  { name: 'root: supplementary groups', image: 'base', args: shc('id; grep Groups /proc/self/status') },
  { name: '--user app', image: 'base', args: shc('id; grep Groups /proc/self/status'), podman: ['--user', 'app'], podctl: ['--user', 'app'] },
  { name: '--user uid:gid', image: 'base', args: shc('id; grep Groups /proc/self/status'), podman: ['--user', '1000:2000'], podctl: ['--user', '1000:2000'] },
  { name: '--user root:bin', image: 'base', args: shc('id; grep Groups /proc/self/status'), podman: ['--user', 'root:bin'], podctl: ['--user', 'root:bin'] },
  { name: '--user uid without passwd entry, image WorkingDir', image: 'wd-exists', args: shc('tail -1 /etc/passwd; echo $HOME'), podman: ['--user', '4242'], podctl: ['--user', '4242'] },
  { name: 'image WorkingDir missing, --user 4242', image: 'wd-missing', args: shc('whoami; tail -1 /etc/passwd; tail -1 /etc/group; echo $HOME; pwd'), podman: ['--user', '4242'], podctl: ['--user', '4242'] },
  { name: '--user name:gid, gid without group entry', image: 'base', args: shc('id; tail -1 /etc/group'), podman: ['--user', 'app:3000'], podctl: ['--user', 'app:3000'] },
  { name: '--user uid without passwd entry', image: 'base', args: shc('id; whoami; tail -1 /etc/passwd; grep 20001 /etc/group; true'), podman: ['--user', '20001:20001'], podctl: ['--user', '20001:20001'] },
  // files podman makes (run_dns_test.go, run_test.go)
  { name: '/etc/hosts (network none)', image: 'base', args: ['cat', '/etc/hosts'] },
  { name: '/etc/hosts (network host)', image: 'base', args: ['cat', '/etc/hosts'], net: 'host', contract: "CONTRACT §9: an isolated pod's hostname is its own, also on the host's network, and its /etc/hosts names it (podman's container takes the host's name, which the host's entries name)" },
  { name: '/etc/resolv.conf (network none)', image: 'base', args: ['cat', '/etc/resolv.conf'] },
  { name: '/etc/resolv.conf (network host)', image: 'base', args: ['cat', '/etc/resolv.conf'], net: 'host' },
  { name: '/etc/hostname and hostname (network host)', image: 'base', args: shc('cat /etc/hostname; echo; hostname'), net: 'host', contract: "CONTRACT §9: an isolated pod's hostname is its name or the first 8 characters of its UUID (podman: the host's, with the host's network)" },
  { name: '/etc/hostname and hostname', image: 'base', args: shc('cat /etc/hostname; hostname; echo $HOSTNAME') },
  { name: '--hostname', image: 'base', args: shc('cat /etc/hostname; hostname; echo $HOSTNAME; grep acc-host /etc/hosts'), podman: ['--hostname', 'acc-host'], pod: { hostname: 'acc-host' } },
  { name: '/run/.containerenv', image: 'base', args: shc('ls -l /run/.containerenv | cut -c1-10; wc -c < /run/.containerenv') },
  // mounts (run_test.go, run_passwd_test.go)
  { name: '/dev is noexec', image: 'base', args: shc("grep -E '^\\S+ /dev ' /proc/mounts") },
  { name: '/dev holds', image: 'base', args: shc('ls -A /dev | sort') },
  { name: "the image's /tmp", image: 'base', args: shc("cat /tmp/image-tmp-file; grep -c ' /tmp ' /proc/mounts; true") },
  { name: '--read-only: tmpfs on /run, /tmp, /var/tmp', image: 'base', args: shc("cat /tmp/image-tmp-file; stat -c '%n %a' /run /tmp /var/tmp; grep -E ' /(run|tmp|var/tmp) ' /proc/mounts | cut -d' ' -f1-4 | sort; for d in /run /tmp /var/tmp /etc; do touch $d/x 2>/dev/null && echo $d writable || echo $d read-only; done"), podman: ['--read-only'], app: { readOnlyRootFilesystem: true } },
  { name: 'system mounts', image: 'base', args: shc("grep -E ' /(proc|dev|dev/pts|dev/shm|dev/mqueue|sys) ' /proc/mounts | cut -d' ' -f1-4 | sort") },
  { name: 'masked paths', image: 'base', args: shc(`for p in ${MASKED.join(' ')}; do printf '%s ' $p; (ls -A $p 2>/dev/null || cat $p 2>/dev/null) | wc -c; done`) },
  { name: 'read-only paths', image: 'base', args: shc(`for p in ${READONLY.join(' ')}; do [ -e $p ] || continue; printf '%s ' $p; awk -v p=$p '$2==p {print $4}' /proc/mounts | cut -d, -f1; done`) },
  // security (run_privileged_test.go, run_cap_test.go)
  { name: 'capabilities', image: 'base', args: ['grep', 'Cap', '/proc/self/status'] },
  { name: 'capabilities of --user app', image: 'base', args: ['grep', 'Cap', '/proc/self/status'], podman: ['--user', 'app'], podctl: ['--user', 'app'] },
  { name: '--cap-add all', image: 'base', args: ['grep', 'CapEff', '/proc/self/status'], podman: ['--cap-add', 'all'], app: { capabilities: { add: ['ALL'] } } },
  { name: '--cap-drop all', image: 'base', args: ['grep', 'CapEff', '/proc/self/status'], podman: ['--cap-drop', 'all'], app: { capabilities: { drop: ['ALL'] } } },
  { name: '--cap-add net_raw --cap-drop chown', image: 'base', args: ['grep', 'CapEff', '/proc/self/status'], podman: ['--cap-add', 'net_raw', '--cap-drop', 'chown'], app: { capabilities: { add: ['NET_RAW'], drop: ['CHOWN'] } } },
  { name: '--privileged', image: 'base', args: shc('grep -E "CapEff|Seccomp:" /proc/self/status; grep -E " /sys sysfs" /proc/mounts | cut -d" " -f4 | cut -d, -f1'), podman: ['--privileged'], app: { privileged: true } },
  { name: 'seccomp filter on', image: 'base', args: ['grep', 'Seccomp:', '/proc/self/status'] },
  { name: 'no_new_privs', image: 'base', args: ['grep', 'NoNewPrivs', '/proc/self/status'], design: 'CONTRACT §12: no_new_privs set' },
  { name: 'pid 1', image: 'base', args: shc('cat /proc/1/comm; echo $$'), design: 'CONTRACT §12: the infra is pid 1 of the pod' },
  // limits (run_memory_test.go, run_cpu_test.go, run_test.go)
  { name: 'pids.max default 2048', image: 'base', args: ['cat', '/sys/fs/cgroup/pids/pids.max'] },
  { name: '--pids-limit 0: none', image: 'base', args: ['cat', '/sys/fs/cgroup/pids/pids.max'], podman: ['--pids-limit', '0'], pod: { resources: { pids: 0 } } },
  { name: '--pids-limit 100', design: 'CONTRACT §12: the infra is one process of the pod, and the pod is given one more than asked for it (the default 2048 counts it)', image: 'base', args: ['cat', '/sys/fs/cgroup/pids/pids.max'], podman: ['--pids-limit', '100'], podctl: ['--pids-limit', '100'] },
  { name: '--memory 40m', image: 'base', args: ['cat', '/sys/fs/cgroup/memory/memory.limit_in_bytes'], podman: ['--memory', '40m'], podctl: ['--memory', '40m'] },
  { name: '--memory 40m: swap', image: 'base', args: ['cat', '/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes'], podman: ['--memory', '40m'], podctl: ['--memory', '40m'], design: 'CONTRACT §12/§15: no swap beyond a memory limit' },
  { name: '--cpus 0.5', image: 'base', args: shc('cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us'), podman: ['--cpus', '0.5'], podctl: ['--cpus', '0.5'] },
  { name: 'OOM: exit 137', image: 'base', args: ['dd', 'if=/dev/zero', 'of=/dev/null', 'bs=256M', 'count=1'], podman: ['--memory', '20m'], podctl: ['--memory', '20m'], exitOnly: true },
  // exit codes (run_exit_test.go)
  { name: 'exit 127: no such program', image: 'base', args: ['foobar'], exitOnly: true },
  { name: 'exit 126: not executable', image: 'base', args: ['/etc'], exitOnly: true },
  { name: 'exit 50', image: 'base', args: shc('exit 50') },
  { name: 'a child killed by SIGKILL: 137', image: 'base', args: shc('sleep 10 & kill -9 $!; wait $!') },
  { name: 'a child killed by SIGTERM: 143', image: 'base', args: shc('sleep 10 & kill -TERM $!; wait $!') },
  { name: 'the app kills itself: SIGKILL', image: 'base', args: shc('kill -9 $$; echo survived'), design: 'CONTRACT §12: the infra is pid 1; the app is not, and the kernel does not shield it from its own signals' },
]

/** Cases of more than one command: each returns { podman, podctl } outputs. */
const SCRIPTS = [
  {
    name: 'stop sends the image StopSignal (SIGQUIT)',
    run: (t) => stopCase(t, 'stop'),
  },
  {
    name: 'stop sends SIGTERM by default',
    run: (t) => stopCase(t, 'stop-default'),
  },
  {
    name: 'image list: names and tags',
    run: ({ podman, podctl }) => ({
      podman: lines(must2(podman(['images', '--format', '{{.Repository}}:{{.Tag}}']))).join('\n'),
      podctl: lines(JSON.parse(must2(podctl(['image', 'list', '--format', 'json']))).map((i) => `${i.name}:${i.tag}`).join('\n')).join('\n'),
    }),
  },
  {
    name: 'image inspect: config',
    run: ({ podman, podctl }) => {
      const keys = ['Entrypoint', 'Cmd', 'Env', 'WorkingDir', 'User', 'Labels', 'StopSignal']
      const pick = (c) => keys.map((k) => `${k}=${JSON.stringify(c?.[k] === '' ? null : (c?.[k] ?? null))}`).join('\n')
      const out = { podman: '', podctl: '' }
      for (const tag of ['base', 'ep-empty', 'wd-missing', 'stop']) {
        out.podman += `${tag}:\n${pick(JSON.parse(must2(podman(['image', 'inspect', `localhost/acc/${tag}`])))[0].Config)}\n`
        out.podctl += `${tag}:\n${pick(podctlConfig(podctl, `localhost/acc/${tag}`))}\n`
      }
      return out
    },
  },
  {
    name: 'image inspect: created, size',
    run: ({ podman, podctl }) => {
      const p = JSON.parse(must2(podman(['image', 'inspect', 'localhost/acc/base'])))[0]
      const c = JSON.parse(must2(podctl(['image', 'list', '--format', 'json']))).find((i) => i.name === 'localhost/acc/base')
      return { podman: `created=${new Date(p.Created).toISOString()}\nsize=${p.Size}`, podctl: `created=${new Date(c.created).toISOString()}\nsize=${c.size_bytes}` }
    },
  },
  {
    name: 'image ID (config digest) names the image',
    run: ({ podman, podctl }) => {
      const id = must2(podman(['images', '--format', '{{.ID}}', 'localhost/acc/base'])).trim()
      const a = podman(['run', '--rm', '--network', 'none', id, 'echo', 'by-id'])
      const b = podctl(['run', '--network', 'none', '--image', id, '--', 'echo', 'by-id'])
      return { podman: `${a.stdout}exit=${a.status}`, podctl: `${b.stdout}exit=${b.status}` }
    },
  },
  {
    name: 'short name resolves (acc/base)',
    run: ({ podman, podctl }) => {
      const a = podman(['run', '--rm', '--network', 'none', 'acc/base', 'echo', 'short'])
      const b = podctl(['run', '--network', 'none', '--image', 'acc/base', '--', 'echo', 'short'])
      return { podman: `${a.stdout}exit=${a.status}`, podctl: `${b.stdout}exit=${b.status}` }
    },
  },
  {
    name: 'image prune: a replaced image goes',
    run: ({ podman, podctl }) => {
      // prune-old's name moves to another image: the old one is no one's, and prune removes it.
      must2(podman(['tag', 'localhost/acc/base', 'localhost/acc/prune-old']))
      must2(podctl(['image', 'tag', 'localhost/acc/base', 'localhost/acc/prune-old']))
      must2(podman(['image', 'prune', '-f']))
      must2(podctl(['image', 'prune']))
      const pm = must2(podman(['images', '--format', '{{.Repository}}:{{.Tag}}']))
      const pc = JSON.parse(must2(podctl(['image', 'list', '--format', 'json']))).map((i) => `${i.name}:${i.tag}`).join('\n')
      return { podman: lines(pm).join('\n'), podctl: lines(pc).join('\n') }
    },
  },
]

const lines = (s) => s.split('\n').filter((l) => l !== '').sort()
const must2 = (r) => {
  if (r.status !== 0) throw new Error(`exit ${r.status}: ${r.stderr.trim()}`)
  return r.stdout
}

/** The image config as podctl's `image inspect` gives it, in podman's keys (podman leaves an empty one out). */
const podctlConfig = (podctl, name) => {
  const c = JSON.parse(must2(podctl(['image', 'inspect', '--format', 'json', name])))
  const orNull = (v) => (v === '' || v === undefined ? null : v)
  return { Entrypoint: c.entrypoint, Cmd: c.cmd, Env: c.env, WorkingDir: orNull(c.working_dir), User: orNull(c.user), Labels: c.labels, StopSignal: c.stop_signal }
}

const waitFor = (read, what, ms = 15_000) => {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (read().includes(what)) return true
    sh('sleep', ['0.1'])
  }
  return false
}

/** `stop` of a running app that traps signals: what it printed, and its exit code. */
const stopCase = ({ podman, podctl }, tag) => {
  const name = `acc-${tag}`
  must2(podman(['run', '-d', '--name', name, '--network', 'none', `localhost/acc/${tag}`]))
  waitFor(() => podman(['logs', name]).stdout, 'ready')
  podman(['stop', '-t', '5', name])
  const pm = `${podman(['logs', name]).stdout}exit=${podman(['inspect', '--format', '{{.State.ExitCode}}', name]).stdout.trim()}`
  podman(['rm', '-f', name])
  const uuid = must2(podctl(['run', '--detach', '--quiet', '--network', 'none', '--image', `localhost/acc/${tag}`])).trim()
  waitFor(() => podctl(['logs', uuid]).stdout, 'ready')
  podctl(['stop', '--timeout', '5s', uuid])
  const status = podctl(['status', uuid]).stdout
  const code = /^app-[^=]+=(\d+)$/m.exec(status)?.[1] ?? '?'
  const pc = `${podctl(['logs', uuid]).stdout}exit=${code}`
  podctl(['rm', uuid])
  return { podman: pm, podctl: pc }
}

let caseNo = 0

/** Runs one case through both tools. */
const runCase = (t, c, work) => {
  const net = c.net ?? 'none'
  const env = c.env ?? {}
  const cid = path.join(work, 'cid')
  const uuidFile = path.join(work, 'uuid')
  fs.rmSync(cid, { force: true })
  fs.rmSync(uuidFile, { force: true })
  const podmanFlags = (c.podman ?? []).map((a) => (a === '@envfile' ? envFile(work) : a))
  // A name of podman's own making would show in /etc/hosts: one known, taken out below (a pod without a name has none).
  const name = `acc-case-${++caseNo}`
  const p = t.podman(['run', '--rm', '--name', name, '--cidfile', cid, '--network', net, ...podmanFlags, `localhost/acc/${c.image}`, ...c.args], { env })
  let q
  let via = 'flags'
  if (c.app !== undefined || c.pod !== undefined) {
    via = 'manifest'
    const manifest = path.join(work, 'manifest.json')
    fs.writeFileSync(
      manifest,
      JSON.stringify({ apiVersion: 'podctl/v1', network: net, ...(c.pod ?? {}), apps: [{ name: 'app', image: `localhost/acc/${c.image}`, ...(c.args.length > 0 ? { exec: c.args } : {}), ...(c.app ?? {}) }] }),
    )
    q = t.podctl(['run', '--uuid-file-save', uuidFile, '--manifest', manifest, ...(c.podctl ?? [])], { env })
  } else {
    q = t.podctl(['run', '--uuid-file-save', uuidFile, '--network', net, '--image', `localhost/acc/${c.image}`, ...(c.podctl ?? []), '--', ...c.args], { env })
  }
  const id = fs.existsSync(cid) ? fs.readFileSync(cid, 'utf8').trim() : ''
  const uuid = fs.existsSync(uuidFile) ? fs.readFileSync(uuidFile, 'utf8').trim() : ''
  const norm = (s, ids) => {
    let out = s
    for (const i of ids) if (i) out = out.split(i).join('<id>')
    out = out
      .split('\n')
      .filter((l) => !l.startsWith('PODCTL_'))
      .map((l) => l.replace(/^container=podctl$/, 'container=podman'))
      .join('\n')
    return c.sort ? lines(out).join('\n') : out.replace(/\n+$/, '')
  }
  const show = (r, ids) => (c.exitOnly ? `exit=${r.status}` : `${norm(r.stdout, ids)}\nexit=${r.status}`)
  return {
    podman: show(p, [id, id.slice(0, 12)]).split(` ${name}`).join(''),
    podctl: show(q, [uuid, uuid.slice(0, 8)]),
    via,
    stderr: { podman: p.stderr.trim(), podctl: q.stderr.trim() },
    // podman could not run what the case asks: the case is wrong, not either tool.
    broken: !c.exitOnly && !c.fails && (p.status === 125 || p.status === 126 || p.status === 127),
  }
}

const envFile = (work) => {
  const f = path.join(work, 'env-file')
  fs.writeFileSync(f, '# a comment\nA=1\nB=two words\n')
  return f
}

/** Mounts below `dir`, deepest first, so that rm -rf never reaches through one. */
const mountsUnder = (dir) =>
  fs
    .readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4]?.replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8))))
    .filter((p) => p !== undefined && (p === dir || p.startsWith(`${dir}/`)))
    .sort((a, b) => b.length - a.length)

const main = () => {
  if (process.getuid?.() !== 0) return fail('run it as root (podman and podctl side by side, rootful)')
  for (const tool of ['podman', 'runc', 'umoci', 'skopeo', 'busybox']) if (!has(tool)) return fail(`${tool} is not installed`)
  if (!fs.existsSync(path.resolve(here, '..', 'dist', 'bundle'))) return fail('build podctl first: npm run build')
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-acceptance-'))
  const t = setUp(work)
  // podman's conmon leaves a file `oom` in its working directory after an OOM kill: here, not in the caller's.
  const cwd = process.cwd()
  process.chdir(work)
  const results = []
  try {
    process.stderr.write(`acceptance: building images in ${work}\n`)
    const archives = buildImages(work)
    for (const file of Object.values(archives)) {
      must2(t.podman(['load', '-i', file]))
      must2(t.podctl(['image', 'import', `docker-archive:${file}`]))
    }
    for (const c of CASES) {
      if (only && !c.name.includes(only)) continue
      process.stderr.write(`acceptance: ${c.name}\n`)
      const r = runCase(t, c, work)
      results.push({ name: c.name, ...r, design: c.design, contract: c.contract })
    }
    for (const s of SCRIPTS) {
      if (only && !s.name.includes(only)) continue
      process.stderr.write(`acceptance: ${s.name}\n`)
      let r
      try {
        r = s.run(t)
      } catch (er) {
        r = { podman: '', podctl: `(failed: ${er.message})` }
      }
      results.push({ name: s.name, ...r, via: 'script', design: s.design })
    }
  } finally {
    if (keep) {
      process.chdir(cwd)
      process.stderr.write(`acceptance: kept ${work} (podman: CONTAINERS_CONF=${work}/containers.conf podman --root ${work}/podman-root --runroot ${work}/podman-runroot ...)\n`)
      report(results)
      return
    }
    t.podman(['rm', '-af'])
    t.podman(['system', 'reset', '-f'])
    t.podctl(['gc', '--grace-period', '0s'])
    process.chdir(cwd)
    for (const m of mountsUnder(work)) sh('umount', ['-l', m])
    fs.rmSync(work, { recursive: true, force: true })
  }
  report(results)
}

const fail = (why) => {
  process.stderr.write(`acceptance: ${why}\n`)
  process.exitCode = 2
}

const report = (results) => {
  const width = Math.max(...results.map((r) => r.name.length))
  let same = 0
  let design = 0
  let contract = 0
  let diff = 0
  const out = []
  for (const r of results) {
    const equal = r.podman === r.podctl && !r.broken
    const verdict = r.broken ? 'BROKEN' : equal ? 'same' : r.design ? 'by design' : r.contract ? 'by contract' : 'DIFFERENT'
    if (equal) same++
    else if (r.design) design++
    else if (r.contract) contract++
    else diff++
    out.push(`${r.name.padEnd(width)}  ${verdict.padEnd(11)}  ${r.via}`)
  }
  out.push('', `${results.length} cases: ${same} same, ${design} different by design (CONTRACT §15's list), ${contract} different as another CONTRACT section says, ${diff} different`, '')
  for (const r of results) {
    if (r.podman === r.podctl && !r.broken && !verbose) continue
    out.push(`--- ${r.name}${r.design ? ` (by design: ${r.design})` : r.contract ? ` (by contract: ${r.contract})` : ''}`)
    out.push('podman:', indent(r.podman), 'podctl:', indent(r.podctl))
    if (verbose || ((r.podman !== r.podctl || r.broken) && r.stderr)) {
      if (r.stderr?.podman) out.push('podman stderr:', indent(r.stderr.podman))
      if (r.stderr?.podctl) out.push('podctl stderr:', indent(r.stderr.podctl))
    }
  }
  process.stdout.write(`${out.join('\n')}\n`)
  process.exitCode = diff > 0 ? 1 : 0
}

const indent = (s) => s.split('\n').map((l) => `    ${l}`).join('\n')

main()
