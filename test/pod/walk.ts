// walkPods / listPods (lib/pod/walk.ts) over the scenarios of rkt's
// pkg/pod/pods_test.go, with every Include mask, "locked" meaning a lock
// held by a real child process; and every cell of the state table of
// CONTRACT §2 through both listPods and podFromUUIDString.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { POD_DIRS, type PodDir } from '../../lib/pod/layout.js'
import { isLocked } from '../../lib/pod/locks.js'
import { podFromUUIDString, type Pod } from '../../lib/pod/pod.js'
import { Include, listPods, walkPods, type InvalidEntry } from '../../lib/pod/walk.js'
import { mkPod } from '../helpers/common.js'
import { dataDir } from '../helpers/run-util.js'
import { holdLocks, MOVER, spawnNode } from '../helpers/pod-util.js'

const MASKS = ['embryo', 'prepare', 'prepared', 'run', 'exitedGarbage', 'garbage', 'most', 'all'] as const
type MaskName = (typeof MASKS)[number]

/** The state dirs each mask includes, written out (not derived from the code under test). */
const MASK_DIRS: Record<MaskName, PodDir[]> = {
  embryo: ['embryo'],
  prepare: ['prepare'],
  prepared: ['prepared'],
  run: ['run'],
  exitedGarbage: ['exited-garbage'],
  garbage: ['garbage'],
  most: ['prepare', 'prepared', 'run', 'exited-garbage'],
  all: ['embryo', 'prepare', 'prepared', 'run', 'exited-garbage', 'garbage'],
}

/** The state table of CONTRACT §2, written out. */
const STATE: Record<PodDir, [string, string]> = {
  embryo: ['embryo', 'embryo'],
  prepare: ['preparing', 'aborted prepare'],
  prepared: ['prepared', 'prepared'],
  run: ['running', 'exited'],
  'exited-garbage': ['exited deleting', 'exited garbage'],
  garbage: ['deleting', 'garbage'],
}

interface Spec {
  dir: PodDir
  locked: boolean
}

const ALL_CELLS: Spec[] = POD_DIRS.flatMap((dir) => [
  { dir, locked: false },
  { dir, locked: true },
])

const SCENARIOS: Record<string, Spec[]> = {
  'no pods': [],
  'one executing pod': [{ dir: 'run', locked: true }],
  'one exited pod': [{ dir: 'run', locked: false }],
  'one garbage pod': [{ dir: 'garbage', locked: false }],
  'one deleting pod': [{ dir: 'garbage', locked: true }],
  'one exited garbage pod': [{ dir: 'exited-garbage', locked: false }],
  'one pod in each cell of the state table': ALL_CELLS,
}

/** [uuid, state] pairs, sorted, for comparing listings. */
const summary = (pods: Pod[]): string[] => pods.map((p) => `${p.uuid} ${p.state}`).sort()

for (const [scenario, specs] of Object.entries(SCENARIOS)) {
  t.test(scenario, async (t) => {
    const dir = dataDir(t)
    const pods = specs.map((s) => ({ ...s, uuid: mkPod(dir, s.dir) }))
    const locked = pods.filter((p) => p.locked).map((p) => p.uuid)
    const holder = locked.length > 0 ? await holdLocks(t, dir, locked) : undefined
    for (const mask of MASKS) {
      const want = pods
        .filter((p) => MASK_DIRS[mask].includes(p.dir))
        .map((p) => `${p.uuid} ${STATE[p.dir][p.locked ? 0 : 1]}`)
        .sort()
      t.strictSame(summary(listPods(dir, Include[mask])), want, `listPods ${mask}`)
      const walked: Pod[] = []
      await walkPods(dir, Include[mask], (pod) => {
        walked.push(pod)
      })
      t.strictSame(summary(walked), want, `walkPods ${mask}`)
    }
    // Combined masks are unions.
    const runOrGarbage = pods.filter((p) => p.dir === 'run' || p.dir === 'garbage').length
    t.equal(listPods(dir, Include.run | Include.garbage).length, runOrGarbage, 'run | garbage')
    t.equal(listPods(dir, 0).length, 0, 'an empty mask lists nothing')
    await holder?.release()
  })
}

t.test('a data dir that does not exist lists nothing', async (t) => {
  const dir = path.join(t.testdir({}), 'nope')
  for (const mask of MASKS) t.strictSame(listPods(dir, Include[mask]), [], mask)
  t.equal(fs.existsSync(dir), false, 'and is not created by listing')
})

t.test('the state table: every cell through listPods and podFromUUIDString, then its holder dies', async (t) => {
  const dir = dataDir(t)
  const cells = ALL_CELLS.map((s) => ({ ...s, uuid: mkPod(dir, s.dir) }))
  const holder = await holdLocks(
    t,
    dir,
    cells.filter((c) => c.locked).map((c) => c.uuid),
  )
  const listed = new Map(listPods(dir, Include.all).map((p) => [p.uuid, p]))
  t.equal(listed.size, 12)
  for (const c of cells) {
    const want = STATE[c.dir][c.locked ? 0 : 1]
    const name = `${c.dir} ${c.locked ? 'locked' : 'unlocked'}`
    t.equal(listed.get(c.uuid)?.state, want, `${name}: listPods says ${want}`)
    t.equal(listed.get(c.uuid)?.locked, c.locked, `${name}: listPods locked`)
    t.equal(listed.get(c.uuid)?.dir, c.dir)
    const pod = podFromUUIDString(dir, c.uuid)
    t.equal(pod.state, want, `${name}: podFromUUIDString says ${want}`)
    t.equal(pod.locked, c.locked)
    t.equal(pod.holdsLock, false, 'a reader holds nothing')
  }
  await holder.kill()
  for (const c of cells) {
    const want = STATE[c.dir][1]
    t.equal(podFromUUIDString(dir, c.uuid).state, want, `${c.dir} ${c.locked ? 'was locked' : 'unlocked'}: ${want} once the holder is killed`)
  }
  t.strictSame(
    summary(listPods(dir, Include.all)),
    cells.map((c) => `${c.uuid} ${STATE[c.dir][1]}`).sort(),
    'listPods agrees',
  )
})

t.test('a symlink planted in a state dir is reported, never followed', async (t) => {
  const root = t.testdir({
    outside: {
      '8c3b1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a': { 'pod.json': '{}', secret: 'keep me' },
      'precious.txt': 'keep me too',
    },
  })
  const dir = path.join(root, 'data')
  fs.mkdirSync(dir)
  const { ensureDataDir } = await import('../../lib/pod/layout.js')
  ensureDataDir(dir)
  const real = mkPod(dir, 'garbage')
  const linkName = '1b8c1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'
  // A symlink named like a pod, pointing at a directory outside.
  fs.symlinkSync(path.join(root, 'outside', '8c3b1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'), path.join(dir, 'pods', 'garbage', linkName))
  // A symlink to the whole outside dir, and a dangling one.
  fs.symlinkSync(path.join(root, 'outside'), path.join(dir, 'pods', 'run', '2b8c1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'))
  fs.symlinkSync(path.join(root, 'nowhere'), path.join(dir, 'pods', 'prepared', '3b8c1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'))
  // Not pods either: a file, a dir with a bad name; dot entries are silent.
  fs.writeFileSync(path.join(dir, 'pods', 'run', '4b8c1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'), 'a file')
  fs.mkdirSync(path.join(dir, 'pods', 'run', 'not-a-uuid'))
  fs.mkdirSync(path.join(dir, 'pods', 'run', '.tmp-something'))

  const invalid: InvalidEntry[] = []
  const pods = listPods(dir, Include.all, { onInvalid: (e) => invalid.push(e) })
  t.strictSame(pods.map((p) => p.uuid), [real], 'only the real pod is listed')
  const byPath = new Map(invalid.map((e) => [e.path, e.reason]))
  t.equal(invalid.length, 5, 'every non-pod entry is reported once')
  t.match(byPath.get(path.join(dir, 'pods', 'garbage', linkName)), /symlink/)
  t.match(byPath.get(path.join(dir, 'pods', 'run', '2b8c1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a')), /symlink/)
  t.match(byPath.get(path.join(dir, 'pods', 'prepared', '3b8c1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a')), /symlink/)
  t.match(byPath.get(path.join(dir, 'pods', 'run', '4b8c1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a')), /not a directory/)
  t.match(byPath.get(path.join(dir, 'pods', 'run', 'not-a-uuid')), /not a pod UUID/)

  const reported: InvalidEntry[] = []
  const walked: string[] = []
  await walkPods(dir, Include.all, (p) => void walked.push(p.uuid), { onInvalid: (e) => reported.push(e) })
  t.strictSame(walked, [real], 'walkPods skips them too')
  t.equal(reported.length, 5)
  t.doesNotThrow(() => listPods(dir, Include.all), 'without onInvalid they are skipped silently')
  t.equal(fs.readFileSync(path.join(root, 'outside', '8c3b1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a', 'secret'), 'utf8'), 'keep me')
  t.equal(fs.readFileSync(path.join(root, 'outside', 'precious.txt'), 'utf8'), 'keep me too')
  t.ok(fs.lstatSync(path.join(dir, 'pods', 'garbage', linkName)).isSymbolicLink(), 'the link itself is left alone')
})

t.test('walkPods closes every pod after fn, even when fn throws', async (t) => {
  const dir = dataDir(t)
  const a = mkPod(dir, 'prepared')
  const b = mkPod(dir, 'run')
  const seen: string[] = []
  await walkPods(dir, Include.all, async (pod) => {
    t.equal(pod.tryExclusiveLock(), true, `${pod.uuid}: locked inside fn`)
    await new Promise((r) => setImmediate(r)) // an async fn is awaited
    seen.push(pod.uuid)
  })
  t.strictSame(seen.sort(), [a, b].sort())
  t.equal(isLocked(dir, a), false, 'released after fn')
  t.equal(isLocked(dir, b), false)
  await t.rejects(
    walkPods(dir, Include.all, (pod) => {
      pod.tryExclusiveLock()
      throw new Error('boom')
    }),
    { message: 'boom' },
  )
  t.equal(isLocked(dir, a), false, 'released even though fn threw')
  t.equal(isLocked(dir, b), false)
})

t.test('a uuid seen in two state dirs is reported once, where it is now', async (t) => {
  // What a listing sees when a pod moves on between two readdirs.
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'prepared')
  mkPod(dir, 'run', {}, uuid)
  const pods = listPods(dir, Include.all)
  t.equal(pods.length, 1)
  t.equal(pods[0]?.uuid, uuid)
  t.equal(pods[0]?.dir, 'run', 'the later state wins (refresh looks there first)')
  t.strictSame(listPods(dir, Include.prepared).map((p) => p.dir), ['prepared'], 'one dir only: no duplicate to resolve')
})

t.test('listings are consistent while another process moves pods', async (t) => {
  // A child moves 100 prepared pods through run/ to exited-garbage/ while
  // this process lists them over and over: no listing has a uuid twice,
  // every state is one of the table, and a pod is only ever missed, never
  // invented.
  const dir = dataDir(t)
  const uuids = Array.from({ length: 100 }, () => mkPod(dir, 'prepared'))
  const known = new Set(uuids)
  const states = new Set(Object.values(STATE).flat())
  const mover = spawnNode(t, MOVER, [dir, ...uuids])
  let done = false
  const finished = mover.nextLine().then((l) => {
    done = true
    return l
  })
  let listings = 0
  let bad = 0
  while (!done) {
    const pods = listPods(dir, Include.all)
    const ids = pods.map((p) => p.uuid)
    if (new Set(ids).size !== ids.length) bad++
    if (!pods.every((p) => known.has(p.uuid) && states.has(p.state))) bad++
    listings++
    await new Promise((r) => setImmediate(r))
  }
  t.equal(await finished, 'done 100')
  t.ok(listings > 0, `${listings} listings taken while pods moved`)
  t.equal(bad, 0, 'no listing had a duplicate or an unknown pod or state')
  t.strictSame(summary(listPods(dir, Include.all)), uuids.map((u) => `${u} exited garbage`).sort(), 'in the end all are exited garbage')
})
