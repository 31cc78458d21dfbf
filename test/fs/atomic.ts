// Atomic writes (lib/fs/atomic.ts): replace by rename, never a temporary
// left behind, and the directory fsync that makes a rename durable.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { sweepDeadTemporaries, syncDir, tmpName, uniqueSuffix, writeFileAtomic } from '../../lib/fs/atomic.js'

t.test('writeFileAtomic replaces, never leaves a temporary, and fails cleanly', async (t) => {
  const dir = t.testdir({ f: 'old' })
  writeFileAtomic(dir, 'f', 'new', { sync: true })
  t.equal(fs.readFileSync(path.join(dir, 'f'), 'utf8'), 'new')
  t.strictSame(fs.readdirSync(dir), ['f'])
  fs.mkdirSync(path.join(dir, 'adir'))
  fs.writeFileSync(path.join(dir, 'adir', 'x'), '')
  t.throws(() => writeFileAtomic(dir, 'adir', 'x'), 'renaming a file over a non-empty dir fails')
  t.strictSame(fs.readdirSync(dir).sort(), ['adir', 'f'], 'and leaves no temporary')
  t.throws(() => writeFileAtomic(path.join(dir, 'missing'), 'f', 'x'), { code: 'ENOENT' })
})

t.test('temporaries are hidden, named after their target, and unique', async (t) => {
  const names = new Set(Array.from({ length: 1000 }, () => tmpName('pod.json')))
  t.equal(names.size, 1000)
  for (const n of [...names].slice(0, 3)) t.match(n, /^\.pod\.json\.tmp-\d+-[0-9a-z]+-[0-9a-z]+$/)
  t.match(uniqueSuffix(), new RegExp(`^${process.pid}-`), 'the pid keeps two processes apart')
})

t.test('syncDir', async (t) => {
  const dir = t.testdir({})
  t.doesNotThrow(() => syncDir(dir))
  t.throws(() => syncDir(path.join(dir, 'missing')), { code: 'ENOENT' })
})

t.test("sweepDeadTemporaries removes a dead writer's temporaries, and nothing else", async (t) => {
  // A writer SIGKILLed between its temporary and its rename: a real process, gone.
  const killed = spawnSync(process.execPath, ['-e', `process.kill(process.pid, 'SIGKILL')`])
  t.equal(killed.signal, 'SIGKILL')
  const deadPid = killed.pid!
  const dead = `.rec.json.tmp-${deadPid}-mx0707eh-0`
  const mine = tmpName('rec.json')
  const dir = t.testdir({ [dead]: 'half', [mine]: 'being written', 'rec.json': '{}', '.other': 'not a temporary', [`.x.tmp-${deadPid}`]: 'not the shape' })
  t.strictSame(sweepDeadTemporaries(dir), [dead], 'the dead writer\'s temporary is removed')
  t.strictSame(fs.readdirSync(dir).sort(), [`.x.tmp-${deadPid}`, mine, '.other', 'rec.json'].sort(), "this process's temporary and every other file stay")
  t.strictSame(sweepDeadTemporaries(path.join(dir, 'missing')), [], 'a missing directory has none')
})
