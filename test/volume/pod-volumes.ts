// A pod's volumes as a whole (lib/volume/pod-volumes.ts): the checks at
// prepare time, set-up of every kind with its mount points (nested ones
// inside the parent volume), all-or-nothing set-up, and tear-down from the
// recorded state that never touches a host path or follows a planted link.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../../lib/errors.js'
import type { PodManifest } from '../../lib/pod/manifest.js'
import { bindingHolds, readBindings } from '../../lib/storage/local/bindings.js'
import { pvDataDir, pvDir } from '../../lib/storage/local/layout.js'
import { createVolume } from '../../lib/storage/local/volumes.js'
import { checkVolumeSources, podMountPoints, setUpPodVolumes, tearDownPodVolumes, volumeSourceProblems } from '../../lib/volume/pod-volumes.js'
import { recordedVolumes } from '../../lib/volume/state.js'
import { emptyPlugin } from '../../lib/volume/plugins/empty.js'
import { filesPlugin } from '../../lib/volume/plugins/files.js'
import { hostPlugin } from '../../lib/volume/plugins/host.js'
import { persistentPlugin } from '../../lib/volume/plugins/persistent.js'
import type { VolumeSpec } from '../../lib/volume/types.js'
import { listTree, snapshot } from '../helpers/common.js'
import { lockedPod } from '../helpers/volume-util.js'

const everyKind = (host: string): PodManifest => ({
  apiVersion: 'podctl/v1',
  apps: [
    {
      name: 'web',
      exec: ['/bin/true'],
      mounts: [
        { volume: 'data', path: '/var/lib/data' },
        { volume: 'cache', path: '/var/lib/data/cache' },
        { volume: 'cfg', path: '/etc/cfg' },
        { volume: 'db', path: '/db' },
        { volume: 'host', path: '/host', readOnly: true },
      ],
    },
    { name: 'side', exec: ['/bin/true'], mounts: [{ volume: 'data', path: '/d' }] },
  ],
  volumes: [
    { name: 'data', kind: 'empty' },
    { name: 'cache', kind: 'empty' },
    { name: 'cfg', kind: 'files', files: { 'app.conf': { content: 'v1' }, 'sub/x': { content: 'x', mode: 0o600 } } },
    { name: 'db', kind: 'persistent', claim: 'db' },
    { name: 'host', kind: 'host', source: host, readOnly: true },
  ],
})

t.test('prepare-time checks: host sources and persistent volumes must exist', async (t) => {
  const dir = t.testdir({ host: {} })
  const m = everyKind(path.join(dir, 'host'))
  t.same(volumeSourceProblems(dir, m), [{ path: 'volumes[3].claim', problem: 'no volume claim or persistent volume named "db"; create one: podctl volume claim create db --class CLASS --size SIZE, or podctl volume create db' }])
  createVolume(dir, 'db')
  t.same(volumeSourceProblems(dir, m), [])
  const gone = everyKind(path.join(dir, 'nope'))
  const er = t.throws(() => checkVolumeSources(dir, gone)) as PodctlError
  t.equal(er.exitCode, 2)
  t.equal(er.message, `invalid manifest: volumes[4].source: ${JSON.stringify(path.join(dir, 'nope'))} does not exist on this host`)
  const rwx: PodManifest = { ...m, volumes: m.volumes!.map((v) => (v.kind === 'persistent' ? { ...v, accessMode: 'ReadWriteMany' as const } : v)) }
  t.match(volumeSourceProblems(dir, rwx), [{ path: 'volumes[3].accessMode', problem: 'persistent volume db allows ReadWriteOnce only' }])
})

t.test('set-up of every kind: data where the layout says, links the apps see, records', async (t) => {
  const dir = t.testdir({ host: { 'keep.txt': 'host data' } })
  const host = path.join(dir, 'host')
  createVolume(dir, 'db')
  const pod = await lockedPod(t, dir, everyKind(host))
  setUpPodVolumes(pod, everyKind(host))
  const tree = listTree(pod.path)!
  for (const want of [
    'apps/web/var/lib/data -> ../../../../volumes/data',
    'volumes/data/cache -> ../cache',
    'apps/web/etc/cfg -> ../../../volumes/cfg',
    `apps/web/db -> ${pvDataDir(dir, 'db')}`,
    `apps/web/host -> ${host}`,
    'apps/side/d -> ../../volumes/data',
    'volumes/cfg/..data -> ' + fs.readlinkSync(path.join(pod.path, 'volumes/cfg/..data')),
    'volumes/cfg/app.conf -> ..data/app.conf',
  ]) {
    t.ok(tree.includes(want), want)
  }
  const root = path.join(pod.path, 'apps/web')
  fs.writeFileSync(path.join(root, 'var/lib/data/cache/c'), 'cached')
  t.equal(fs.readFileSync(path.join(pod.path, 'volumes/cache/c'), 'utf8'), 'cached', 'the nested mount reaches the nested volume')
  t.equal(fs.readFileSync(path.join(pod.path, 'apps/side/d/cache/c'), 'utf8'), 'cached', 'another app mounting the parent sees the nested mount point too')
  t.equal(fs.readFileSync(path.join(root, 'etc/cfg/app.conf'), 'utf8'), 'v1')
  t.equal(fs.readFileSync(path.join(root, 'host/keep.txt'), 'utf8'), 'host data')
  fs.writeFileSync(path.join(root, 'db/row'), '1')
  t.equal(fs.readFileSync(path.join(pvDataDir(dir, 'db'), 'row'), 'utf8'), '1')
  t.same(recordedVolumes(pod.path), ['cache', 'cfg', 'data', 'db', 'host'])
  t.same(readBindings(dir, 'db').map((b) => ({ ...b, running: bindingHolds(dir, b) })).map((c) => [c.pod, c.running]), [[pod.uuid, true]], 'this process holds the pod lock: its claim holds')
  // Setting up again changes nothing (idempotent).
  const before = snapshot(pod.path)
  setUpPodVolumes(pod, everyKind(host))
  t.equal(snapshot(pod.path).replace(/"updated_at":"[^"]*"/g, ''), before.replace(/"updated_at":"[^"]*"/g, ''))
})

t.test('tear-down: everything the pod owns goes, the claim is released, the host path is untouched', async (t) => {
  const dir = t.testdir({ host: { 'keep.txt': 'host data', sub: { deep: 'x' } } })
  const host = path.join(dir, 'host')
  createVolume(dir, 'db', { reclaim: 'retain' })
  const pod = await lockedPod(t, dir, everyKind(host))
  setUpPodVolumes(pod, everyKind(host))
  fs.writeFileSync(path.join(pod.path, 'apps/web/db/row'), '1')
  const hostBefore = snapshot(host)
  tearDownPodVolumes(pod)
  t.same(recordedVolumes(pod.path), [])
  t.notOk(fs.existsSync(path.join(pod.path, 'volume-state')))
  t.notOk(fs.existsSync(path.join(pod.path, 'volumes/data')))
  t.notOk(fs.existsSync(path.join(pod.path, 'volumes/cfg')))
  t.notOk(fs.existsSync(path.join(pod.path, 'apps/web/host')), 'the mount point is gone...')
  t.equal(snapshot(host), hostBefore, '... and the host path is exactly as it was')
  t.same(readBindings(dir, 'db'), [])
  t.same(fs.readdirSync(pvDataDir(dir, 'db')), ['row'], 'retain kept the data')
  tearDownPodVolumes(pod) // idempotent
})

t.test('set-up is all or nothing: a failure tears down what it set up, reclaiming nothing', async (t) => {
  const dir = t.testdir({ host: {} })
  const host = path.join(dir, 'host')
  createVolume(dir, 'db', { reclaim: 'delete' })
  const m = everyKind(host)
  const pod = await lockedPod(t, dir, m)
  fs.rmdirSync(host) // gone between prepare and run
  const er = t.throws(() => setUpPodVolumes(pod, m)) as PodctlError
  t.match(er.message, /host path .* of volume "host" does not exist/)
  t.same(recordedVolumes(pod.path), [], 'no record left')
  t.notOk(fs.existsSync(path.join(pod.path, 'volumes/data')))
  t.same(readBindings(dir, 'db'), [], 'the claim was dropped')
  t.ok(fs.existsSync(pvDir(dir, 'db')), 'a rollback is not a release: the delete policy did not apply')
})

t.test('tear-down never follows links planted in the app root or the pod', async (t) => {
  const dir = t.testdir({ host: {}, outside: { var: { lib: { data: 'victim' } }, volumes: { data: { 'v.txt': 'victim' } } } })
  const host = path.join(dir, 'host')
  createVolume(dir, 'db')
  const m = everyKind(host)
  const pod = await lockedPod(t, dir, m)
  setUpPodVolumes(pod, m)
  const outsideBefore = snapshot(path.join(dir, 'outside'))
  // The app replaces directories on the way to its mount points with links out.
  fs.rmSync(path.join(pod.path, 'apps/web/var'), { recursive: true })
  fs.symlinkSync(path.join(dir, 'outside', 'var'), path.join(pod.path, 'apps/web/var'))
  // ... and the pod's volumes dir.
  fs.renameSync(path.join(pod.path, 'volumes'), path.join(pod.path, 'moved'))
  fs.symlinkSync(path.join(dir, 'outside', 'volumes'), path.join(pod.path, 'volumes'))
  tearDownPodVolumes(pod)
  t.equal(snapshot(path.join(dir, 'outside')), outsideBefore, 'nothing outside the pod was read as ours, changed or removed')
  t.same(recordedVolumes(pod.path), [])
})

t.test('mount point targets: relative inside the pod, absolute outside', async (t) => {
  const dir = t.testdir({ host: {} })
  createVolume(dir, 'db')
  const m = everyKind(path.join(dir, 'host'))
  const pod = await lockedPod(t, dir, m)
  const mps = podMountPoints(pod, m)
  t.same(mps.get('cache'), [{ link: 'volumes/data/cache', target: '../cache' }])
  t.same(mps.get('host'), [{ link: 'apps/web/host', target: path.join(dir, 'host') }])
})

t.test('plugins: setUp and tearDown are idempotent; specs are rebuilt from records', async (t) => {
  const dir = t.testdir({ host: { f: 'x' } })
  createVolume(dir, 'db')
  const m = everyKind(path.join(dir, 'host'))
  const pod = await lockedPod(t, dir, m)
  for (const [plugin, v] of [
    [emptyPlugin, m.volumes![0]!],
    [filesPlugin, m.volumes![2]!],
    [persistentPlugin, m.volumes![3]!],
    [hostPlugin, m.volumes![4]!],
  ] as const) {
    const spec: VolumeSpec = { name: v.name, volume: v }
    t.ok(plugin.canSupport(spec), plugin.name)
    const mounter = plugin.newMounter(spec, pod)
    mounter.setUp()
    mounter.setUp()
    t.ok(fs.existsSync(mounter.path), `${plugin.name}: data at ${mounter.path}`)
    t.type(mounter.getMetrics().used_bytes, 'number')
    const rec = { version: 1 as const, volume: v.name, plugin: plugin.name, spec: v, phase: 'mounted' as const, mount_points: [], pid: 1, updated_at: '' }
    t.same(plugin.constructVolumeSpec(v.name, rec), spec)
    t.throws(() => plugin.constructVolumeSpec('other', rec), /damaged/)
    const un = plugin.newUnmounter(spec, pod)
    un.tearDown({ podRemoved: true })
    un.tearDown({ podRemoved: true })
  }
  t.notOk(fs.existsSync(path.join(pod.path, 'volumes/data')))
  t.same(listTree(path.join(dir, 'host')), ['f'])
})

t.test('a files volume set up again keeps what the last update made', async (t) => {
  const dir = t.testdir({})
  const m: PodManifest = { apiVersion: 'podctl/v1', apps: [{ name: 'a', exec: ['/bin/true'] }], volumes: [{ name: 'cfg', kind: 'files', files: { a: { content: '1' } } }] }
  const pod = await lockedPod(t, dir, m)
  const mounter = filesPlugin.newMounter({ name: 'cfg', volume: m.volumes![0]! }, pod)
  mounter.setUp()
  const { AtomicWriter } = await import('../../lib/volume/atomic-writer.js')
  new AtomicWriter(mounter.path).write(new Map([['a', { data: Buffer.from('2'), mode: 0o644 }]]))
  mounter.setUp()
  t.equal(fs.readFileSync(path.join(mounter.path, 'a'), 'utf8'), '2')
})
