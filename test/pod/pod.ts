// The Pod (lib/pod/pod.ts): every legal transition of CONTRACT §2 and the
// refusal of every illegal one, on real dirs, with "locked" meaning a lock
// held by a real child process; newPod, createPod, preparePod;
// podFromUUIDString; the queries.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, PodChangedStateError } from '../../lib/errors.js'
import { POD_DIRS, type PodDir } from '../../lib/pod/layout.js'
import { isLocked, tryLock } from '../../lib/pod/locks.js'
import { newPod, podFromUUIDString, type Pod } from '../../lib/pod/pod.js'
import { createPod, preparePod } from '../../lib/pod/prepare.js'
import { readRecord, writeRecord } from '../../lib/pod/record.js'
import type { PodManifest } from '../../lib/pod/manifest.js'
import { lockExists, lockOf, manifest, mkPod, whereIs } from '../helpers/common.js'
import { dataDir } from '../helpers/run-util.js'
import { holdLocks, probeLock } from '../helpers/pod-util.js'

type Op = 'toPreparing' | 'toPrepared' | 'toRun' | 'toExitedGarbage' | 'toGarbage' | 'remove'
const OPS: readonly Op[] = ['toPreparing', 'toPrepared', 'toRun', 'toExitedGarbage', 'toGarbage', 'remove']
const apply = (pod: Pod, op: Op): void => {
  pod[op]()
}

/** What a legal transition leads to: the dir afterwards (null: deleted) and the state this process sees. */
interface Legal {
  to: PodDir | null
  state: string | null
}
type Expect = Legal | 'EBADSTATE' | 'ECHANGED'

/**
 * CONTRACT §2 for a process that did not create the pod, by
 * (dir, locked by another live process, operation). Anything not listed
 * is refused with EBADSTATE. Lock held by another process on a pod that
 * would otherwise move: ECHANGED (the caller lost the race for the lock).
 */
const EXPECT: Record<PodDir, { unlocked: Partial<Record<Op, Expect>>; locked: Partial<Record<Op, Expect>> }> = {
  // An unlocked embryo is a creator that died before prepare/ (the design
  // doc's extension of CONTRACT §2: gc and rm clean it up through garbage/).
  embryo: { unlocked: { toGarbage: { to: 'garbage', state: 'deleting' } }, locked: {} },
  prepare: { unlocked: { toGarbage: { to: 'garbage', state: 'deleting' } }, locked: {} },
  prepared: {
    unlocked: { toRun: { to: 'run', state: 'running' }, toGarbage: { to: 'garbage', state: 'deleting' } },
    locked: { toRun: 'ECHANGED', toGarbage: 'ECHANGED' },
  },
  run: { unlocked: { toExitedGarbage: { to: 'exited-garbage', state: 'exited deleting' } }, locked: {} },
  'exited-garbage': { unlocked: { remove: { to: null, state: null } }, locked: { remove: 'ECHANGED' } },
  garbage: { unlocked: { remove: { to: null, state: null } }, locked: { remove: 'ECHANGED' } },
}

const MARKER = 'marker'

t.test('every transition from every cell of the state table (non-creator)', async (t) => {
  const dir = dataDir(t)
  interface Case {
    dir: PodDir
    locked: boolean
    op: Op
    uuid: string
  }
  const cases: Case[] = []
  for (const d of POD_DIRS) {
    for (const locked of [false, true]) {
      for (const op of OPS) cases.push({ dir: d, locked, op, uuid: mkPod(dir, d, { [MARKER]: `${d} ${op}` }) })
    }
  }
  const holder = await holdLocks(
    t,
    dir,
    cases.filter((c) => c.locked).map((c) => c.uuid),
  )
  for (const c of cases) {
    const name = `${c.dir} ${c.locked ? 'locked' : 'unlocked'} ${c.op}`
    const expect = EXPECT[c.dir][c.locked ? 'locked' : 'unlocked'][c.op] ?? 'EBADSTATE'
    const pod = podFromUUIDString(dir, c.uuid)
    const before = pod.state
    t.equal(pod.locked, c.locked, `${name}: loaded as ${before}`)
    let err: unknown
    try {
      apply(pod, c.op)
    } catch (er) {
      err = er
    }
    if (typeof expect === 'string') {
      t.type(err, PodctlError, `${name}: refused with a PodctlError`)
      t.equal((err as PodctlError).code, expect, `${name}: code ${expect}`)
      t.match((err as Error).message, c.uuid, `${name}: the message names the pod`)
      if (expect === 'ECHANGED') {
        t.type(err, PodChangedStateError)
        t.match((err as Error).message, /changed state/, `${name}: "pod changed state"`)
      } else {
        t.match((err as Error).message, before, `${name}: the message says the state`)
      }
      t.equal(whereIs(dir, c.uuid), c.dir, `${name}: nothing moved`)
      t.equal(fs.readFileSync(path.join(dir, 'pods', c.dir, c.uuid, MARKER), 'utf8'), `${c.dir} ${c.op}`, `${name}: contents intact`)
      t.equal(pod.holdsLock, false, `${name}: the refused caller holds no lock`)
      t.equal(isLocked(dir, c.uuid), c.locked, `${name}: the lock is as it was`)
      t.equal(pod.dir, c.dir)
      if (c.dir === 'run' && c.locked && c.op === 'toExitedGarbage') {
        t.match((err as PodctlError).hint, /podctl stop/, `${name}: the hint says to stop it`)
      }
    } else {
      t.equal(err, undefined, `${name}: allowed`)
      if (expect.to === null) {
        t.equal(whereIs(dir, c.uuid), undefined, `${name}: deleted`)
        t.equal(pod.removed, true)
        t.equal(lockExists(lockOf(dir, c.uuid)), false, `${name}: and its lock released`)
      } else {
        t.equal(whereIs(dir, c.uuid), expect.to, `${name}: moved to ${expect.to}`)
        t.equal(pod.dir, expect.to)
        t.equal(pod.state, expect.state, `${name}: now ${expect.state}`)
        t.equal(pod.holdsLock, true, `${name}: the lock is held afterwards`)
        t.equal(await probeLock(t, dir, c.uuid), 'busy', `${name}: another process sees it locked`)
        t.equal(fs.readFileSync(path.join(dir, 'pods', expect.to, c.uuid, MARKER), 'utf8'), `${c.dir} ${c.op}`, `${name}: contents moved along`)
        pod.close()
        t.equal(isLocked(dir, c.uuid), false, `${name}: close() releases it`)
      }
    }
  }
  await holder.release()
})

t.test('newPod: embryo → prepare by the creator, locked', async (t) => {
  const dir = dataDir(t)
  const pod = await newPod(dir)
  t.equal(pod.dir, 'prepare')
  t.equal(pod.state, 'preparing')
  t.equal(pod.holdsLock, true)
  t.equal(pod.locked, true)
  t.equal(whereIs(dir, pod.uuid), 'prepare', 'in prepare/ only')
  t.strictSame(fs.readdirSync(path.join(dir, 'pods', 'embryo')), [], 'no embryo left behind')
  t.match(pod.uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  t.equal(isLocked(dir, pod.uuid), true)
  t.equal(await probeLock(t, dir, pod.uuid), 'busy', 'another process cannot take it')
  t.equal(podFromUUIDString(dir, pod.uuid).state, 'preparing', 'another reader sees preparing')
  const other = await newPod(dir)
  t.not(other.uuid, pod.uuid, 'every newPod is a new uuid')
  pod.close()
  other.close()
  t.equal(podFromUUIDString(dir, pod.uuid).state, 'aborted prepare', 'its creator gone, it is an aborted prepare')
})

t.test('newPod creates the data dir with the modes of CONTRACT §1', async (t) => {
  const dir = path.join(t.testdir({}), 'new', 'data')
  const pod = await newPod(dir)
  t.equal(fs.statSync(dir).mode & 0o777, 0o750)
  for (const d of POD_DIRS) t.equal(fs.statSync(path.join(dir, 'pods', d)).mode & 0o777, 0o750, `pods/${d} is 0750`)
  t.equal(fs.statSync(pod.path).mode & 0o777, 0o750, 'the pod dir is 0750')
  pod.close()
})

t.test('newPod on a data dir that is a file fails with EFAILED', async (t) => {
  const file = path.join(t.testdir({ f: 'x' }), 'f')
  await t.rejects(newPod(file), { code: 'EFAILED', message: /not a directory/ })
})

t.test('the creator: prepare → prepared, unlocked', async (t) => {
  const dir = dataDir(t)
  const pod = await newPod(dir)
  pod.toPrepared()
  t.equal(pod.dir, 'prepared')
  t.equal(pod.state, 'prepared')
  t.equal(pod.holdsLock, false, 'toPrepared releases the lock')
  t.equal(whereIs(dir, pod.uuid), 'prepared')
  t.equal(isLocked(dir, pod.uuid), false)
  t.equal(lockExists(lockOf(dir, pod.uuid)), false)
  t.throws(() => pod.toPrepared(), { code: 'EBADSTATE' }, 'not twice')
  t.throws(() => pod.toPreparing(), { code: 'EBADSTATE' })
})

t.test('the creator: prepare → run, and the runner can do nothing else', async (t) => {
  const dir = dataDir(t)
  const pod = await newPod(dir)
  pod.toRun()
  t.equal(pod.dir, 'run')
  t.equal(pod.state, 'running')
  t.equal(pod.holdsLock, true, 'the supervisor keeps the lock')
  t.equal(await probeLock(t, dir, pod.uuid), 'busy')
  t.equal(podFromUUIDString(dir, pod.uuid).state, 'running')
  for (const op of OPS) {
    t.throws(() => apply(pod, op), { code: 'EBADSTATE' }, `the runner cannot ${op}`)
    t.equal(whereIs(dir, pod.uuid), 'run', `${op}: nothing moved`)
    t.equal(pod.holdsLock, true, `${op}: still locked`)
  }
  pod.unlock()
  t.equal(pod.state, 'exited')
  t.equal(podFromUUIDString(dir, pod.uuid).state, 'exited')
})

t.test('the creator in prepare: what it may and may not do', async (t) => {
  const dir = dataDir(t)
  const refused: Op[] = ['toPreparing', 'toExitedGarbage', 'remove']
  for (const op of refused) {
    const pod = await newPod(dir)
    t.throws(() => apply(pod, op), { code: 'EBADSTATE' }, `the creator cannot ${op} from prepare`)
    t.equal(whereIs(dir, pod.uuid), 'prepare', `${op}: nothing moved`)
    t.equal(pod.holdsLock, true, `${op}: the creator keeps its lock`)
    pod.close()
  }
  // The creator gives up: prepare (locked by itself) → garbage → deleted.
  const pod = await newPod(dir)
  pod.toGarbage()
  t.equal(pod.state, 'deleting')
  t.equal(whereIs(dir, pod.uuid), 'garbage')
  pod.remove()
  t.equal(whereIs(dir, pod.uuid), undefined)
  t.equal(isLocked(dir, pod.uuid), false)
})

t.test('a full life: prepared → run → exited → exited garbage → deleted', async (t) => {
  const dir = dataDir(t)
  const prepared = await preparePod(dir, manifest() as PodManifest)
  const uuid = prepared.uuid
  const runner = podFromUUIDString(dir, uuid)
  t.equal(runner.state, 'prepared')
  runner.toRun()
  t.equal(runner.state, 'running')
  runner.unlock()
  const gc = podFromUUIDString(dir, uuid)
  t.equal(gc.state, 'exited')
  t.equal(gc.isAfterRun(), true)
  gc.toExitedGarbage()
  t.equal(gc.state, 'exited deleting')
  gc.unlock()
  const rm = podFromUUIDString(dir, uuid)
  t.equal(rm.state, 'exited garbage')
  rm.remove()
  t.equal(whereIs(dir, uuid), undefined)
  t.strictSame(fs.readdirSync(path.join(dir, 'locks')), [], 'no lock left behind')
  t.throws(() => podFromUUIDString(dir, uuid), { code: 'ENOPOD' })
})

t.test('a pod another process locked after we looked: ECHANGED, nothing moved', async (t) => {
  const dir = dataDir(t)
  for (const [d, op] of [
    ['prepared', 'toRun'],
    ['prepared', 'toGarbage'],
    ['run', 'toExitedGarbage'],
    ['prepare', 'toGarbage'],
    ['exited-garbage', 'remove'],
    ['garbage', 'remove'],
  ] as const) {
    const uuid = mkPod(dir, d)
    const pod = podFromUUIDString(dir, uuid)
    t.equal(pod.locked, false)
    const holder = await holdLocks(t, dir, [uuid])
    t.throws(() => apply(pod, op), { code: 'ECHANGED', message: /changed state/ }, `${d} ${op}`)
    t.equal(whereIs(dir, uuid), d, `${d} ${op}: nothing moved`)
    t.equal(pod.holdsLock, false)
    await holder.release()
  }
})

t.test('a pod another Pod moved after we looked: ECHANGED, never a second transition', async (t) => {
  const dir = dataDir(t)
  for (const [d, op, to] of [
    ['prepared', 'toRun', 'run'],
    ['prepared', 'toGarbage', 'garbage'],
    ['run', 'toExitedGarbage', 'exited-garbage'],
    ['prepare', 'toGarbage', 'garbage'],
  ] as const) {
    const uuid = mkPod(dir, d)
    const stale = podFromUUIDString(dir, uuid)
    const winner = podFromUUIDString(dir, uuid)
    apply(winner, op)
    winner.close()
    t.equal(whereIs(dir, uuid), to, `${d} ${op}: the winner moved it`)
    t.throws(() => apply(stale, op), { code: 'ECHANGED', message: /changed state/ }, `${d} ${op}: the loser gets ECHANGED`)
    t.equal(whereIs(dir, uuid), to, `${d} ${op}: and moves nothing`)
    stale.close()
    t.equal(isLocked(dir, uuid), false, `${d} ${op}: close() releases what the loser took`)
  }
})

t.test('remove of a pod another Pod already deleted: ECHANGED', async (t) => {
  const dir = dataDir(t)
  for (const d of ['garbage', 'exited-garbage'] as const) {
    const uuid = mkPod(dir, d)
    const stale = podFromUUIDString(dir, uuid)
    podFromUUIDString(dir, uuid).remove()
    t.equal(whereIs(dir, uuid), undefined)
    let err: unknown
    try {
      stale.remove()
    } catch (er) {
      err = er
    }
    t.match(err, { code: 'ECHANGED' }, `${d}: the second remove is told the pod changed state`)
    stale.close()
  }
})

t.test('transitions refresh nothing: a pod moved by hand is a lost race', async (t) => {
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'prepared')
  const pod = podFromUUIDString(dir, uuid)
  fs.renameSync(path.join(dir, 'pods', 'prepared', uuid), path.join(dir, 'pods', 'garbage', uuid))
  t.throws(() => pod.toRun(), { code: 'ECHANGED', message: /no longer in prepared/ })
  t.equal(whereIs(dir, uuid), 'garbage')
  pod.close()
  pod.refresh()
  t.equal(pod.dir, 'garbage', 'refresh() finds it')
  t.equal(pod.state, 'garbage')
})

t.test('refresh() follows the pod and its lock, and throws ENOPOD once it is gone', async (t) => {
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'run')
  const pod = podFromUUIDString(dir, uuid)
  t.equal(pod.state, 'exited')
  const holder = await holdLocks(t, dir, [uuid])
  t.equal(pod.state, 'exited', 'not refreshed: still the old state')
  pod.refresh()
  t.equal(pod.state, 'running', 'refreshed: running')
  await holder.kill()
  pod.refresh()
  t.equal(pod.state, 'exited', 'the holder killed: exited')
  fs.rmSync(path.join(dir, 'pods', 'run', uuid), { recursive: true })
  t.throws(() => pod.refresh(), { code: 'ENOPOD' })
})

t.test('podFromUUIDString', async (t) => {
  const dir = dataDir(t)
  const a = mkPod(dir, 'prepared', {}, '3f2a1c0e-0000-4000-8000-000000000001')
  const b = mkPod(dir, 'run', {}, '3f2a1c0e-0000-4000-8000-000000000002')
  const c = mkPod(dir, 'garbage', {}, '7777aaaa-0000-4000-8000-000000000003')

  t.test('a full UUID', async (t) => {
    const pod = podFromUUIDString(dir, a)
    t.equal(pod.uuid, a)
    t.equal(pod.dir, 'prepared')
    t.equal(pod.path, path.join(dir, 'pods', 'prepared', a))
    t.equal(pod.dataDir, dir)
    t.equal(podFromUUIDString(dir, a.toUpperCase()).uuid, a, 'upper case is accepted')
    t.equal(podFromUUIDString(dir, ` ${a}\n`).uuid, a, 'surrounding blanks are ignored')
  })
  t.test('an unambiguous prefix', async (t) => {
    t.equal(podFromUUIDString(dir, '7').uuid, c)
    t.equal(podFromUUIDString(dir, '7777AAAA').uuid, c)
    t.equal(podFromUUIDString(dir, '3f2a1c0e-0000-4000-8000-000000000002').uuid, b)
  })
  t.test('an ambiguous prefix lists the candidates', async (t) => {
    const er = t.throws(() => podFromUUIDString(dir, '3f2a')) as PodctlError
    t.equal(er.code, 'ENOPOD')
    t.match(er.message, /ambiguous/)
    t.match(er.message, a)
    t.match(er.message, b)
    t.notMatch(er.message, c)
  })
  t.test('no match', async (t) => {
    t.throws(() => podFromUUIDString(dir, 'abc'), { code: 'ENOPOD', message: /no pod matches/ })
    t.throws(() => podFromUUIDString(dir, '0b8c1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'), { code: 'ENOPOD', message: /no such pod/ })
    t.throws(() => podFromUUIDString(path.join(dir, 'missing'), a), { code: 'ENOPOD' }, 'no data dir')
  })
  t.test('not a UUID: EUSAGE', async (t) => {
    for (const bad of ['', ' ', '-', '---', 'xyz', '../etc', 'a/b', '3f2a1c0e*', '3f2a1c0e-0000-4000-8000-0000000000011', '3f2a1c0e-0000-1000-8000-000000000001', 'gggggggg-0000-4000-8000-000000000001']) {
      t.throws(() => podFromUUIDString(dir, bad), { code: 'EUSAGE' }, JSON.stringify(bad))
    }
  })
  t.test('a pod path that is not a directory: EFAILED, never followed', async (t) => {
    const file = '8c3b1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'
    fs.writeFileSync(path.join(dir, 'pods', 'run', file), 'x')
    t.throws(() => podFromUUIDString(dir, file), { code: 'EFAILED', message: /not a directory/ })
    t.equal(fs.readFileSync(path.join(dir, 'pods', 'run', file), 'utf8'), 'x')
  })
  t.test('the lock state comes from the lock', async (t) => {
    const holder = await holdLocks(t, dir, [b])
    t.equal(podFromUUIDString(dir, b).state, 'running')
    await holder.release()
    t.equal(podFromUUIDString(dir, b).state, 'exited')
  })
})

t.test('createPod and preparePod write the pod and leave it as documented', async (t) => {
  const dir = dataDir(t)
  const m = manifest({
    name: 'web',
    labels: { team: 'infra' },
    annotations: { note: 'free text' },
    apps: [
      { name: 'migrate', type: 'init', exec: ['/bin/sh', '-c', 'true'] },
      { name: 'web', exec: ['sleep', '1'] },
    ],
  }) as PodManifest
  const created = new Date('2026-01-02T03:04:05.678Z')
  const preparing = await createPod(dir, m, { now: created })
  t.equal(preparing.state, 'preparing')
  t.equal(preparing.holdsLock, true)
  t.strictSame(JSON.parse(fs.readFileSync(path.join(preparing.path, 'manifest'), 'utf8')), m, 'the manifest is stored')
  t.strictSame(fs.readdirSync(path.join(preparing.path, 'apps')).sort(), ['migrate', 'web'], 'one root per app')
  t.equal(fs.statSync(path.join(preparing.path, 'manifest')).mode & 0o777, 0o640, 'files are 0640')
  t.equal(fs.statSync(path.join(preparing.path, 'apps', 'web')).mode & 0o777, 0o750, 'dirs are 0750')
  t.equal(preparing.creationTime()?.toISOString(), created.toISOString())
  preparing.toPrepared()

  const pod = await preparePod(dir, m, { sync: false })
  t.equal(pod.state, 'prepared')
  t.equal(pod.holdsLock, false)
  t.equal(isLocked(dir, pod.uuid), false)
  const r = readRecord(pod.path)!
  t.match(r, {
    uuid: pod.uuid,
    name: 'web',
    started_at: null,
    gc_marked_at: null,
    pid: null,
    mutable: false,
    exit_code: null,
    labels: { team: 'infra' },
    annotations: { note: 'free text' },
    apps: [
      { name: 'migrate', type: 'init', state: 'created', pid: null, exit_code: null },
      { name: 'web', type: 'regular', state: 'created', pid: null, exit_code: null },
    ],
  })
  t.match(r.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
})

t.test('queries', async (t) => {
  const dir = dataDir(t)
  const m = manifest({ apps: [{ name: 'a', exec: ['true'] }, { name: 'b', exec: ['true'] }] }) as PodManifest
  const pod = await preparePod(dir, m, { sync: false })

  t.test('times, pid and exit codes come from pod.json', async (t) => {
    const p = podFromUUIDString(dir, pod.uuid)
    t.type(p.creationTime(), Date)
    t.equal(p.startTime(), null, 'never started')
    t.equal(p.gcMarkedTime(), null)
    t.equal(p.pid(), null)
    t.equal(p.isMutable(), false)
    t.throws(() => p.appExitCode('a'), { code: 'EBADSTATE', message: /no exit code yet/ })
    t.throws(() => p.appExitCode('zzz'), { code: 'ENOPOD', message: /no app named "zzz"/ })
    const r = readRecord(p.path)!
    r.started_at = '2026-01-01T00:00:00.000Z'
    r.gc_marked_at = '2026-01-01T01:00:00.000Z'
    r.pid = 4242
    r.apps[1]!.exit_code = 3
    r.apps[1]!.state = 'exited'
    writeRecord(p.path, r)
    t.equal(p.startTime(), null, 'the record is cached until refresh()')
    p.refresh()
    t.equal(p.startTime()?.toISOString(), '2026-01-01T00:00:00.000Z')
    t.equal(p.gcMarkedTime()?.toISOString(), '2026-01-01T01:00:00.000Z')
    t.equal(p.pid(), 4242)
    t.equal(p.appExitCode('b'), 3)
    t.doesNotThrow(() => p.sync())
  })

  t.test('a pod without pod.json reads as an empty record', async (t) => {
    const uuid = mkPod(dir, 'run')
    const p = podFromUUIDString(dir, uuid)
    t.equal(p.creationTime(), null)
    t.equal(p.startTime(), null)
    t.equal(p.pid(), null)
    t.equal(p.isMutable(), false)
    t.strictSame(p.record().apps, [])
    fs.writeFileSync(path.join(p.path, 'pod.json'), '{not json')
    p.refresh()
    t.equal(p.creationTime(), null, 'a damaged pod.json too')
  })

  t.test('isAfterRun, isFinished and podManifestAvailable for every cell', async (t) => {
    const cells: Array<[PodDir, boolean, string, boolean, boolean, boolean]> = [
      // dir, locked, state, afterRun, finished, manifest available
      ['embryo', false, 'embryo', false, false, false],
      ['embryo', true, 'embryo', false, false, false],
      ['prepare', false, 'aborted prepare', false, true, false],
      ['prepare', true, 'preparing', false, false, false],
      ['prepared', false, 'prepared', false, false, true],
      ['prepared', true, 'prepared', false, false, true],
      ['run', false, 'exited', true, true, true],
      ['run', true, 'running', false, false, true],
      ['exited-garbage', false, 'exited garbage', true, true, true],
      ['exited-garbage', true, 'exited deleting', true, true, false],
      ['garbage', false, 'garbage', false, true, true],
      ['garbage', true, 'deleting', false, true, false],
    ]
    const uuids = cells.map(([d]) => mkPod(dir, d))
    const holder = await holdLocks(
      t,
      dir,
      uuids.filter((_, i) => cells[i]![1]),
    )
    cells.forEach(([d, locked, state, afterRun, finished, avail], i) => {
      const p = podFromUUIDString(dir, uuids[i]!)
      const name = `${d} ${locked ? 'locked' : 'unlocked'}`
      t.equal(p.state, state, `${name}: ${state}`)
      t.equal(p.isAfterRun(), afterRun, `${name}: isAfterRun`)
      t.equal(p.isFinished(), finished, `${name}: isFinished`)
      t.equal(p.podManifestAvailable(), avail, `${name}: podManifestAvailable`)
    })
    await holder.release()
  })

  t.test('podManifest', async (t) => {
    const p = podFromUUIDString(dir, pod.uuid)
    const { raw, manifest: parsed } = p.podManifest()
    t.strictSame(JSON.parse(raw), m)
    t.strictSame(parsed, m)
    const bare = podFromUUIDString(dir, mkPod(dir, 'prepared'))
    t.throws(() => bare.podManifest(), { code: 'EFAILED', message: /has no manifest/ })
    const damaged = podFromUUIDString(dir, mkPod(dir, 'prepared', { manifest: '{"apiVersion": "v0"}' }))
    t.throws(() => damaged.podManifest(), { code: 'EFAILED', message: /damaged manifest: invalid manifest: apiVersion/ })
  })
})

t.test('tryExclusiveLock and unlock', async (t) => {
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'prepared')
  const a = podFromUUIDString(dir, uuid)
  const b = podFromUUIDString(dir, uuid)
  t.equal(a.tryExclusiveLock(), true)
  t.equal(a.tryExclusiveLock(), true, 'idempotent for the holder')
  t.equal(b.tryExclusiveLock(), false, 'a second Pod cannot take it')
  t.equal(b.locked, true, 'and then knows it is locked')
  a.unlock()
  t.equal(a.holdsLock, false)
  const l = tryLock(dir, uuid)
  t.ok(l, 'free again')
  l?.release()
})
