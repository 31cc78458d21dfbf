// Reading logs (lib/run/logs.ts): tail, prefixes, whole logs, following.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { API_VERSION, type PodManifest } from '../../lib/pod/manifest.js'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { createPod, preparePod } from '../../lib/pod/prepare.js'
import { LogWriter } from '../../lib/run/log-writer.js'
import { followLogs, prefixLines, readAppLog, tailLines } from '../../lib/run/logs.js'

const manifest: PodManifest = { apiVersion: API_VERSION, apps: [{ name: 'a', exec: ['true'] }, { name: 'b', exec: ['true'] }] }

t.test('tailLines', async (t) => {
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

t.test('prefixLines', async (t) => {
  t.equal(prefixLines('a\nb\n', 'web'), '[web] a\n[web] b\n')
  t.equal(prefixLines('a\nb', 'web'), '[web] a\n[web] b')
  t.equal(prefixLines('', 'web'), '')
  t.equal(prefixLines('a\n', undefined), 'a\n', 'no app: unchanged')
  t.equal(prefixLines('\n', 'x'), '[x] \n', 'an empty line is prefixed too')
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
  await followLogs(pod, ['a', 'b'], (app, text) => got.push([app, text]))
  t.same(got, [], 'it starts at the current end: nothing new')
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
  const following = followLogs(reader, ['a'], (app, text) => {
    got.push(`${app}:${text}`)
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
