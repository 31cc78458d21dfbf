// Reading logs (lib/run/logs.ts): tail, prefixes, whole logs, following.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { API_VERSION, type PodManifest } from '../../lib/pod/manifest.js'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { createPod, preparePod } from '../../lib/pod/prepare.js'
import { LogWriter } from '../../lib/run/log-writer.js'
import { followLogs, formatLine, logEnds, type LogLine, readAppLog, readAppLogLines, selectLines } from '../../lib/run/logs.js'

const manifest: PodManifest = { apiVersion: API_VERSION, apps: [{ name: 'a', exec: ['true'] }, { name: 'b', exec: ['true'] }] }

// The old text forms, over the line model: tail and prefix as logs prints them.
const tailLines = (text: string, n: number | undefined): string =>
  selectLines(linesOf(text), n === undefined ? {} : { tail: n })
    .map((l) => l.text)
    .join('')
const prefixLines = (text: string, app: string | undefined): string =>
  linesOf(text)
    .map((l) => formatLine(l, app === undefined ? {} : { app }))
    .join('')
const linesOf = (text: string): LogLine[] => (text.match(/[^\n]*\n|[^\n]+$/g) ?? []).map((l) => ({ text: l }))

t.test('tail', async (t) => {
  const cases: [string, number | undefined, string][] = [
    ['a\nb\nc\n', undefined, 'a\nb\nc\n'],
    ['a\nb\nc\n', 2, 'b\nc\n'],
    ['a\nb\nc\n', 3, 'a\nb\nc\n'],
    ['a\nb\nc\n', 10, 'a\nb\nc\n'],
    ['a\nb\nc\n', 0, ''],
    ['a\nb\nc', 1, 'c'],
    ['a\nb\nc', 2, 'b\nc'],
    ['', 3, ''],
    ['\n', 1, '\n'],
  ]
  for (const [text, n, want] of cases) t.equal(tailLines(text, n), want, `${JSON.stringify(text)} tail ${n}`)
})

t.test('prefixes', async (t) => {
  t.equal(prefixLines('a\nb\n', 'web'), '[web] a\n[web] b\n')
  t.equal(prefixLines('a\nb', 'web'), '[web] a\n[web] b')
  t.equal(prefixLines('', 'web'), '')
  t.equal(prefixLines('a\n', undefined), 'a\n', 'no app: unchanged')
  t.equal(prefixLines('\n', 'x'), '[x] \n', 'an empty line is prefixed too')
  t.equal(formatLine({ text: 'hi\n', time: Date.UTC(2026, 10, 25, 16, 3, 0, 120) }, { app: 'web', timestamps: true }), '[web] 2026-11-25T16:03:00.120Z hi\n')
  t.equal(formatLine({ text: 'hi\n' }, { timestamps: true }), '- hi\n', 'a line of unknown time: "-"')
})

t.test('since, then tail', async (t) => {
  const lines: LogLine[] = [{ text: 'old\n', time: 1000 }, { text: 'mid\n', time: 2000 }, { text: 'new\n', time: 3000 }, { text: 'unknown\n' }]
  t.strictSame(selectLines(lines, { since: 2000 }).map((l) => l.text), ['mid\n', 'new\n', 'unknown\n'], 'at or after since; lines of unknown time kept')
  t.strictSame(selectLines(lines, { since: 2000, tail: 1 }).map((l) => l.text), ['unknown\n'])
  t.strictSame(selectLines(lines, { since: 9000 }).map((l) => l.text), ['unknown\n'])
})

t.test('each line has the time its first byte arrived, across writes and rotations', async (t) => {
  const dir = t.testdir({})
  const pod = await preparePod(dir, manifest, { sync: false })
  const w = new LogWriter(pod.path, 'a', { maxBytes: 64 })
  const before = Date.now()
  w.write(Buffer.from('one\ntw'))
  await new Promise((r) => setTimeout(r, 30))
  const mid = Date.now()
  w.write(Buffer.from('o\nthree\n'))
  for (let i = 0; i < 10; i++) w.write(Buffer.from(`line ${i} of the rotation test\n`)) // rotates (64 bytes a file)
  w.close()
  const after = Date.now()
  const lines = readAppLogLines(pod, 'a')
  t.ok(lines.every((l) => l.time !== undefined && l.time >= before && l.time <= after), 'every line has a time within the writes')
  const byText = new Map(lines.map((l) => [l.text, l.time!]))
  if (byText.has('one\n')) {
    t.ok(byText.get('one\n')! < mid, 'one: the time of the first write')
    t.ok(byText.get('two\n')! < mid, 'two: started in the first write, so its time')
    t.ok(byText.get('three\n')! >= mid, 'three: the time of the second write')
  }
  t.ok(lines.some((l) => l.text.startsWith('line 9')), 'the newest lines are there')
  t.ok(fs.readdirSync(path.join(pod.path, 'logs')).includes('a.log.1.times'), 'the times file is rotated with its log')
})

t.test('readAppLog joins the rotations, oldest first', async (t) => {
  const dir = t.testdir({})
  const pod = await preparePod(dir, manifest, { sync: false })
  const w = new LogWriter(pod.path, 'a', { maxBytes: 8 })
  for (const l of ['one\n', 'two\n', 'three\n', 'four\n']) w.write(Buffer.from(l))
  w.close()
  t.equal(readAppLog(pod, 'a').split('\n').slice(-3).join('\n'), 'three\nfour\n')
  t.ok('one\ntwo\nthree\nfour\n'.endsWith(readAppLog(pod, 'a')))
  t.equal(readAppLog(pod, 'b'), '', 'an app that never wrote: empty')
})

t.test('followLogs of a pod that is not running drains once and returns', async (t) => {
  const dir = t.testdir({})
  const pod = await preparePod(dir, manifest, { sync: false })
  const got: [string, string][] = []
  fs.mkdirSync(path.join(pod.path, 'logs'), { recursive: true })
  fs.writeFileSync(path.join(pod.path, 'logs', 'a.log'), 'old\n')
  await followLogs(pod, ['a', 'b'], (app, line) => got.push([app, line.text]))
  t.same(got, [], 'it starts at the current end: nothing new')
})

t.test('logs --follow: the ends are taken before the history, so a line written in between is followed, not lost (the CI race)', async (t) => {
  const dir = t.testdir({})
  const pod = await preparePod(dir, manifest, { sync: false })
  const log = path.join(pod.path, 'logs', 'a.log')
  fs.mkdirSync(path.dirname(log), { recursive: true })
  fs.writeFileSync(log, 'ready\npar')
  const ends = logEnds(pod, ['a', 'b'])
  // Written after the ends were taken, before the history is read.
  fs.appendFileSync(log, 'tial\ndone\n')
  const history = readAppLogLines(pod, 'a', ends[0]).map((l) => l.text)
  t.strictSame(history, ['ready\n'], 'the history stops at the end, before an unfinished line')
  t.equal(ends[0]!.offset, 'ready\n'.length, 'and the end moved back to where that line starts')
  t.strictSame(readAppLogLines(pod, 'b', ends[1]), [], 'an app without a log yet: its history is empty')
  const got: string[] = []
  await followLogs(pod, ends, (app, line) => got.push(`${app}:${line.text}`))
  t.strictSame(got, ['a:partial\n', 'a:done\n'], 'the follow prints the rest once each, the broken line whole')
})

t.test('followLogs follows growth and rotation until the pod stops running', async (t) => {
  const dir = t.testdir({})
  const pod = await createPod(dir, manifest, { sync: false })
  pod.toRun({ sync: false })
  t.teardown(() => pod.close())
  const reader = podFromUUIDString(dir, pod.uuid)
  const w = new LogWriter(pod.path, 'a', { maxBytes: 12 })
  w.write(Buffer.from('before\n'))
  const got: string[] = []
  let resolveSeen: (() => void) | undefined
  const following = followLogs(reader, ['a'], (app, line) => {
    t.type(line.time, 'number', 'a followed line has its time')
    got.push(`${app}:${line.text}`)
    resolveSeen?.()
  })
  const seen = (): Promise<void> => new Promise((r) => (resolveSeen = r))
  let s = seen()
  w.write(Buffer.from('after-1\n'))
  await s
  s = seen()
  // "after-1\n" (8) + this (9) passes 12: the writer rotates.
  w.write(Buffer.from('rotated\nnext\npart'))
  await s
  w.close()
  pod.close() // the pod is exited now
  await following
  t.equal(got.join(''), 'a:after-1\na:rotated\na:next\na:part\n', 'new lines only, across the rotation; the partial last line at the end')
})
