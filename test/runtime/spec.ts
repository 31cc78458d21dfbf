// The OCI configs of an isolated pod (lib/runtime/spec.ts, CONTRACT §12):
// the infra's, which makes the pod's namespaces and cgroup, and each
// app's, which joins them by path and has its own mount namespace,
// capabilities, seccomp and cgroup below the pod's. Pure functions: every
// fact about the host is passed in.
import t from 'tap'
import { MASKED_PATHS, READONLY_PATHS, appCgroup, appConfig, infraConfig, podCgroup, type AppSpec, type PodSpec } from '../../lib/runtime/spec.js'

const UUID = '8c3b1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'
const INFRA = 4242

const pod = (over: Partial<PodSpec> = {}): PodSpec => ({
  uuid: UUID,
  hostname: 'web',
  rootfs: `/data/pods/run/${UUID}/rootfs`,
  infraRoot: '/data/runtime/infra',
  network: 'host',
  cgroups: true,
  hostDirs: [{ path: '/usr' }, { path: '/bin', link: 'usr/bin' }, { path: '/etc' }],
  ...over,
})

const app = (over: Partial<AppSpec> = {}): AppSpec => ({
  name: 'main',
  args: ['sleep', '60'],
  env: { A: '1', PODCTL_APP_NAME: 'main' },
  cwd: `/data/pods/run/${UUID}/apps/main`,
  uid: 0,
  gid: 0,
  capabilities: ['CAP_CHOWN', 'CAP_KILL'],
  seccomp: { defaultAction: 'SCMP_ACT_ERRNO', syscalls: [{ names: ['read'], action: 'SCMP_ACT_ALLOW' }] },
  privileged: false,
  noNewPrivileges: true,
  mounts: [{ source: `/data/pods/run/${UUID}/apps/main`, target: `/data/pods/run/${UUID}/apps/main`, readOnly: false }, { source: '/srv/v', target: '/data', readOnly: true }],
  ...over,
})

type Config = any
const mountAt = (c: Config, dest: string): any => (c.mounts as any[]).find((m) => m.destination === dest)

t.test('the contract’s masked and read-only paths are there', async (t) => {
  for (const p of ['/proc/acpi', '/proc/kcore', '/proc/keys', '/proc/latency_stats', '/proc/timer_list', '/proc/timer_stats', '/proc/sched_debug', '/proc/scsi', '/sys/firmware', '/sys/fs/selinux']) t.ok(MASKED_PATHS.includes(p), `${p} masked`)
  t.strictSame([...READONLY_PATHS].sort(), ['/proc/asound', '/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'].sort(), 'read-only paths')
  t.equal(podCgroup(UUID), `/podctl/${UUID}`)
  t.equal(appCgroup(UUID, 'web'), `/podctl/${UUID}/app-web`, "an app's cgroup is below its pod's, with a prefix no cgroup file has")
})

t.test('infraConfig: makes the pod’s namespaces, holds nothing it could misuse', async (t) => {
  const c: Config = infraConfig(pod({ network: 'none' }), { memoryBytes: 64 * 1024 * 1024, cpuCores: 0.5, pids: 100 })
  t.equal(c.ociVersion, '1.0.2')
  t.strictSame(c.linux.namespaces, [{ type: 'pid' }, { type: 'ipc' }, { type: 'uts' }, { type: 'mount' }, { type: 'cgroup' }, { type: 'network' }], 'new namespaces, none joined; net with network none')
  t.strictSame(c.process.capabilities, { bounding: [], effective: [], permitted: [], inheritable: [], ambient: [] }, 'no capability at all')
  t.equal(c.process.noNewPrivileges, true)
  t.strictSame(c.root, { path: '/data/runtime/infra', readonly: true }, 'a root of its own, read-only: catatonit alone (CONTRACT §12a)')
  t.strictSame(c.process.args, ['/catatonit', '-P'], 'catatonit, paused')
  t.strictSame(c.mounts.map((m: any) => m.destination), ['/proc', '/dev'], "its /proc and a /dev tmpfs, none of the host's directories")
  t.equal(c.hostname, 'web')
  t.equal(c.linux.cgroupsPath, `/podctl/${UUID}`)
  t.strictSame(c.linux.resources.memory, { limit: 67108864, swap: 67108864 }, 'pod limits: memory with swap equal to it (no swap beyond)')
  t.strictSame(c.linux.resources.cpu, { quota: 50000, period: 100000 })
  t.strictSame(c.linux.resources.pids, { limit: 100 })
  t.strictSame(c.linux.resources.devices, [{ allow: false, access: 'rwm' }], 'no host device')
  t.strictSame(c.linux.maskedPaths, MASKED_PATHS)
  t.strictSame(c.linux.readonlyPaths, READONLY_PATHS)
  t.notOk(c.linux.seccomp, 'its own seccomp: none needed, it has no capability')
  t.notOk(c.linux.uidMappings, 'no user namespace without an id map')
  const host: Config = infraConfig(pod(), undefined)
  t.notOk(host.linux.namespaces.some((n: any) => n.type === 'network'), 'network host: no network namespace')
  t.strictSame(host.linux.resources, { devices: [{ allow: false, access: 'rwm' }] }, 'no limits: only the device rule')
  const priv: Config = infraConfig(pod({ privilegedApps: true }), undefined)
  t.strictSame(priv.linux.resources.devices, [{ allow: true, access: 'rwm' }], "a pod with a privileged app: the pod's device cgroup lets it have the host's")
})

t.test('appConfig: joins the infra’s namespaces by path, with its own mount namespace', async (t) => {
  const c: Config = appConfig(pod({ network: 'none', idMap: { uid: [{ containerID: 0, hostID: 500000000, size: 65536 }], gid: [{ containerID: 0, hostID: 500000000, size: 65536 }] } }), app(), INFRA)
  t.strictSame(c.linux.namespaces, [
    { type: 'pid', path: `/proc/${INFRA}/ns/pid` },
    { type: 'ipc', path: `/proc/${INFRA}/ns/ipc` },
    { type: 'uts', path: `/proc/${INFRA}/ns/uts` },
    { type: 'mount' },
    { type: 'cgroup', path: `/proc/${INFRA}/ns/cgroup` },
    { type: 'network', path: `/proc/${INFRA}/ns/net` },
    { type: 'user', path: `/proc/${INFRA}/ns/user` },
  ], 'pid, ipc, uts, cgroup, net and user joined by path; mount its own')
  t.strictSame(c.linux.uidMappings, [{ containerID: 0, hostID: 500000000, size: 65536 }], 'the id map, for the runtime')
  t.strictSame(c.linux.gidMappings, [{ containerID: 0, hostID: 500000000, size: 65536 }])
  const host: Config = appConfig(pod(), app(), INFRA)
  t.strictSame(host.linux.namespaces.map((n: any) => n.type), ['pid', 'ipc', 'uts', 'mount', 'cgroup'], 'network host, no id map: no net or user namespace')
  const noCg: Config = appConfig(pod({ cgroups: false }), app({ resources: { pids: 5 } }), INFRA)
  t.notOk(noCg.linux.cgroupsPath, 'no cgroups (rootless on cgroup v1): no cgroup path')
  t.notOk(noCg.linux.resources, 'no resources')
  t.notOk(noCg.linux.namespaces.some((n: any) => n.type === 'cgroup'), 'no cgroup namespace')
  t.notOk(mountAt(noCg, '/sys/fs/cgroup'), 'no cgroupfs')
})

t.test('appConfig: the process, its capabilities, seccomp and mounts', async (t) => {
  const a = app({ uid: 65534, gid: 65534 })
  const c: Config = appConfig(pod(), a, INFRA)
  t.strictSame(c.process.user, { uid: 65534, gid: 65534, additionalGids: [] }, 'its user, no supplementary groups')
  t.strictSame(c.process.args, ['sleep', '60'])
  t.ok(c.process.env.includes('A=1') && c.process.env.includes('PODCTL_APP_NAME=main'), 'its environment as KEY=VALUE')
  t.equal(c.process.cwd, a.cwd)
  t.strictSame(c.process.capabilities, { bounding: ['CAP_CHOWN', 'CAP_KILL'], effective: ['CAP_CHOWN', 'CAP_KILL'], permitted: ['CAP_CHOWN', 'CAP_KILL'], inheritable: [], ambient: [] }, 'bounding, effective and permitted: its set; nothing inherited')
  t.equal(c.process.noNewPrivileges, true)
  t.equal(c.process.terminal, false)
  t.strictSame(c.linux.seccomp, a.seccomp)
  t.strictSame(c.linux.maskedPaths, MASKED_PATHS)
  t.strictSame(c.linux.readonlyPaths, READONLY_PATHS)
  t.strictSame(c.root, { path: pod().rootfs, readonly: true })
  t.equal(c.linux.cgroupsPath, `/podctl/${UUID}/app-main`)
  t.strictSame(c.linux.resources, { devices: [{ allow: false, access: 'rwm' }] }, 'no limits of its own: the device rule only')
  t.match(mountAt(c, '/proc'), { type: 'proc' })
  t.match(mountAt(c, '/dev'), { type: 'tmpfs', options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'] }, 'a private /dev')
  t.ok(mountAt(c, '/dev/pts').options.includes('newinstance') && mountAt(c, '/dev/pts').options.includes('gid=5'), 'its own devpts, tty group 5')
  t.match(mountAt(c, '/dev/shm'), { type: 'tmpfs' })
  t.match(mountAt(c, '/dev/mqueue'), { type: 'mqueue' })
  t.match(mountAt(c, '/tmp'), { type: 'tmpfs', options: ['nosuid', 'nodev', 'mode=1777'] }, 'a private /tmp')
  t.match(mountAt(c, '/sys'), { type: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] }, 'a new sysfs, read-only')
  t.match(mountAt(c, '/sys/fs/cgroup'), { type: 'cgroup', options: ['nosuid', 'noexec', 'nodev', 'relatime', 'ro'] }, 'cgroupfs read-only')
  t.match(mountAt(c, '/etc'), { type: 'bind', source: '/etc', options: ['rbind', 'nosuid', 'nodev', 'ro'] }, "the host's /etc read-only")
  t.match(mountAt(c, a.cwd), { type: 'bind', source: a.cwd, options: ['rbind', 'nosuid', 'nodev'] }, 'its root writable, at its host path')
  t.match(mountAt(c, '/data'), { source: '/srv/v', options: ['rbind', 'nosuid', 'nodev', 'ro'] }, 'a read-only volume at its mount path')
  const dests = (c.mounts as any[]).map((m) => m.destination)
  t.ok(dests.indexOf('/dev') < dests.indexOf('/dev/pts') && dests.indexOf('/sys') < dests.indexOf('/sys/fs/cgroup'), 'parents before what is mounted in them')
  t.equal((appConfig(pod(), app({ terminal: true }), INFRA) as Config).process.terminal, true, 'a terminal when asked (enter -t)')
})

t.test('appConfig: resources of an app', async (t) => {
  const c: Config = appConfig(pod(), app({ resources: { memoryBytes: 32 * 1024 * 1024, cpuCores: 2, pids: 64 } }), INFRA)
  t.strictSame(c.linux.resources, {
    devices: [{ allow: false, access: 'rwm' }],
    memory: { limit: 33554432, swap: 33554432 },
    cpu: { quota: 200000, period: 100000 },
    pids: { limit: 64 },
  }, 'memory with swap equal to it, two cores as a quota of two periods, pids')
  t.strictSame((appConfig(pod(), app({ resources: { cpuCores: 0.01 } }), INFRA) as Config).linux.resources.cpu, { quota: 1000, period: 100000 }, 'the smallest share: 1 ms of 100')
})

t.test('appConfig: privileged differs in every place that makes the boundary', async (t) => {
  const plain: Config = appConfig(pod(), app(), INFRA)
  const c: Config = appConfig(pod(), app({ privileged: true, seccomp: undefined, noNewPrivileges: false }), INFRA)
  t.notOk('maskedPaths' in c.linux, 'nothing masked')
  t.notOk('readonlyPaths' in c.linux, 'nothing read-only')
  t.notOk('seccomp' in c.linux, 'no seccomp')
  t.equal(c.process.noNewPrivileges, false)
  t.strictSame(mountAt(c, '/dev'), { destination: '/dev', type: 'bind', source: '/dev', options: ['rbind'] }, "the host's /dev")
  t.strictSame(c.linux.resources.devices, [{ allow: true, access: 'rwm' }], 'every device allowed')
  t.notOk(mountAt(c, '/sys').options.includes('ro'), 'sysfs writable')
  t.notOk(mountAt(c, '/sys/fs/cgroup').options.includes('ro'), 'cgroupfs writable')
  t.strictSame(mountAt(c, '/etc').options, ['rbind', 'ro'], 'binds without nosuid or nodev')
  t.strictSame(mountAt(plain, '/etc').options, ['rbind', 'nosuid', 'nodev', 'ro'], 'which the plain app has')
  t.strictSame(mountAt(c, '/data').options, ['rbind', 'ro'], 'a read-only volume stays read-only')
})

t.test('a pod with its own user namespace', async (t) => {
  const idMap = { uid: [{ containerID: 0, hostID: 1000, size: 1 }], gid: [{ containerID: 0, hostID: 1000, size: 1 }] }
  const infra: Config = infraConfig(pod({ idMap }), undefined)
  t.ok(infra.linux.namespaces.some((n: any) => n.type === 'user' && n.path === undefined), 'the infra makes the user namespace')
  t.strictSame(infra.linux.uidMappings, idMap.uid)
  t.strictSame(infra.linux.gidMappings, idMap.gid)
  const c: Config = appConfig(pod({ idMap }), app(), INFRA)
  t.notOk(mountAt(c, '/dev/pts').options.some((o: string) => o.startsWith('gid=')), 'devpts without gid=5, which the map may not hold')
  t.match(mountAt(c, '/sys'), { type: 'bind', source: '/sys', options: ['rbind', 'nosuid', 'noexec', 'nodev', 'ro'] }, "network host: the host's /sys bound read-only (a user namespace may not mount a sysfs of a network namespace it does not own)")
  const none: Config = appConfig(pod({ idMap, network: 'none' }), app(), INFRA)
  t.match(mountAt(none, '/sys'), { type: 'sysfs' }, 'network none: a new sysfs of its own network namespace')
})
