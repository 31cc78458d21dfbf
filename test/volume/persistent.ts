// Persistent volumes (lib/storage/local/volumes.ts) and the pods bound to
// them (lib/volume/plugins/persistent.ts): create, list, remove; bindings
// that hold only while the binding supervisor lives, ReadWriteOnce across
// real processes; reclaim policies when the last pod goes.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../../lib/errors.js'
import { tryLock } from '../../lib/pod/locks.js'
import { preparePod } from '../../lib/pod/prepare.js'
import { bindingHolds, readBindings } from '../../lib/storage/local/bindings.js'
import { pvDataDir, pvDir } from '../../lib/storage/local/layout.js'
import { createVolume, listVolumes, readVolume, removeVolume, sweepVolumesDir } from '../../lib/storage/local/volumes.js'
import { bindVolume, unbindVolume } from '../../lib/volume/plugins/persistent.js'
import { listTree } from '../helpers/common.js'
import { actor, volumeManifest } from '../helpers/volume-util.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

const code = (fn: () => unknown): string | undefined => {
  try {
    fn()
  } catch (er) {
    return (er as PodctlError).code
  }
  return undefined
}

/** A prepared pod that claims `claim` (so that the pod exists for the claim). */
const newPod = async (dir: string, claim = 'db'): Promise<string> =>
  (await preparePod(dir, volumeManifest([{ name: 'v', kind: 'persistent', claim }]), { sync: false })).uuid

t.test('create, read, list, remove', async (t) => {
  const dir = t.testdir({})
  const rec = createVolume(dir, 'db', { reclaim: 'recycle', accessMode: 'ReadWriteMany', sizeLimitBytes: 65536 })
  t.match(rec, { version: 1, name: 'db', reclaim: 'recycle', access_mode: 'ReadWriteMany', size_limit_bytes: 65536, phase: 'available', recycled_at: null })
  t.same(readVolume(dir, 'db'), rec)
  t.same(listTree(pvDir(dir, 'db')), ['claims/', 'data/', 'volume.json'])
  t.match(createVolume(dir, 'a'), { reclaim: 'retain', access_mode: 'ReadWriteOnce', size_limit_bytes: null }, 'defaults')
  t.same(listVolumes(dir).map((v) => v.name), ['a', 'db'])
  t.equal(code(() => createVolume(dir, 'db')), 'EBADSTATE', 'an existing name: exit 4')
  t.equal(code(() => createVolume(dir, 'Bad_Name')), 'EUSAGE')
  t.equal(code(() => readVolume(dir, 'nope')), 'ENOVOLUME')
  t.equal(new PodctlError('ENOVOLUME', 'x').exitCode, 3)
  removeVolume(dir, 'db')
  t.same(listVolumes(dir).map((v) => v.name), ['a'])
  t.equal(code(() => removeVolume(dir, 'db')), 'ENOVOLUME')
  t.same(fs.readdirSync(path.join(dir, 'volumes')), ['a'], 'nothing half-made or half-removed is left')
})

t.test('listVolumes skips temporaries and damaged records; sweep removes old temporaries', async (t) => {
  const dir = t.testdir({ volumes: { '.new-x-1234': {}, '.gone-y-5678': { data: {} }, broken: { 'volume.json': '{' } } })
  createVolume(dir, 'ok')
  t.same(listVolumes(dir).map((v) => v.name), ['ok'])
  t.equal(code(() => readVolume(dir, 'broken')), 'EFAILED')
  t.equal(sweepVolumesDir(dir, 60_000), 0, 'young temporaries are left alone (a create may be under way)')
  t.equal(sweepVolumesDir(dir, 60_000, Date.now() + 120_000), 2)
  t.same(fs.readdirSync(path.join(dir, 'volumes')).sort(), ['broken', 'ok'])
})

t.test('ReadWriteOnce across processes: a running claim excludes others until its holder dies', async (t) => {
  const dir = t.testdir({})
  createVolume(dir, 'db')
  const a = await newPod(dir)
  const b = await newPod(dir)
  const holder = await actor(t, ['claim', dir, 'db', a])
  t.equal(holder.first, `claimed ${holder.child.pid}`)
  t.same(readBindings(dir, 'db').map((b) => ({ ...b, running: bindingHolds(dir, b) })).map((c) => [c.pod, c.running]), [[a, true]])
  // This process is b's "supervisor".
  const lockB = tryLock(dir, b)!
  t.teardown(() => lockB.release())
  const er = t.throws(() => bindVolume(dir, 'db', b)) as PodctlError
  t.equal(er.exitCode, 4)
  t.match(er.message, `persistent volume db is in use by running pod ${a} (ReadWriteOnce)`)
  t.match(er.hint, `podctl stop ${a.slice(0, 8)}`)
  t.equal(code(() => removeVolume(dir, 'db')), 'EBADSTATE', 'volume rm is refused while a pod runs with it')
  await holder.child.kill() // SIGKILL: the supervisor dies without cleaning up
  t.same(readBindings(dir, 'db').map((b) => ({ ...b, running: bindingHolds(dir, b) })).map((c) => [c.pod, c.running]), [[a, false]], "a dead supervisor's claim does not hold, at once")
  bindVolume(dir, 'db', b)
  t.same(
    readBindings(dir, 'db').map((b) => ({ ...b, running: bindingHolds(dir, b) })).map((c) => [c.pod, c.running]),
    [[a, false], [b, true]].sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
    'both stay bound; only b holds',
  )
})

t.test('two processes claim a ReadWriteOnce volume at once: exactly one wins', async (t) => {
  const dir = t.testdir({})
  for (let round = 0; round < 5; round++) {
    const name = `v${round}`
    createVolume(dir, name)
    const uuids = [await newPod(dir, name), await newPod(dir, name), await newPod(dir, name)]
    const results = await Promise.all(uuids.map((u) => actor(t, ['claim', dir, name, u])))
    const won = results.filter((r) => r.first.startsWith('claimed'))
    const lost = results.filter((r) => r.first.startsWith('refused 4 '))
    t.equal(won.length, 1, `round ${round}: one winner (${results.map((r) => r.first).join(' | ')})`)
    t.equal(lost.length, 2, `round ${round}: the others are refused with exit 4`)
    for (const r of results) await r.child.kill()
  }
})

t.test('ReadWriteMany: several running pods; a ReadWriteOnce request is refused among them', async (t) => {
  const dir = t.testdir({})
  createVolume(dir, 'shared', { accessMode: 'ReadWriteMany' })
  const [a, b, c] = [await newPod(dir, 'shared'), await newPod(dir, 'shared'), await newPod(dir, 'shared')]
  t.match((await actor(t, ['claim', dir, 'shared', a])).first, /^claimed/)
  t.match((await actor(t, ['claim', dir, 'shared', b])).first, /^claimed/)
  t.same(readBindings(dir, 'shared').map((b) => ({ ...b, running: bindingHolds(dir, b) })).filter((x) => x.running).length, 2)
  t.match((await actor(t, ['claim', dir, 'shared', c, 'ReadWriteOnce'])).first, /^refused 4 persistent volume shared is in use by running pod/)
})

t.test('a ReadWriteOnce volume refuses a ReadWriteMany request', async (t) => {
  const dir = t.testdir({})
  createVolume(dir, 'db')
  const a = await newPod(dir)
  const l = tryLock(dir, a)!
  t.teardown(() => l.release())
  const er = t.throws(() => bindVolume(dir, 'db', a, { mode: 'ReadWriteMany' })) as PodctlError
  t.match(er.message, /allows ReadWriteOnce only/)
  t.same(readBindings(dir, 'db'), [])
})

t.test('a volume over its size limit cannot be claimed', async (t) => {
  const dir = t.testdir({})
  createVolume(dir, 'small', { sizeLimitBytes: 8192 })
  fs.writeFileSync(path.join(pvDataDir(dir, 'small'), 'big'), 'x'.repeat(20_000))
  const a = await newPod(dir, 'small')
  const l = tryLock(dir, a)!
  t.teardown(() => l.release())
  t.match((t.throws(() => bindVolume(dir, 'small', a)) as Error).message, /uses \d+ bytes, over its size limit of 8192/)
  t.equal(code(() => createVolume(dir, 'tiny', { sizeLimitBytes: 1024 })), 'EUSAGE', 'a limit below one block cannot hold the volume\'s own directory')
  t.notOk(fs.existsSync(pvDir(dir, 'tiny')), 'and nothing is made')
})

const released = async (t: Test, reclaim: 'retain' | 'delete' | 'recycle') => {
  const dir = t.testdir({ outside: { 'victim.txt': 'precious' } })
  createVolume(dir, 'db', { reclaim })
  const data = pvDataDir(dir, 'db')
  fs.writeFileSync(path.join(data, 'file'), 'data')
  fs.mkdirSync(path.join(data, 'sub'))
  fs.symlinkSync(path.join(dir, 'outside'), path.join(data, 'sub', 'escape'))
  fs.symlinkSync(path.join(dir, 'outside', 'victim.txt'), path.join(data, 'link'))
  const a = await newPod(dir)
  const b = await newPod(dir)
  const l = tryLock(dir, a)!
  const lb = tryLock(dir, b)!
  t.teardown(() => (l.release(), lb.release()))
  bindVolume(dir, 'db', a)
  l.release()
  bindVolume(dir, 'db', b) // a no longer runs
  return { dir, data, a, b }
}

t.test('release: nothing is reclaimed while another pod is bound; retain keeps the data', async (t) => {
  const { dir, data, a, b } = await released(t, 'retain')
  t.equal(unbindVolume(dir, 'db', a), 'unbound', 'b is still bound')
  t.equal(unbindVolume(dir, 'db', a), 'not-bound', 'idempotent')
  t.equal(unbindVolume(dir, 'db', b), 'retained')
  t.same(listTree(data), ['file', 'link -> ' + path.join(dir, 'outside', 'victim.txt'), 'sub/', `sub/escape -> ${path.join(dir, 'outside')}`])
  t.same(readBindings(dir, 'db'), [])
})

t.test('release: delete removes the volume, never following links in it', async (t) => {
  const { dir, a, b } = await released(t, 'delete')
  unbindVolume(dir, 'db', a)
  t.equal(unbindVolume(dir, 'db', b), 'deleted')
  t.notOk(fs.existsSync(pvDir(dir, 'db')))
  t.same(fs.readdirSync(path.join(dir, 'volumes')), [])
  t.same(listTree(path.join(dir, 'outside')), ['victim.txt'])
  t.equal(fs.readFileSync(path.join(dir, 'outside', 'victim.txt'), 'utf8'), 'precious')
})

t.test('release: recycle scrubs the data (links unlinked, not followed) and checks it is empty', async (t) => {
  const { dir, data, a, b } = await released(t, 'recycle')
  unbindVolume(dir, 'db', a)
  t.equal(unbindVolume(dir, 'db', b), 'recycled')
  t.same(fs.readdirSync(data), [])
  t.match(readVolume(dir, 'db'), { phase: 'available', recycled_at: String })
  t.same(listTree(path.join(dir, 'outside')), ['victim.txt'])
})

t.test('a rolled-back claim (not a removed pod) reclaims nothing', async (t) => {
  const { dir, data, a, b } = await released(t, 'delete')
  unbindVolume(dir, 'db', a, { reclaim: false })
  t.equal(unbindVolume(dir, 'db', b, { reclaim: false }), 'unbound')
  t.ok(fs.existsSync(path.join(data, 'file')), 'the data is still there')
})

t.test('a volume removed and created again is not reclaimed by a pod of the old one', async (t) => {
  const dir = t.testdir({})
  createVolume(dir, 'db', { reclaim: 'delete' })
  const a = await newPod(dir)
  const l = tryLock(dir, a)!
  t.teardown(() => l.release())
  bindVolume(dir, 'db', a)
  l.release()
  removeVolume(dir, 'db')
  createVolume(dir, 'db', { reclaim: 'delete' })
  t.equal(unbindVolume(dir, 'db', a), 'not-bound')
  t.ok(fs.existsSync(pvDir(dir, 'db')), 'the new volume stays')
})

t.test('a recycle cut short is finished by the next claim; a link in place of data/ is unlinked', async (t) => {
  const dir = t.testdir({ outside: { 'victim.txt': 'precious' } })
  createVolume(dir, 'db', { reclaim: 'recycle' })
  const file = path.join(pvDir(dir, 'db'), 'volume.json')
  fs.writeFileSync(file, JSON.stringify({ ...readVolume(dir, 'db'), phase: 'recycling' }))
  fs.rmSync(pvDataDir(dir, 'db'), { recursive: true })
  fs.symlinkSync(path.join(dir, 'outside'), pvDataDir(dir, 'db'))
  const a = await newPod(dir)
  const l = tryLock(dir, a)!
  t.teardown(() => l.release())
  t.match(bindVolume(dir, 'db', a), { phase: 'available' })
  t.ok(fs.lstatSync(pvDataDir(dir, 'db')).isDirectory(), 'data/ is a real, empty directory again')
  t.same(fs.readdirSync(pvDataDir(dir, 'db')), [])
  t.same(listTree(path.join(dir, 'outside')), ['victim.txt'])
})

t.test('claims of pods that no longer exist are dropped', async (t) => {
  const dir = t.testdir({})
  createVolume(dir, 'db')
  const a = await newPod(dir)
  fs.mkdirSync(path.join(pvDir(dir, 'db'), 'claims'), { recursive: true })
  fs.writeFileSync(path.join(pvDir(dir, 'db'), 'claims', '11111111-1111-4111-8111-111111111111.json'), JSON.stringify({ pod: '11111111-1111-4111-8111-111111111111', mode: 'ReadWriteOnce', owner: 'x', read_only: false, claimed_at: '' }))
  const l = tryLock(dir, a)!
  t.teardown(() => l.release())
  bindVolume(dir, 'db', a)
  t.same(readBindings(dir, 'db').map((c) => c.pod), [a])
})
