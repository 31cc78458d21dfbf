// Black-box tests of `podctl gc` (CONTRACT §4, §5): spawns bin/podctl,
// including three gc processes racing over 300 exited pods.
import t from 'tap'
import fs from 'node:fs'
import { spawnSync } from 'node:child_process'
import os from 'node:os'
import path from 'node:path'
import { listTree, podsIn, STACK_RE, type Test, TIME_RE, whereIs } from '../helpers/common.js'
import { abortedPod, exitedDeletingPod, exitedPod, podctl, podctlAsync, preparedPod, preparingPod } from '../helpers/cli-util.js'
import { holdRunning } from '../helpers/pod-util.js'

interface GcJson {
  marked: string[]
  deleted: string[]
  skipped: { uuid: string; reason: string }[]
}

const gcJson = (t: Test, dir: string, args: string[] = []): GcJson => {
  const r = podctl(dir, ['gc', '--format', 'json', ...args])
  t.equal(r.status, 0, `gc ${args.join(' ')} exits 0`)
  t.equal(r.stderr, '', 'nothing on stderr')
  const v = JSON.parse(r.stdout) as GcJson
  t.strictSame(Object.keys(v).sort(), ['deleted', 'marked', 'skipped'], 'exactly {marked, deleted, skipped}')
  return v
}

const stateOf = (dir: string, uuid: string): { state: string; gc_marked_at: string | null } =>
  JSON.parse(podctl(dir, ['status', uuid, '--format', 'json']).stdout) as { state: string; gc_marked_at: string | null }

t.test('exited pods are marked, then deleted after the grace period', async (t) => {
  const dir = t.testdir({})
  const a = await exitedPod(dir)
  const b = await exitedPod(dir)

  const mark = podctl(dir, ['gc'])
  t.equal(mark.status, 0)
  t.equal(mark.stderr, '')
  t.strictSame(mark.stdout.split('\n').filter(Boolean).sort(), [`marked ${a}`, `marked ${b}`].sort(), 'text: one "marked UUID" line each')
  for (const u of [a, b]) {
    t.equal(whereIs(dir, u), 'exited-garbage')
    const s = stateOf(dir, u)
    t.equal(s.state, 'exited garbage')
    t.match(s.gc_marked_at, TIME_RE, 'gc_marked_at is set')
  }

  // The default grace period (30m) keeps them.
  const again = gcJson(t, dir)
  t.strictSame(again, { marked: [], deleted: [], skipped: [] }, 'nothing to do within the grace period')
  t.strictSame(podsIn(dir, 'exited-garbage'), [a, b].sort())
  t.equal(podctl(dir, ['gc', '--grace-period', '1h30m']).stdout, '', 'a longer grace period keeps them too')

  const sweep = podctl(dir, ['gc', '--grace-period', '0s'])
  t.equal(sweep.status, 0)
  t.equal(sweep.stderr, '')
  t.strictSame(sweep.stdout.split('\n').filter(Boolean).sort(), [`deleted ${a}`, `deleted ${b}`].sort())
  for (const u of [a, b]) {
    t.equal(whereIs(dir, u), undefined, 'deleted')
    t.equal(fs.lstatSync(path.join(dir, 'locks', u), { throwIfNoEntry: false }) !== undefined, false, 'no lock left behind')
  }
  t.equal(podctl(dir, ['list', '--format', 'json']).stdout, '[]\n')
})

t.test('--grace-period 0s marks and deletes exited pods in one pass', async (t) => {
  const dir = t.testdir({})
  const a = await exitedPod(dir)
  const v = gcJson(t, dir, ['--grace-period', '0s'])
  t.strictSame(v.deleted, [a])
  t.strictSame(v.skipped, [])
  t.equal(whereIs(dir, a), undefined)
})

t.test('--mark-only marks and deletes nothing', async (t) => {
  const dir = t.testdir({})
  const a = await exitedPod(dir)
  const v = gcJson(t, dir, ['--mark-only', '--grace-period', '0s'])
  t.strictSame(v, { marked: [a], deleted: [], skipped: [] })
  t.equal(whereIs(dir, a), 'exited-garbage')
  const w = gcJson(t, dir, ['--mark-only', '--grace-period', '0s'])
  t.strictSame(w.deleted, [], 'marked garbage is not swept either')
  t.equal(whereIs(dir, a), 'exited-garbage')
  t.strictSame(gcJson(t, dir, ['--grace-period', '0s']).deleted, [a], 'a later gc deletes it')
})

t.test('prepared pods expire after --expire-prepared', async (t) => {
  const dir = t.testdir({})
  const p = await preparedPod(dir)
  t.strictSame(gcJson(t, dir, ['--grace-period', '0s']), { marked: [], deleted: [], skipped: [] }, 'a fresh prepared pod is kept (24h default)')
  t.strictSame(gcJson(t, dir, ['--expire-prepared', '1h']).marked, [], 'and with 1h')
  t.equal(whereIs(dir, p), 'prepared')

  const v = gcJson(t, dir, ['--expire-prepared', '0s'])
  t.strictSame(v.marked, [p])
  t.equal(whereIs(dir, p), 'garbage')
  const s = stateOf(dir, p)
  t.equal(s.state, 'garbage')
  t.match(s.gc_marked_at, TIME_RE)
  t.strictSame(gcJson(t, dir, ['--grace-period', '0s']).deleted, [p])
  t.equal(whereIs(dir, p), undefined)

  const q = await preparedPod(dir)
  t.strictSame(gcJson(t, dir, ['--expire-prepared', '0s', '--grace-period', '0s']).deleted, [q], 'expired and deleted at once')
})

t.test('aborted prepares are collected', async (t) => {
  const dir = t.testdir({})
  const a = await abortedPod(dir)
  const v = gcJson(t, dir)
  t.strictSame(v.marked, [a])
  t.equal(whereIs(dir, a), 'garbage')
})

t.test('running and locked pods are skipped and untouched', async (t) => {
  const dir = t.testdir({})
  const running = await preparedPod(dir)
  await holdRunning(t, dir, running)
  const preparing = await preparingPod(t, dir)
  const deleting = await exitedDeletingPod(t, dir)
  const exited = await exitedPod(dir)
  const snapshot = (): (string[] | null)[] =>
    [running, preparing.uuid, deleting.uuid].map((u) => listTree(path.join(dir, 'pods', whereIs(dir, u) ?? 'none', u)))
  const before = snapshot()

  const v = gcJson(t, dir, ['--grace-period', '0s', '--expire-prepared', '0s'])
  t.strictSame(v.deleted, [exited], 'only the exited pod is deleted')
  t.strictSame(v.marked, [])
  for (const s of v.skipped) t.match(s, { uuid: String, reason: String }, 'skipped entries are {uuid, reason}')
  t.equal(whereIs(dir, running), 'run')
  t.equal(whereIs(dir, preparing.uuid), 'prepare')
  t.equal(whereIs(dir, deleting.uuid), 'exited-garbage')
  t.strictSame(snapshot(), before, 'their contents are untouched')
  t.equal(stateOf(dir, running).state, 'running')
  t.equal(stateOf(dir, preparing.uuid).state, 'preparing')
  t.equal(stateOf(dir, deleting.uuid).state, 'exited deleting')
})

t.test('bad durations are exit 2 and touch nothing', async (t) => {
  const dir = t.testdir({})
  const a = await exitedPod(dir)
  const p = await preparedPod(dir)
  const before = listTree(dir)
  for (const args of [
    ['--grace-period', '5'],
    ['--grace-period', '-1m'],
    ['--grace-period', 'abc'],
    ['--grace-period', ''],
    ['--expire-prepared', '1d'],
    ['--expire-prepared', '-0.5h'],
    ['--grace-period=1x'],
  ]) {
    const r = podctl(dir, ['gc', ...args])
    t.equal(r.status, 2, args.join(' '))
    t.equal(r.stdout, '')
    t.match(r.stderr, /^podctl: .*(grace-period|expire-prepared)/, 'names the flag')
    t.notMatch(r.stderr, STACK_RE)
    const j = podctl(dir, ['gc', '--format', 'json', ...args])
    t.equal(j.status, 2)
    t.match(JSON.parse(j.stderr.split('\n').find((l) => l.startsWith('{')) ?? 'null'), { error: { code: 'EUSAGE', message: String } })
  }
  t.strictSame(listTree(dir), before, 'nothing changed')
  t.equal(whereIs(dir, a), 'run')
  t.equal(whereIs(dir, p), 'prepared')
})

t.test('a data dir that does not exist: nothing to do, nothing created', async (t) => {
  const dir = path.join(t.testdir({}), 'none')
  t.strictSame(gcJson(t, dir, ['--grace-period', '0s']), { marked: [], deleted: [], skipped: [] })
  const text = podctl(dir, ['gc'])
  t.equal(text.status, 0)
  t.equal(text.stdout, '')
  t.equal(fs.existsSync(dir), false)
})

t.test('json-pretty', async (t) => {
  const dir = t.testdir({})
  const a = await exitedPod(dir)
  const r = podctl(dir, ['gc', '--format', 'json-pretty', '--mark-only'])
  t.equal(r.status, 0)
  t.strictSame(JSON.parse(r.stdout), { marked: [a], deleted: [], skipped: [] })
  t.match(r.stdout, /^\{\n {2}"marked": \[/)
})

// ---- concurrency

const PODS = 300
const GCS = 3
const ROUNDS = 3

// Seen in most rounds: a gc that listed a pod in exited-garbage/ (moved there
// by another gc, which then deleted it) takes the free lock in its sweep,
// reads no record, and writes the gc mark into the deleted directory.
// Each round with another number of removal threads (--workers): the
// default 4, one, and none (deleted in gc's own thread).
const WORKERS = ['4', '1', '0']

t.test(`${GCS} concurrent gc --grace-period 0s over ${PODS} exited pods`, async (t) => {
  for (let round = 1; round <= ROUNDS; round++) {
    const workers = WORKERS[(round - 1) % WORKERS.length]!
    t.test(`round ${round}, --workers ${workers}`, async (t) => {
      const dir = t.testdir({})
      const uuids: string[] = []
      // Pods are made through the library, without fsync (they are test data).
      for (let i = 0; i < PODS; i++) uuids.push(await exitedPod(dir, undefined, false))
      t.equal(podsIn(dir, 'run').length, PODS, `${PODS} exited pods`)

      const results = await Promise.all(
        Array.from({ length: GCS }, () => podctlAsync(t, dir, ['gc', '--grace-period', '0s', '--workers', workers, '--format', 'json'])),
      )
      const deleted: string[] = []
      results.forEach((r, i) => {
        t.equal(r.status, 0, `gc ${i} exits 0`)
        t.equal(r.signal, null)
        t.equal(r.stderr, '', `gc ${i} prints no error`)
        let v: GcJson | undefined
        try {
          v = JSON.parse(r.stdout) as GcJson
        } catch {
          t.fail(`gc ${i} stdout is not JSON: ${r.stdout.slice(0, 200)}`)
        }
        if (v) {
          t.strictSame(Object.keys(v).sort(), ['deleted', 'marked', 'skipped'])
          deleted.push(...v.deleted)
          t.strictSame(v.skipped.filter((s) => !uuids.includes(s.uuid) || typeof s.reason !== 'string'), [], `gc ${i} skipped only pods of ours, with reasons`)
        }
      })
      t.equal(deleted.length, new Set(deleted).size, 'no pod deleted twice')
      t.strictSame([...deleted].sort(), [...uuids].sort(), 'the deleted lists together are exactly the pods')
      for (const d of ['embryo', 'prepare', 'prepared', 'run', 'exited-garbage', 'garbage']) {
        t.strictSame(podsIn(dir, d), [], `${d}/ is empty`)
      }
      const locks = fs.readdirSync(path.join(dir, 'locks')).filter((n) => uuids.includes(n))
      t.strictSame(locks, [], 'no pod lock left behind')
      t.equal(podctl(dir, ['list', '--format', 'json']).stdout, '[]\n')
    })
  }
})

t.test('removal threads: each pod is deleted once and said at once, in text and JSON', async (t) => {
  // 250 pods: more than the 200 from which gc starts its threads.
  for (const format of ['table', 'json']) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-gc-threads-'))
    t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
    const uuids: string[] = []
    for (let i = 0; i < 250; i++) uuids.push(await exitedPod(dir, undefined, false))
    const r = podctl(dir, ['gc', '--grace-period', '0s', '--workers', '2', '--format', format])
    t.equal(r.status, 0, `${format}: exit 0`)
    t.equal(r.stderr, '', `${format}: nothing on stderr`)
    const deleted = format === 'json' ? (JSON.parse(r.stdout) as GcJson).deleted : r.stdout.split('\n').filter(Boolean).map((l) => l.replace(/^deleted /, ''))
    t.strictSame([...deleted].sort(), [...uuids].sort(), `${format}: every pod deleted, each said once`)
    for (const d of ['run', 'exited-garbage']) t.strictSame(podsIn(dir, d), [], `${format}: ${d}/ is empty`)
    t.strictSame(fs.readdirSync(path.join(dir, 'locks')), [], `${format}: no lock left`)
  }
})

t.test('--workers takes a whole number from 0', async (t) => {
  const dir = t.testdir({})
  const u = await exitedPod(dir)
  for (const bad of ['-1', 'two', '1.5', '']) {
    const r = podctl(dir, ['gc', '--grace-period', '0s', `--workers=${bad}`])
    t.equal(r.status, 2, `--workers=${bad}: exit 2`)
    t.match(r.stderr, /invalid --workers .*not a whole number of at least 0/)
    t.equal(whereIs(dir, u), 'run', `--workers=${bad}: the pod is untouched`)
  }
})

const mountWhy = process.getuid?.() !== 0 ? 'needs root to mount a tmpfs inside a pod' : undefined

t.test('a pod that a removal thread cannot delete fails alone; the others are deleted', { skip: mountWhy }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-gc-stuck-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  const uuids: string[] = []
  for (let i = 0; i < 250; i++) uuids.push(await exitedPod(dir, undefined, false))
  // Another file system inside one pod: gc never enters it, so that pod stays.
  const stuck = uuids[100]!
  const mnt = path.join(dir, 'pods', 'run', stuck, 'mnt')
  fs.mkdirSync(mnt)
  const m = spawnSync('mount', ['-t', 'tmpfs', 'tmpfs', mnt])
  if (m.status !== 0) return t.plan(0, `skipped: mount -t tmpfs failed: ${String(m.stderr).trim()}`)
  fs.writeFileSync(path.join(mnt, 'precious'), 'x')
  // Teardowns run last-in first-out: unmounted before the directory is removed.
  t.teardown(() => {
    for (const d of ['run', 'exited-garbage']) spawnSync('umount', [path.join(dir, 'pods', d, stuck, 'mnt')], { stdio: 'ignore' })
  })
  const r = podctl(dir, ['gc', '--grace-period', '0s', '--workers', '2', '--format', 'json'])
  t.equal(r.status, 1, 'exit 1: one pod could not be handled')
  t.match(r.stderr, new RegExp(`${stuck}: .*on another file system`), 'the failure names the pod and why')
  t.notMatch(r.stderr, STACK_RE, 'no stack trace')
  t.match(r.stderr, '{"error":{"code":"EFAILED","message":"gc could not handle 1 entry"}}', 'one entry, in the singular')
  const v = JSON.parse(r.stdout) as GcJson
  t.strictSame([...v.deleted].sort(), uuids.filter((u) => u !== stuck).sort(), 'every other pod deleted')
  t.equal(whereIs(dir, stuck), 'exited-garbage', 'the stuck pod stays garbage, with what gc could not delete')
  t.equal(fs.readFileSync(path.join(dir, 'pods', 'exited-garbage', stuck, 'mnt', 'precious'), 'utf8'), 'x', 'what is on the other file system is untouched')
  t.strictSame(fs.readdirSync(path.join(dir, 'locks')), [], 'its lock is released too')
})

t.test('gc --format json: an entry that is not a pod directory is {uuid: its name, path, reason} (gc.md), and a running pod is skipped with its state', async (t) => {
  const base = t.testdir({ elsewhere: { keep: 'x' } })
  const dir = path.join(base, 'data')
  const running = await preparedPod(dir) // makes the layout
  await holdRunning(t, dir, running)
  const name = '11111111-1111-4111-8111-111111111111'
  fs.symlinkSync(path.join(base, 'elsewhere'), path.join(dir, 'pods', 'garbage', name))
  const r = podctl(dir, ['gc', '--format', 'json'])
  t.equal(r.status, 1, 'an entry gc cannot handle: exit 1')
  const v = JSON.parse(r.stdout.split('\n')[0]!)
  t.strictSame(v.skipped.find((s: { uuid: string }) => s.uuid === name), { uuid: name, path: path.join(dir, 'pods', 'garbage', name), reason: 'error: a symlink, not a pod directory; podctl never follows it' })
  t.strictSame(v.skipped.find((s: { uuid: string }) => s.uuid === running), { uuid: running, reason: 'running: a live process holds its lock' })
  t.equal(fs.readFileSync(path.join(base, 'elsewhere', 'keep'), 'utf8'), 'x', 'never followed')
})
