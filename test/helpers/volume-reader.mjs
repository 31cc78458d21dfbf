// The app of the AtomicWriter test: reads a files volume as fast as it can
// while podctl updates it, and checks that it never sees a mix of two
// versions. Each version N has files a, b, c and d/e, each holding
// "v=N;" + filler + ";end=N", and a file "odd" only when N is odd.
//
// Two ways of reading are checked:
//  - the consistent way: resolve ..data once, read every file below that
//    directory (ENOENT means the version was replaced meanwhile: start
//    over); all files must be of one version, and "odd" present exactly
//    when it should be;
//  - each user-visible file on its own ($ROOT/cfg/a): it must be one whole
//    version, never torn.
// When it reads the version "final" it writes its counts to
// $ROOT/out/result.json and exits 0 (with READER_ONCE=1: after one snapshot,
// so that a test can check the checks on a volume it broke on purpose).
import fs from 'node:fs'
import path from 'node:path'

// READER_ROOT: where an isolated pod mounts cfg/ and out/ (its own /tmp), instead of the app root.
const root = process.env.READER_ROOT ?? process.env.PODCTL_APP_ROOT
const cfg = path.join(root, 'cfg')
const out = path.join(root, 'out')
const FILES = ['a', 'b', 'c', 'd/e']

const parse = (text) => {
  const m = /^v=([^;]+);(.*);end=([^;]+)$/s.exec(text)
  if (!m || m[1] !== m[3] || m[2] !== `${m[1]} `.repeat(512)) return undefined
  return m[1]
}

const counts = { snapshots: 0, retries: 0, mixed: 0, torn: 0, wrongSet: 0, visibleReads: 0, visibleTorn: 0, versions: 0 }
const seen = new Set()
const examples = []
fs.writeFileSync(path.join(out, 'started'), `${process.pid}\n`)

for (;;) {
  let ts
  try {
    ts = fs.readlinkSync(path.join(cfg, '..data'))
  } catch {
    counts.retries++
    continue
  }
  const dir = path.join(cfg, ts)
  let texts
  let hasOdd
  try {
    texts = FILES.map((f) => fs.readFileSync(path.join(dir, f), 'utf8'))
    hasOdd = fs.existsSync(path.join(dir, 'odd'))
    // The version must still be the current one after the reads: once
    // ..data has moved on, the writer deletes the old directory file by
    // file, and a read that raced that deletion (a file already gone, the
    // directory not yet) is no snapshot of anything. ENOENT covers most of
    // it; a changed ..data the rest.
    if (fs.readlinkSync(path.join(cfg, '..data')) !== ts) throw Object.assign(new Error('..data moved on'), { code: 'ENOENT' })
  } catch (er) {
    if (er.code === 'ENOENT') {
      counts.retries++
      continue
    }
    throw er
  }
  counts.snapshots++
  if (process.env.READER_ONCE === '1' && counts.snapshots > 1) break
  const versions = texts.map(parse)
  if (versions.some((v) => v === undefined)) {
    counts.torn++
    if (examples.length < 5) examples.push({ torn: texts.map((x) => x.slice(0, 20)) })
    continue
  }
  if (new Set(versions).size !== 1) {
    counts.mixed++
    if (examples.length < 5) examples.push({ mixed: versions })
    continue
  }
  const v = versions[0]
  const odd = v !== 'final' && Number(v) % 2 === 1
  if (odd !== hasOdd) {
    counts.wrongSet++
    if (examples.length < 5) examples.push({ wrongSet: v, hasOdd })
  }
  seen.add(v)
  // One user-visible file, read on its own.
  try {
    const one = fs.readFileSync(path.join(cfg, 'a'), 'utf8')
    counts.visibleReads++
    if (parse(one) === undefined) counts.visibleTorn++
  } catch (er) {
    if (er.code !== 'ENOENT') throw er
  }
  if (v === 'final') break
}
counts.versions = seen.size
fs.writeFileSync(path.join(out, '.result'), JSON.stringify({ ...counts, examples }))
fs.renameSync(path.join(out, '.result'), path.join(out, 'result.json'))
