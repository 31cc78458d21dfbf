// The OCI configs of an isolated pod (lib/runtime/generate/, CONTRACT §12):
// the infra's, which makes the pod's namespaces and cgroup, and each
// app's, which joins them by path and has its own mount namespace,
// capabilities, seccomp and cgroup below the pod's. Pure functions of the
// facts gathered for them: every fact about the host is passed in.
import t from 'tap'
import { appSpec, infraSpec, type AppFacts, type Bind, type PodFacts } from '../../lib/runtime/generate/index.js'
import { appCgroup, podCgroup } from '../../lib/runtime/generate/resources.js'
import { MASKED_PATHS, READONLY_PATHS } from '../../lib/runtime/generate/security.js'

const UUID = '8c3b1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'
const INFRA = 4242
const APP_DIR = `/data/pods/run/${UUID}/apps/main`

const pod = (over: Partial<PodFacts> = {}): PodFacts => ({
  uuid: UUID,
  hostname: 'web',
  rootfs: `/data/pods/run/${UUID}/rootfs`,
  infraRoot: '/data/runtime/infra',
  network: 'host',
  cgroups: true,
  unified: false,
  privilegedApps: false,
  hostDirs: [{ path: '/usr' }, { path: '/bin', link: 'usr/bin' }, { path: '/etc' }],
  ...over,
})

const app = (over: Partial<AppFacts> = {}): AppFacts => ({
  name: 'main',
  args: ['sleep', '60'],
  env: { A: '1' },
  root: { kind: 'pod', appDir: APP_DIR, cwd: '/run/podctl/apps/main' },
  user: { uid: 0, gid: 0, additionalGids: [], home: '/root' },
  capabilities: ['CAP_CHOWN', 'CAP_KILL'],
  addedCapabilities: [],
  seccomp: { defaultAction: 'SCMP_ACT_ERRNO', syscalls: [{ names: ['read'], action: 'SCMP_ACT_ALLOW' }] },
  privileged: false,
  readOnlyRootFilesystem: false,
  volumes: [{ source: '/srv/v', target: '/data', readOnly: true }],
  terminal: false,
  masked: [],
  podUuid: UUID,
  ...over,
})

const spec = (p: PodFacts, a: AppFacts, files: Bind[] = []): Config => appSpec(p, a, INFRA, files)

type Config = any
const mountAt = (c: Config, dest: string): any => (c.mounts as any[]).find((m) => m.destination === dest)

t.test('the contract’s masked and read-only paths are there', async (t) => {
  for (const p of ['/proc/acpi', '/proc/kcore', '/proc/keys', '/proc/latency_stats', '/proc/timer_list', '/proc/timer_stats', '/proc/sched_debug', '/proc/scsi', '/sys/firmware', '/sys/fs/selinux']) t.ok(MASKED_PATHS.includes(p), `${p} masked`)
  t.strictSame([...READONLY_PATHS].sort(), ['/proc/asound', '/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'].sort(), 'read-only paths')
  t.equal(podCgroup(UUID), `/podctl/${UUID}`)
  t.equal(appCgroup(UUID, 'web'), `/podctl/${UUID}/app-web`, "an app's cgroup is below its pod's, with a prefix no cgroup file has")
})

t.test('infraConfig: makes the pod’s namespaces, holds nothing it could misuse', async (t) => {
  const c: Config = infraSpec(pod({ network: 'none' }), { memoryBytes: 64 * 1024 * 1024, cpuCores: 0.5, pids: 100 })
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
  const host: Config = infraSpec(pod(), undefined)
  t.notOk(host.linux.namespaces.some((n: any) => n.type === 'network'), 'network host: no network namespace')
  t.strictSame(host.linux.resources, { devices: [{ allow: false, access: 'rwm' }] }, 'no limits: only the device rule')
  const priv: Config = infraSpec(pod({ privilegedApps: true }), undefined)
  t.strictSame(priv.linux.resources.devices, [{ allow: true, access: 'rwm' }], "a pod with a privileged app: the pod's device cgroup lets it have the host's")
})

t.test('appConfig: joins the infra’s namespaces by path, with its own mount namespace', async (t) => {
  const c: Config = spec(pod({ network: 'none', idMap: { uid: [{ containerID: 0, hostID: 500000000, size: 65536 }], gid: [{ containerID: 0, hostID: 500000000, size: 65536 }] } }), app())
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
  const host: Config = spec(pod(), app())
  t.strictSame(host.linux.namespaces.map((n: any) => n.type), ['pid', 'ipc', 'uts', 'mount', 'cgroup'], 'network host, no id map: no net or user namespace')
  const noCg: Config = spec(pod({ cgroups: false }), app({ resources: { pids: 5 } }))
  t.notOk(noCg.linux.cgroupsPath, 'no cgroups (rootless on cgroup v1): no cgroup path')
  t.notOk(noCg.linux.resources, 'no resources')
  t.notOk(noCg.linux.namespaces.some((n: any) => n.type === 'cgroup'), 'no cgroup namespace')
  t.notOk(mountAt(noCg, '/sys/fs/cgroup'), 'no cgroupfs')
})

t.test('appConfig: the process, its capabilities, seccomp and mounts', async (t) => {
  const a = app({ user: { uid: 65534, gid: 65534, additionalGids: [65534, 27], home: '/' } })
  const c: Config = spec(pod(), a)
  t.strictSame(c.process.user, { uid: 65534, gid: 65534, additionalGids: [65534, 27] }, 'its user, with the supplementary groups worked out for it')
  t.strictSame(c.process.args, ['sleep', '60'])
  t.ok(c.process.env.includes('A=1') && c.process.env.includes('PODCTL_APP_NAME=main'), 'its environment as KEY=VALUE')
  t.ok(c.process.env.includes('PODCTL_APP_ROOT=/run/podctl/apps/main'), 'PODCTL_APP_ROOT at a path of the pod\'s')
  t.ok(c.process.env.includes('HOME=/') && c.process.env.includes('TERM=xterm') && c.process.env.includes('container=podctl') && c.process.env.includes('HOSTNAME=web'), "podman's defaults: HOME from the user, TERM, container, HOSTNAME")
  t.equal(c.process.cwd, '/run/podctl/apps/main')
  t.strictSame(c.process.capabilities, { bounding: ['CAP_CHOWN', 'CAP_KILL'], effective: [], permitted: [], inheritable: [], ambient: [] }, 'a user that is not root: its set bounds it, and it holds none (it would lose them at execve)')
  t.strictSame(spec(pod(), app()).process.capabilities, { bounding: ['CAP_CHOWN', 'CAP_KILL'], effective: ['CAP_CHOWN', 'CAP_KILL'], permitted: ['CAP_CHOWN', 'CAP_KILL'], inheritable: [], ambient: [] }, 'root: bounding, effective and permitted: its set; nothing inherited')
  const added = app({ user: { uid: 1000, gid: 1000, additionalGids: [], home: '/' }, capabilities: ['CAP_CHOWN', 'CAP_NET_BIND_SERVICE'], addedCapabilities: ['CAP_NET_BIND_SERVICE'] })
  t.strictSame(spec(pod(), added).process.capabilities, { bounding: ['CAP_CHOWN', 'CAP_NET_BIND_SERVICE'], effective: ['CAP_NET_BIND_SERVICE'], permitted: ['CAP_NET_BIND_SERVICE'], inheritable: ['CAP_NET_BIND_SERVICE'], ambient: ['CAP_NET_BIND_SERVICE'] }, "a user that is not root: what the manifest adds, ambient too, as podman's --cap-add")
  t.equal(c.process.noNewPrivileges, true)
  t.equal(c.process.terminal, false)
  t.strictSame(c.linux.seccomp, a.seccomp)
  t.strictSame(c.linux.maskedPaths, MASKED_PATHS)
  t.strictSame(c.linux.readonlyPaths, READONLY_PATHS)
  t.strictSame((spec(pod(), app({ masked: ['/etc/shadow'] })) as Config).linux.maskedPaths, [...MASKED_PATHS, '/etc/shadow'], "the host's secrets masked besides")
  t.strictSame(c.root, { path: pod().rootfs, readonly: true })
  t.equal(c.linux.cgroupsPath, `/podctl/${UUID}/app-main`)
  t.strictSame(c.linux.resources, { devices: [{ allow: false, access: 'rwm' }] }, 'no limits of its own: the device rule only')
  t.match(mountAt(c, '/proc'), { type: 'proc' })
  t.match(mountAt(c, '/dev'), { type: 'tmpfs', options: ['nosuid', 'noexec', 'strictatime', 'mode=755', 'size=65536k'] }, 'a private /dev, noexec as podman has it')
  t.ok(mountAt(c, '/dev/pts').options.includes('newinstance') && mountAt(c, '/dev/pts').options.includes('gid=5'), 'its own devpts, tty group 5')
  t.match(mountAt(c, '/dev/shm'), { type: 'tmpfs' })
  t.match(mountAt(c, '/dev/mqueue'), { type: 'mqueue' })
  t.match(mountAt(c, '/tmp'), { type: 'tmpfs', options: ['nosuid', 'nodev', 'mode=1777'] }, 'a private /tmp')
  t.match(mountAt(c, '/sys'), { type: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] }, 'a new sysfs, read-only')
  t.match(mountAt(c, '/sys/fs/cgroup'), { type: 'cgroup', options: ['nosuid', 'noexec', 'nodev', 'relatime', 'ro'] }, 'cgroupfs read-only')
  t.match(mountAt(c, '/etc'), { type: 'bind', source: '/etc', options: ['rbind', 'nosuid', 'nodev', 'ro'] }, "the host's /etc read-only")
  t.match(mountAt(c, '/run/podctl/apps/main'), { type: 'bind', source: APP_DIR, options: ['rbind', 'nosuid', 'nodev'] }, "its root writable, at a path of the pod's")
  t.notOk((c.mounts as any[]).some((m) => m.destination.startsWith('/data/pods')), "nothing at the data dir's path")
  t.match(mountAt(c, '/data'), { source: '/srv/v', options: ['rbind', 'nosuid', 'nodev', 'ro'] }, 'a read-only volume at its mount path')
  const dests = (c.mounts as any[]).map((m) => m.destination)
  t.ok(dests.indexOf('/dev') < dests.indexOf('/dev/pts') && dests.indexOf('/sys') < dests.indexOf('/sys/fs/cgroup'), 'parents before what is mounted in them')
  t.equal((spec(pod(), app({ terminal: true })) as Config).process.terminal, true, 'a terminal when asked (enter -t)')
})

t.test('appConfig: resources of an app', async (t) => {
  const c: Config = spec(pod(), app({ resources: { memoryBytes: 32 * 1024 * 1024, cpuCores: 2, pids: 64 } }))
  t.strictSame(c.linux.resources, {
    devices: [{ allow: false, access: 'rwm' }],
    memory: { limit: 33554432, swap: 33554432 },
    cpu: { quota: 200000, period: 100000 },
    pids: { limit: 64 },
  }, 'memory with swap equal to it, two cores as a quota of two periods, pids')
  t.strictSame((spec(pod(), app({ resources: { cpuCores: 0.01 } })) as Config).linux.resources.cpu, { quota: 1000, period: 100000 }, 'the smallest share: 1 ms of 100')
})

t.test('appConfig: privileged differs in every place that makes the boundary', async (t) => {
  const plain: Config = spec(pod(), app())
  const { seccomp: _none, ...unconfined } = app()
  const c: Config = spec(pod(), { ...unconfined, privileged: true })
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
  const infra: Config = infraSpec(pod({ idMap }), undefined)
  t.ok(infra.linux.namespaces.some((n: any) => n.type === 'user' && n.path === undefined), 'the infra makes the user namespace')
  t.strictSame(infra.linux.uidMappings, idMap.uid)
  t.strictSame(infra.linux.gidMappings, idMap.gid)
  const c: Config = spec(pod({ idMap }), app())
  t.notOk(mountAt(c, '/dev/pts').options.some((o: string) => o.startsWith('gid=')), 'devpts without gid=5, which the map may not hold')
  t.match(mountAt(c, '/sys'), { type: 'bind', source: '/sys', options: ['rbind', 'nosuid', 'noexec', 'nodev', 'ro'] }, "network host: the host's /sys bound read-only (a user namespace may not mount a sysfs of a network namespace it does not own)")
  const none: Config = spec(pod({ idMap, network: 'none' }), app())
  t.match(mountAt(none, '/sys'), { type: 'sysfs' }, 'network none: a new sysfs of its own network namespace')
})

t.test('an image app: its image\'s root, /tmp its own unless its root is read-only, the pod\'s files bound', async (t) => {
  const image = app({ root: { kind: 'image', rootfs: '/data/apps/x/rootfs', cwd: '/srv', readOnly: false }, volumes: [] })
  const files: Bind[] = [{ source: '/data/pod/etc/hosts', target: '/etc/hosts', readOnly: true }]
  const c: Config = spec(pod(), image, files)
  t.strictSame(c.root, { path: '/data/apps/x/rootfs', readonly: false })
  t.notOk(mountAt(c, '/usr') || mountAt(c, '/etc'), "none of the host's directories")
  t.notOk(mountAt(c, '/tmp'), "the image's own /tmp, not a tmpfs over it (podman)")
  t.ok(c.process.env.includes('PODCTL_APP_ROOT=/'))
  t.match(mountAt(c, '/etc/hosts'), { type: 'bind', source: '/data/pod/etc/hosts', options: ['rbind', 'nosuid', 'nodev', 'ro'] }, "the pod's files, read-only")
  const ro: Config = spec(pod(), { ...image, readOnlyRootFilesystem: true })
  t.equal(ro.root.readonly, true)
  for (const p of ['/tmp', '/run', '/var/tmp']) t.match(mountAt(ro, p), { type: 'tmpfs' }, `${p} a tmpfs with a read-only root (--read-only-tmpfs)`)
  const rootless: Config = spec(pod(), app({ root: { kind: 'image', rootfs: '/d/rootfs', cwd: '/', readOnly: false, overlay: { lower: '/r', upper: '/u', work: '/w' } }, volumes: [] }))
  t.strictSame(rootless.mounts[0], { destination: '/', type: 'overlay', source: 'overlay', options: ['lowerdir=/r', 'upperdir=/u', 'workdir=/w', 'nosuid', 'nodev'] }, 'an overlay the runtime mounts first, over the root itself')
})

t.test('a host /sys bound in a user namespace: its cgroup tree masked, read-only', async (t) => {
  const idMap = { uid: [{ containerID: 0, hostID: 1000, size: 1 }], gid: [{ containerID: 0, hostID: 1000, size: 1 }] }
  const c: Config = spec(pod({ idMap, cgroups: false }), app())
  t.match(mountAt(c, '/sys/fs/cgroup'), { type: 'tmpfs', options: ['ro', 'nosuid', 'noexec', 'nodev', 'size=0', 'mode=555'] }, 'no rro in runc 1.1: the tree below is masked (CONTRACT §12a)')
})
