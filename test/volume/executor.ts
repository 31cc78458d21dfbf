// The operation executor (lib/volume/executor.ts): one operation per
// (pod, volume) at a time, refused or waited for, across real processes;
// the actual state it records; tear-down from that record alone.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../../lib/errors.js'
import { OperationExecutor } from '../../lib/volume/executor.js'
import { opLockPath } from '../../lib/volume/layout.js'
import { acquireLockIn } from '../../lib/lock/with-lock.js'
import { readVolumeState, recordedVolumes } from '../../lib/volume/state.js'
import { listTree } from '../helpers/common.js'
import { actor, lockedPod, volumeManifest } from '../helpers/volume-util.js'

const emptyVolume = { name: 'data', kind: 'empty' as const }
const points = [{ link: 'apps/app/data', target: '../../volumes/data' }]

t.test('mount records "mounted" with plugin and mount points; unmount tears down from the record', async (t) => {
  const dir = t.testdir({})
  const pod = await lockedPod(t, dir, volumeManifest([emptyVolume]))
  const ex = new OperationExecutor(pod)
  const rec = ex.mountVolume({ name: 'data', volume: emptyVolume }, points, { wait: false })
  t.match(rec, { version: 1, volume: 'data', plugin: 'podctl.io/empty', phase: 'mounted', mount_points: points, pid: process.pid })
  t.same(readVolumeState(pod.path, 'data'), rec, 'the record on disk')
  t.equal(fs.readlinkSync(path.join(pod.path, 'apps/app/data')), '../../volumes/data')
  fs.writeFileSync(path.join(pod.path, 'apps/app/data/file'), 'x')
  t.equal(fs.readFileSync(path.join(pod.path, 'volumes/data/file'), 'utf8'), 'x', 'the app sees the volume through the link')
  t.same(ex.actualState().map((r) => r.volume), ['data'])
  t.equal(ex.mountVolume({ name: 'data', volume: emptyVolume }, points, { wait: false }).phase, 'mounted', 'mounting again is fine (idempotent)')
  t.equal(ex.unmountVolume('data', { wait: false }), true)
  t.notOk(fs.existsSync(path.join(pod.path, 'volumes/data')), 'the empty volume is gone')
  t.notOk(fs.existsSync(path.join(pod.path, 'apps/app/data')), 'the mount point is gone')
  t.same(recordedVolumes(pod.path), [])
  t.equal(ex.unmountVolume('data', { wait: false }), false, 'unmounting again does nothing (idempotent)')
  t.same(fs.readdirSync(path.join(dir, 'volume-locks')), [], 'no key lock is left')
})

t.test('another process holds the key: refused at once, naming it; free once it is SIGKILLed', async (t) => {
  const dir = t.testdir({})
  const pod = await lockedPod(t, dir, volumeManifest([emptyVolume]))
  const ex = new OperationExecutor(pod)
  const { child, first } = await actor(t, ['hold-key', dir, pod.uuid, 'data'])
  t.equal(first, `held ${child.pid}`)
  t.equal(ex.isOperationPending('data'), true)
  t.equal(ex.pendingPid('data'), child.pid)
  t.equal(ex.isOperationPending('other'), false, 'keys are per volume')
  const er = t.throws(() => ex.mountVolume({ name: 'data', volume: emptyVolume }, points, { wait: false })) as PodctlError
  t.equal(er.code, 'EBADSTATE')
  t.equal(er.exitCode, 4)
  t.match(er.message, new RegExp(`volume "data" of pod ${pod.uuid.slice(0, 8)} is busy: another operation on it is pending \\(podctl process ${child.pid}\\)`))
  t.same(recordedVolumes(pod.path), [], 'a refused operation did nothing')
  const to = t.throws(() => ex.mountVolume({ name: 'data', volume: emptyVolume }, points, { wait: true, timeoutMs: 50 })) as PodctlError
  t.equal(to.code, 'ETIMEOUT', 'waiting gives up after its time limit')
  t.equal(to.exitCode, 5)
  await child.kill()
  t.equal(ex.isOperationPending('data'), false, 'a SIGKILLed holder frees the key at once')
  t.equal(ex.mountVolume({ name: 'data', volume: emptyVolume }, points, { wait: false }).phase, 'mounted')
})

t.test('a waiting operation in another process runs once the key is free, not before', async (t) => {
  const dir = t.testdir({})
  const pod = await lockedPod(t, dir, volumeManifest([emptyVolume]))
  const ex = new OperationExecutor(pod)
  ex.mountVolume({ name: 'data', volume: emptyVolume }, points, { wait: false })
  const order: string[] = []
  // This process holds the key (as an operation would); the other process
  // asks to unmount meanwhile and must wait for it.
  const key = acquireLockIn(opLockPath(dir, pod.uuid, 'data'), 'test', { wait: false })
  const { child: other, first } = await actor(t, ['unmount-wait', dir, pod.uuid, 'data'])
  t.equal(first, `waiting ${process.pid}`, 'the other process found the key held by this one and waits')
  t.ok(readVolumeState(pod.path, 'data'), 'nothing was torn down while this process held the key')
  order.push('ours done')
  key.release()
  t.equal(await other.nextLine(), 'done true', 'then it tore the volume down')
  order.push('theirs done')
  t.same(order, ['ours done', 'theirs done'])
  t.same(recordedVolumes(pod.path), [])
  t.notOk(fs.existsSync(path.join(pod.path, 'apps/app/data')))
})

t.test('a record no plugin can use: its links are removed, the record dropped, nothing followed', async (t) => {
  const dir = t.testdir({ outside: { 'keep.txt': 'keep' } })
  const pod = await lockedPod(t, dir, volumeManifest([emptyVolume]))
  const ex = new OperationExecutor(pod)
  ex.mountVolume({ name: 'data', volume: emptyVolume }, points, { wait: false })
  const file = path.join(pod.path, 'volume-state', 'data.json')
  const rec = JSON.parse(fs.readFileSync(file, 'utf8'))
  fs.writeFileSync(file, JSON.stringify({ ...rec, plugin: 'someone.else/tmpfs' }))
  t.equal(ex.unmountVolume('data', { wait: false }), false)
  t.notOk(fs.existsSync(path.join(pod.path, 'apps/app/data')), 'the link it listed is gone')
  t.same(recordedVolumes(pod.path), [])
  t.same(listTree(path.join(dir, 'outside')), ['keep.txt'])
})

t.test('a record whose mount points are damaged is dropped at tear-down (the links it lists well removed), never a TypeError', async (t) => {
  const dir = t.testdir({})
  const pod = await lockedPod(t, dir, volumeManifest([emptyVolume]))
  const ex = new OperationExecutor(pod)
  const rec = ex.mountVolume({ name: 'data', volume: emptyVolume }, points, { wait: false })
  for (const bad of ['not a list', [...points, { link: 7 }]]) {
    fs.writeFileSync(path.join(pod.path, 'volume-state', 'data.json'), JSON.stringify({ ...rec, mount_points: bad }))
    t.equal(ex.unmountVolume('data', { wait: false }), false, `mount_points ${JSON.stringify(bad)}: not torn down by its plugin`)
    t.same(recordedVolumes(pod.path), [], 'the record is gone')
    if (Array.isArray(bad)) t.notOk(fs.existsSync(path.join(pod.path, 'apps/app/data')), 'the link it listed well is gone')
    ex.mountVolume({ name: 'data', volume: emptyVolume }, points, { wait: false })
  }
})
