// gc and removePod (lib/pod/gc.ts): mark exited pods, aborted prepares and
// expired prepared pods; sweep garbage past the grace period; never touch
// a pod another live process holds; removePod refuses a running pod.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../../lib/errors.js'
import { gc, removePod, type GcOptions } from '../../lib/pod/gc.js'
import { isLocked } from '../../lib/pod/locks.js'
import type { PodManifest } from '../../lib/pod/manifest.js'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { createPod, preparePod } from '../../lib/pod/prepare.js'
import { readRecord, writeRecord } from '../../lib/pod/record.js'
import { lockExists, lockOf, manifest, mkPod, whereIs } from '../helpers/common.js'
import { dataDir } from '../helpers/run-util.js'
import { holdLocks } from '../helpers/pod-util.js'

const MIN = 60_000
const HOUR = 60 * MIN
const DAY = 24 * HOUR
const M = manifest() as PodManifest

const opts = (o: Partial<GcOptions> = {}): GcOptions => ({ gracePeriodMs: HOUR, expirePreparedMs: DAY, ...o })

const exited = async (dir: string): Promise<string> => {
  const pod = await createPod(dir, M, { sync: false })
  pod.toRun({ sync: false })
  pod.unlock()
  return pod.uuid
}
const aborted = async (dir: string): Promise<string> => {
  const pod = await createPod(dir, M, { sync: false })
  pod.close()
  return pod.uuid
}
const prepared = async (dir: string, createdAgoMs = 0): Promise<string> =>
  (await preparePod(dir, M, { sync: false, now: new Date(Date.now() - createdAgoMs) })).uuid
/** Sets gc_marked_at in a pod's pod.json (as if gc had marked it then). */
const setMark = (dir: string, uuid: string, when: number | null): void => {
  const pod = podFromUUIDString(dir, uuid)
  const r = readRecord(pod.path)!
  r.gc_marked_at = when === null ? null : new Date(when).toISOString()
  writeRecord(pod.path, r)
}
const markOf = (dir: string, uuid: string): string | null => podFromUUIDString(dir, uuid).record().gc_marked_at
const sorted = (a: string[]): string[] => [...a].sort()

t.test('mark: exited, aborted prepares and expired prepared pods; the rest untouched', async (t) => {
  const dir = dataDir(t)
  const e = await exited(dir)
  const a = await aborted(dir)
  const old = await prepared(dir, 2 * DAY)
  const young = await prepared(dir)
  const now = Date.now()
  const r = await gc(dir, opts({ now }))
  t.strictSame(sorted(r.marked), sorted([e, a, old]), 'marked exactly the exited, the aborted and the expired')
  t.strictSame(r.deleted, [], 'nothing deleted within the grace period')
  t.strictSame(r.failed, [])
  t.equal(whereIs(dir, e), 'exited-garbage')
  t.equal(whereIs(dir, a), 'garbage')
  t.equal(whereIs(dir, old), 'garbage')
  t.equal(whereIs(dir, young), 'prepared', 'a young prepared pod stays')
  for (const u of [e, a, old]) t.equal(markOf(dir, u), new Date(now).toISOString(), `${u.slice(0, 8)}: gc_marked_at is the mark time`)
  t.equal(podFromUUIDString(dir, e).state, 'exited garbage', 'unlocked after gc')
  t.equal(podFromUUIDString(dir, a).state, 'garbage')
  t.strictSame(fs.readdirSync(path.join(dir, 'locks')), [], 'gc leaves no lock behind')
})

t.test('expirePreparedMs decides which prepared pods expire', async (t) => {
  const dir = dataDir(t)
  const p = await prepared(dir, 10 * MIN)
  t.strictSame((await gc(dir, opts({ expirePreparedMs: HOUR }))).marked, [], '10 min old, 1 h expiry: kept')
  t.strictSame((await gc(dir, opts({ expirePreparedMs: 5 * MIN }))).marked, [p], '10 min old, 5 min expiry: marked')
})

t.test('the grace period: marked now, kept for 1 h; deleted once the mark is older', async (t) => {
  const dir = dataDir(t)
  const e = await exited(dir)
  const g = await aborted(dir)
  await gc(dir, opts())
  const again = await gc(dir, opts())
  t.strictSame(again.deleted, [], 'a second pass within the grace period deletes nothing')
  t.strictSame(again.marked, [], 'and marks nothing again')
  t.equal(whereIs(dir, e), 'exited-garbage')
  t.equal(whereIs(dir, g), 'garbage')
  setMark(dir, e, Date.now() - 2 * HOUR)
  const r = await gc(dir, opts())
  t.strictSame(r.deleted, [e], 'the pod marked 2 h ago is deleted')
  t.equal(whereIs(dir, e), undefined)
  t.equal(whereIs(dir, g), 'garbage', 'the other one is kept')
  const later = await gc(dir, opts({ now: Date.now() + 2 * HOUR }))
  t.strictSame(later.deleted, [g], 'and deleted once the clock passes its grace period')
  t.equal(whereIs(dir, g), undefined)
})

t.test('a garbage pod without a mark time gets one and waits its grace period', async (t) => {
  const dir = dataDir(t)
  const e = await exited(dir)
  const pod = podFromUUIDString(dir, e)
  pod.toExitedGarbage()
  pod.close() // marked by a gc that died before recording when
  t.equal(markOf(dir, e), null)
  const now = Date.now()
  const r = await gc(dir, opts({ now }))
  t.strictSame(r.deleted, [])
  t.equal(markOf(dir, e), new Date(now).toISOString(), 'the clock starts now')
  const bare = mkPod(dir, 'garbage') // no pod.json at all
  t.strictSame((await gc(dir, opts())).deleted, [], 'no pod.json: a mark is written, nothing deleted')
  t.type(markOf(dir, bare), 'string')
})

t.test('grace period 0 deletes at once', async (t) => {
  const dir = dataDir(t)
  const e = await exited(dir)
  const a = await aborted(dir)
  const g = mkPod(dir, 'garbage')
  const r = await gc(dir, opts({ gracePeriodMs: 0 }))
  t.strictSame(sorted(r.deleted), sorted([e, a, g]))
  t.strictSame(r.marked, [], 'deleted in the same lock hold, not reported as marked')
  t.strictSame(r.failed, [])
  for (const u of [e, a, g]) t.equal(whereIs(dir, u), undefined)
  t.strictSame(fs.readdirSync(path.join(dir, 'locks')), [])
})

t.test('markOnly marks and deletes nothing', async (t) => {
  const dir = dataDir(t)
  const e = await exited(dir)
  const g = mkPod(dir, 'garbage')
  const eg = await exited(dir)
  const p = podFromUUIDString(dir, eg)
  p.toExitedGarbage()
  p.close()
  setMark(dir, eg, Date.now() - DAY)
  const r = await gc(dir, opts({ gracePeriodMs: 0, markOnly: true }))
  t.strictSame(r.marked, [e])
  t.strictSame(r.deleted, [])
  t.equal(whereIs(dir, e), 'exited-garbage')
  t.equal(whereIs(dir, g), 'garbage')
  t.equal(whereIs(dir, eg), 'exited-garbage', 'old garbage is kept too')
})

t.test('gc never touches a pod a live process holds', async (t) => {
  const dir = dataDir(t)
  const running = mkPod(dir, 'run', { 'pod.json': '' })
  const preparing = mkPod(dir, 'prepare')
  const deleting = mkPod(dir, 'garbage')
  const exitedDeleting = mkPod(dir, 'exited-garbage')
  const embryo = mkPod(dir, 'embryo')
  const holder = await holdLocks(t, dir, [running, preparing, deleting, exitedDeleting, embryo])
  const r = await gc(dir, opts({ gracePeriodMs: 0, now: Date.now() + DAY }))
  t.strictSame(r.marked, [])
  t.strictSame(r.deleted, [])
  t.strictSame(r.failed, [])
  t.equal(whereIs(dir, running), 'run')
  t.equal(whereIs(dir, preparing), 'prepare')
  t.equal(whereIs(dir, deleting), 'garbage')
  t.equal(whereIs(dir, exitedDeleting), 'exited-garbage')
  t.equal(whereIs(dir, embryo), 'embryo')
  for (const u of [running, preparing, deleting, exitedDeleting, embryo]) t.equal(isLocked(dir, u), true, 'still locked by its holder')
  t.strictSame(
    r.skipped.map((s) => s.uuid).sort(),
    sorted([running, preparing, deleting, exitedDeleting, embryo]),
    'every held pod is reported in skipped',
  )
  t.match(r.skipped.find((s) => s.uuid === running), { reason: /running/ }, 'with its state as the reason')
  await holder.kill()
  const after = await gc(dir, opts({ gracePeriodMs: 0, now: Date.now() + DAY }))
  t.strictSame(sorted(after.deleted), sorted([running, preparing, deleting, exitedDeleting, embryo]), 'once the holder is dead, gc takes them all')
})

t.test('an exited pod whose supervisor was SIGKILLed is collected', async (t) => {
  const dir = dataDir(t)
  const uuid = await prepared(dir)
  const h = await holdLocks(t, dir, [uuid])
  fs.renameSync(path.join(dir, 'pods', 'prepared', uuid), path.join(dir, 'pods', 'run', uuid))
  t.equal((await gc(dir, opts({ gracePeriodMs: 0 }))).deleted.length, 0, 'running: kept')
  await h.kill()
  t.ok(lockExists(lockOf(dir, uuid)), 'its dead lock is left')
  t.strictSame((await gc(dir, opts({ gracePeriodMs: 0 }))).deleted, [uuid], 'exited: deleted')
  t.equal(lockExists(lockOf(dir, uuid)), false, 'and its lock with it')
})

t.test('embryos: an old unlocked one is garbage, a young one is left alone', async (t) => {
  const dir = dataDir(t)
  const e = mkPod(dir, 'embryo')
  t.strictSame((await gc(dir, opts())).marked, [], 'young: its creator may still be at work')
  t.equal(whereIs(dir, e), 'embryo')
  t.strictSame((await gc(dir, opts({ now: Date.now() + 2 * MIN }))).marked, [e], 'older than a minute: marked')
  t.equal(whereIs(dir, e), 'garbage')
})

t.test('embryos: a grace period shorter than a minute shortens the wait; 0s collects an unlocked one at once', async (t) => {
  const dir = dataDir(t)
  const e = mkPod(dir, 'embryo')
  t.strictSame((await gc(dir, opts({ gracePeriodMs: 10 * MIN, markOnly: true }))).marked, [], 'grace 10m: still the minute')
  t.strictSame((await gc(dir, opts({ gracePeriodMs: 20_000, now: Date.now() + 30_000, markOnly: true }))).marked, [e], 'grace 20s, 30 s old: marked')
  const f = mkPod(dir, 'embryo')
  t.strictSame((await gc(dir, opts({ gracePeriodMs: 0 }))).deleted, [f], 'grace 0s: deleted at once')
  const held = mkPod(dir, 'embryo')
  const holder = await holdLocks(t, dir, [held])
  t.strictSame((await gc(dir, opts({ gracePeriodMs: 0 }))).marked, [], 'a locked embryo is never touched')
  t.equal(whereIs(dir, held), 'embryo')
  await holder.kill()
})

t.test('a symlink in a state dir is a failure, never followed or deleted', async (t) => {
  const root = t.testdir({ outside: { 'a.txt': 'keep', sub: { 'b.txt': 'keep' } } })
  const dir = path.join(root, 'data')
  const { ensureDataDir } = await import('../../lib/pod/layout.js')
  ensureDataDir(dir)
  const link = path.join(dir, 'pods', 'garbage', '8c3b1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a')
  fs.symlinkSync(path.join(root, 'outside'), link)
  const e = await exited(dir)
  const r = await gc(dir, opts({ gracePeriodMs: 0 }))
  t.strictSame(r.deleted, [e], 'the real pod is collected')
  t.equal(r.failed.length, 1)
  t.strictSame(r.failed[0], { uuid: path.basename(link), path: link, reason: r.failed[0]?.reason })
  t.match(r.failed[0], { reason: /symlink.*never follows/ })
  t.ok(fs.lstatSync(link).isSymbolicLink(), 'the link is left')
  t.equal(fs.readFileSync(path.join(root, 'outside', 'a.txt'), 'utf8'), 'keep')
  t.equal(fs.readFileSync(path.join(root, 'outside', 'sub', 'b.txt'), 'utf8'), 'keep')
})

t.test('gc sweeps dead locks of pods that are gone', async (t) => {
  const dir = dataDir(t)
  const gone = '0b8c1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'
  const h = await holdLocks(t, dir, [gone])
  await h.kill()
  t.ok(lockExists(lockOf(dir, gone)))
  await gc(dir, opts())
  t.equal(lockExists(lockOf(dir, gone)), false)
  t.equal((await gc(dir, opts({ markOnly: true }))).failed.length, 0)
})

t.test('onProgress counts every pod', async (t) => {
  const dir = dataDir(t)
  for (let i = 0; i < 3; i++) await exited(dir)
  mkPod(dir, 'garbage')
  const calls: Array<[number, number]> = []
  await gc(dir, opts({ onProgress: (d, n) => calls.push([d, n]) }))
  t.strictSame(calls, [
    [1, 4],
    [2, 4],
    [3, 4],
    [4, 4],
  ])
})

t.test('a garbage pod deleted by someone else during the pass is skipped, not a failure', async (t) => {
  // Deterministic form of the concurrent-gc race: between gc's listing and
  // its sweep, another process deletes a garbage pod gc has listed as
  // unlocked. onProgress runs in that window.
  const dir = dataDir(t)
  await exited(dir)
  const g = mkPod(dir, 'garbage', { 'pod.json': '' })
  let done = false
  const r = await gc(
    dir,
    opts({
      gracePeriodMs: HOUR,
      onProgress: () => {
        if (done) return
        done = true
        podFromUUIDString(dir, g).remove() // another remover wins
      },
    }),
  )
  t.equal(whereIs(dir, g), undefined)
  t.strictSame(r.failed, [], 'no failure reported')
  t.notOk(r.deleted.includes(g), 'and not reported as deleted by this gc')
})

t.test('removePod', async (t) => {
  t.test('refuses a running pod with a hint to stop it', async (t) => {
    const dir = dataDir(t)
    const uuid = mkPod(dir, 'run', { marker: 'x' })
    const h = await holdLocks(t, dir, [uuid])
    const pod = podFromUUIDString(dir, uuid)
    const er = t.throws(() => removePod(pod)) as PodctlError
    t.type(er, PodctlError)
    t.equal(er.code, 'EBADSTATE')
    t.equal(er.exitCode, 4)
    t.match(`${er.message}\n${er.hint ?? ''}`, `podctl stop ${uuid.slice(0, 8)}`, 'says what to do: podctl stop')
    t.equal(whereIs(dir, uuid), 'run', 'nothing moved')
    t.equal(fs.readFileSync(path.join(dir, 'pods', 'run', uuid, 'marker'), 'utf8'), 'x')
    t.equal(isLocked(dir, uuid), true)
    await h.release()
  })

  t.test('refuses pods another process is working on', async (t) => {
    const dir = dataDir(t)
    const cells = [
      ['prepare', 'preparing'],
      ['garbage', 'deleting'],
      ['exited-garbage', 'exited deleting'],
      ['embryo', 'embryo'],
    ] as const
    const uuids = cells.map(([d]) => mkPod(dir, d))
    const h = await holdLocks(t, dir, uuids)
    cells.forEach(([d, state], i) => {
      const pod = podFromUUIDString(dir, uuids[i]!)
      t.equal(pod.state, state)
      t.throws(() => removePod(pod), { code: 'EBADSTATE', message: new RegExp(`is ${state}`), hint: /try again later/ }, state)
      t.equal(whereIs(dir, uuids[i]!), d, `${state}: nothing moved`)
    })
    await h.release()
  })

  t.test('removes every pod that is not in use', async (t) => {
    const dir = dataDir(t)
    const pods: Record<string, string> = {
      exited: await exited(dir),
      prepared: await prepared(dir),
      'aborted prepare': await aborted(dir),
      garbage: mkPod(dir, 'garbage'),
      'exited garbage': mkPod(dir, 'exited-garbage'),
      embryo: mkPod(dir, 'embryo'),
    }
    for (const [state, uuid] of Object.entries(pods)) {
      const pod = podFromUUIDString(dir, uuid)
      t.equal(pod.state, state)
      removePod(pod)
      t.equal(whereIs(dir, uuid), undefined, `${state}: removed`)
      t.equal(isLocked(dir, uuid), false, `${state}: its lock released`)
    }
    t.strictSame(fs.readdirSync(path.join(dir, 'locks')), [])
  })
})
