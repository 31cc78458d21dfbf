// AtomicWriter (lib/volume/atomic-writer.ts): the seed's algorithm, step by
// step, as seen on disk; and that nothing planted in the target is
// followed or written through.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../../lib/errors.js'
import { AtomicWriter, DATA_DIR_NAME, payloadFromFiles, payloadProblems, type Payload } from '../../lib/volume/atomic-writer.js'

const p = (files: Record<string, string | [string, number]>): Payload =>
  new Map(Object.entries(files).map(([k, v]) => [k, { data: Buffer.from(Array.isArray(v) ? v[0] : v), mode: Array.isArray(v) ? v[1] : 0o644 }]))

/** What a reader sees through the user-visible names: relative path → content. */
const visible = (dir: string): Record<string, string> => {
  const out: Record<string, string> = {}
  const walk = (d: string, rel: string): void => {
    for (const name of fs.readdirSync(d)) {
      if (name.startsWith('..')) continue
      const full = path.join(d, name)
      const r = rel ? `${rel}/${name}` : name
      if (fs.statSync(full).isDirectory()) walk(full, r)
      else out[r] = fs.readFileSync(full, 'utf8')
    }
  }
  walk(dir, '')
  return out
}
const tsDirs = (dir: string): string[] => fs.readdirSync(dir).filter((n) => n.startsWith('..') && n !== DATA_DIR_NAME)

t.test('the target directory must exist', async (t) => {
  const dir = t.testdir({})
  t.throws(() => new AtomicWriter(path.join(dir, 'nope')), /is not a directory/)
})

t.test('first write: a timestamped dir, ..data pointing at it, top-level links through ..data', async (t) => {
  const dir = t.testdir({})
  const w = new AtomicWriter(dir)
  t.equal(w.currentTsDir(), undefined)
  t.equal(w.write(p({ 'podName': 'web', 'user/labels': 'a=b', 'k8s/annotations': 'x', 'k8s/deep/file': ['secret', 0o600] })), true)
  const ts = w.currentTsDir()!
  t.match(ts, /^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\./, 'named after the time')
  t.equal(fs.readlinkSync(path.join(dir, DATA_DIR_NAME)), ts)
  t.equal(fs.readlinkSync(path.join(dir, 'podName')), '..data/podName')
  t.equal(fs.readlinkSync(path.join(dir, 'user')), '..data/user')
  t.equal(fs.readlinkSync(path.join(dir, 'k8s')), '..data/k8s')
  t.same(visible(dir), { podName: 'web', 'user/labels': 'a=b', 'k8s/annotations': 'x', 'k8s/deep/file': 'secret' })
  t.equal(fs.statSync(path.join(dir, 'k8s/deep/file')).mode & 0o777, 0o600, 'the mode asked for, whatever the umask')
  t.notOk(fs.existsSync(path.join(dir, '..data_tmp')), 'no ..data_tmp left')
})

t.test('an unchanged payload is not written again (step 4)', async (t) => {
  const dir = t.testdir({})
  const w = new AtomicWriter(dir)
  w.write(p({ a: '1', 'b/c': '2' }))
  const ts = w.currentTsDir()
  t.equal(w.write(p({ a: '1', 'b/c': '2' })), false)
  t.equal(w.currentTsDir(), ts, 'same version')
  t.equal(w.write(p({ a: ['1', 0o600], 'b/c': '2' })), true, 'a mode change is a change')
  t.not(w.currentTsDir(), ts)
})

t.test('an update swaps the version and removes the old one (steps 5-11)', async (t) => {
  const dir = t.testdir({})
  const w = new AtomicWriter(dir)
  w.write(p({ keep: 'k1', gone: 'g', 'dir/a': 'a', 'dir/b': 'b', 'old/x': 'x' }))
  const first = w.currentTsDir()
  t.equal(w.write(p({ keep: 'k2', 'dir/a': 'a', added: 'new' })), true)
  t.same(visible(dir), { keep: 'k2', 'dir/a': 'a', added: 'new' }, 'removed files are gone, nested ones too')
  t.notOk(fs.existsSync(path.join(dir, 'gone')), 'the old top-level link is removed (step 10)')
  t.notOk(fs.existsSync(path.join(dir, 'old')))
  t.same(tsDirs(dir), [w.currentTsDir()], 'only the current version is left (step 11)')
  t.not(w.currentTsDir(), first)
})

t.test('a removed nested file alone is a change (kubelet would skip it)', async (t) => {
  const dir = t.testdir({})
  const w = new AtomicWriter(dir)
  w.write(p({ 'd/a': 'a', 'd/b': 'b' }))
  t.equal(w.write(p({ 'd/a': 'a' })), true)
  t.same(visible(dir), { 'd/a': 'a' })
})

t.test('an empty payload empties the volume', async (t) => {
  const dir = t.testdir({})
  const w = new AtomicWriter(dir)
  w.write(p({ a: '1' }))
  w.write(new Map())
  t.same(visible(dir), {})
  t.same(fs.readdirSync(dir).filter((n) => !n.startsWith('..')), [])
})

t.test('bad payloads are refused whole, with nothing written (step 1)', async (t) => {
  const dir = t.testdir({})
  const w = new AtomicWriter(dir)
  w.write(p({ a: '1' }))
  const before = fs.readdirSync(dir).sort()
  for (const bad of ['../x', '/abs', '..data', 'a/..b', 'a//b', 'a/./b', '', 'x/']) {
    const er = t.throws(() => w.write(p({ ok: '1', [bad]: '2' })), bad) as PodctlError
    t.equal(er.code, 'EUSAGE', bad)
  }
  t.throws(() => w.write(p({ a: '1', 'a/b': '2' })), /conflicts with "a"/)
  t.throws(() => w.write(new Map([['a', { data: Buffer.from(''), mode: 0o1000 }]])), /invalid mode/)
  t.same(fs.readdirSync(dir).sort(), before, 'nothing changed')
  t.same(visible(dir), { a: '1' })
})

t.test('payloadProblems and payloadFromFiles', async (t) => {
  t.same(payloadProblems(['a', 'b/c']), [])
  t.match(payloadProblems(['..x']), [{ path: '..x', problem: /starting with "\.\."/ }])
  const pl = payloadFromFiles({ a: { content: 'é' }, b: { content: '', mode: 0o600 } })
  t.same([...pl.entries()].map(([k, v]) => [k, v.data.toString(), v.mode]), [['a', 'é', 0o644], ['b', '', 0o600]])
})

t.test('planted links are never followed or written through', async (t) => {
  const outside = t.testdir({ 'victim.txt': 'precious', dir: { 'keep.txt': 'keep' } })
  const dir = path.join(outside, 'vol')
  fs.mkdirSync(dir)
  const w = new AtomicWriter(dir)
  w.write(p({ a: '1', sub: 's' }))
  // An app replaces ..data with a link out of the volume, and a user-visible name with a link to a victim.
  fs.unlinkSync(path.join(dir, DATA_DIR_NAME))
  fs.symlinkSync(path.join(outside, 'dir'), path.join(dir, DATA_DIR_NAME))
  fs.unlinkSync(path.join(dir, 'a'))
  fs.symlinkSync(path.join(outside, 'victim.txt'), path.join(dir, 'a'))
  fs.symlinkSync(outside, path.join(dir, '..2000_01_01_00_00_00.planted'))
  t.equal(w.currentTsDir(), undefined, 'a ..data that points out of the volume is not a version')
  t.equal(w.write(p({ a: '2', b: '3' })), true)
  t.same(visible(dir), { a: '2', b: '3' }, 'the new version is what readers see')
  t.equal(fs.readFileSync(path.join(outside, 'victim.txt'), 'utf8'), 'precious', 'the victim was not written')
  t.same(fs.readdirSync(path.join(outside, 'dir')), ['keep.txt'], 'what the planted ..data pointed at is untouched')
  t.same(tsDirs(dir), [w.currentTsDir()], 'the unreadable old version and the planted one are gone')
  t.ok(fs.existsSync(path.join(outside, 'victim.txt')), 'the planted version link was unlinked, not followed')
  // A directory in place of a user-visible link: refused, not written into.
  fs.unlinkSync(path.join(dir, 'b'))
  fs.mkdirSync(path.join(dir, 'b'))
  fs.writeFileSync(path.join(dir, 'b', 'mine'), 'app data')
  t.throws(() => w.write(p({ a: '2', b: '4' })), /is a directory, not podctl's link/)
  t.equal(fs.readFileSync(path.join(dir, 'b', 'mine'), 'utf8'), 'app data')
})

t.test('the old version is removed without following links inside it', async (t) => {
  const outside = t.testdir({ 'victim.txt': 'precious' })
  const dir = path.join(outside, 'vol')
  fs.mkdirSync(dir)
  const w = new AtomicWriter(dir)
  w.write(p({ a: '1' }))
  fs.symlinkSync(outside, path.join(dir, w.currentTsDir()!, 'escape'))
  w.write(p({ a: '2' }))
  t.equal(fs.readFileSync(path.join(outside, 'victim.txt'), 'utf8'), 'precious')
  t.same(visible(dir), { a: '2' })
})

t.test('a writer that died between ..data_tmp and the rename leaves nothing that blocks the next', async (t) => {
  const dir = t.testdir({})
  const w = new AtomicWriter(dir)
  w.write(p({ a: '1' }))
  fs.symlinkSync('..nowhere', path.join(dir, '..data_tmp'))
  w.write(p({ a: '2' }))
  t.same(visible(dir), { a: '2' })
})
