// LogWriter (lib/run/log-writer.ts): size-capped, rotating app logs.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { DEFAULT_LOG_KEEP, LogWriter, logFiles, logPath } from '../../lib/run/log-writer.js'

/** The files in the pod's logs dir, sorted. */
// The logs, without their times files.
const listLogs = (pod: string): string[] => fs.readdirSync(path.join(pod, 'logs')).filter((f) => !f.endsWith('.times')).sort()
const kept = (pod: string, app: string, keep?: number): string => logFiles(pod, app, keep).map((f) => fs.readFileSync(f, 'utf8')).join('')
const lines = (from: number, to: number): string => Array.from({ length: to - from }, (_, i) => `line ${String(from + i).padStart(3, '0')}\n`).join('')

t.test('below the cap: one file with everything, appended across writers', async (t) => {
  const pod = t.testdir({})
  const w = new LogWriter(pod, 'app')
  w.write(Buffer.from('one\n'))
  w.write(Buffer.from('two\n'))
  w.close()
  w.close() // twice is fine
  const w2 = new LogWriter(pod, 'app')
  w2.write(Buffer.from('three\n'))
  w2.close()
  t.equal(w.path, logPath(pod, 'app'))
  t.same(listLogs(pod), ['app.log'])
  t.equal(fs.readFileSync(logPath(pod, 'app'), 'utf8'), 'one\ntwo\nthree\n', 'a second writer appends (app restarted)')
  t.equal(fs.statSync(logPath(pod, 'app')).mode & 0o777, 0o640, 'files are 0640 (CONTRACT §1)')
})

t.test('a tiny maxBytes rotates to .1 and .2 and never keeps more than keep+1 files', async (t) => {
  const pod = t.testdir({})
  const w = new LogWriter(pod, 'chatty', { maxBytes: 40 })
  let written = ''
  for (let i = 0; i < 100; i++) {
    const l = lines(i, i + 1)
    w.write(Buffer.from(l))
    written += l
    const files = listLogs(pod)
    if (files.length > DEFAULT_LOG_KEEP + 1) t.fail(`after line ${i}: ${files.join(', ')}`)
    for (const f of files) if (fs.statSync(path.join(pod, 'logs', f)).size > 40) t.fail(`${f} is over the cap after line ${i}`)
  }
  w.close()
  t.same(listLogs(pod), ['chatty.log', 'chatty.log.1', 'chatty.log.2'], 'the log and two rotations')
  const k = kept(pod, 'chatty')
  t.ok(written.endsWith(k), 'the kept files, oldest first, are the end of the output')
  t.ok(k.endsWith(lines(98, 100)), 'including the newest lines')
  t.ok(k.length >= 80, 'two full rotations are kept')
})

t.test('keep: 1 keeps one rotation; keep: 0 keeps only the current file', async (t) => {
  for (const keep of [0, 1, 3]) {
    const pod = t.testdir({})
    const w = new LogWriter(pod, 'a', { maxBytes: 30, keep })
    for (let i = 0; i < 50; i++) w.write(Buffer.from(lines(i, i + 1)))
    w.close()
    t.equal(listLogs(pod).length, keep + 1, `keep ${keep}: ${keep + 1} files`)
    t.ok(kept(pod, 'a', keep).endsWith(lines(49, 50)), `keep ${keep}: the newest line is there`)
  }
})

t.test('one big chunk is split over files without losing or reordering bytes', async (t) => {
  const pod = t.testdir({})
  const w = new LogWriter(pod, 'big', { maxBytes: 64, keep: 100 })
  const all = lines(0, 50)
  w.write(Buffer.from(all))
  w.close()
  t.equal(kept(pod, 'big', 100), all, 'everything, in order')
  for (const f of logFiles(pod, 'big', 100)) t.ok(fs.statSync(f).size <= 64)
})

t.test('a line longer than the cap is cut', async (t) => {
  const pod = t.testdir({})
  const w = new LogWriter(pod, 'long', { maxBytes: 10, keep: 5 })
  w.write(Buffer.from('abcdefghijklmnopqrstuvwxyz\n'))
  w.close()
  t.equal(kept(pod, 'long', 5), 'abcdefghijklmnopqrstuvwxyz\n')
  t.equal(fs.readFileSync(logPath(pod, 'long') + '.2', 'utf8'), 'abcdefghij')
})

t.test('rotation happens on a line boundary for lines that fit in a file', async (t) => {
  const pod = t.testdir({})
  const w = new LogWriter(pod, 'lines', { maxBytes: 16, keep: 10 })
  // Lines of 6 bytes, written one by one, as an app prints them.
  for (let i = 0; i < 10; i++) w.write(Buffer.from(`ab${i}cd\n`))
  w.close()
  for (const f of logFiles(pod, 'lines', 10)) {
    const text = fs.readFileSync(f, 'utf8')
    t.ok(text === '' || text.endsWith('\n'), `${path.basename(f)} ends at a line end`, { text })
  }
})
