// Requests to a mutable pod's supervisor (lib/run/requests.ts).
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { REQUESTS_DIR, requestsDir, takeRequests, writeRequest } from '../../lib/run/requests.js'

/** Waits (by polling the clock, not sleeping) until Date.now() has moved on. */
const nextMillisecond = (): void => {
  const now = Date.now()
  while (Date.now() === now) {
    // spin: at most a millisecond
  }
}

t.test('written requests are taken once, oldest first, and deleted', async (t) => {
  const pod = t.testdir({})
  t.same(takeRequests(pod), [], 'no requests dir yet: nothing')
  writeRequest(pod, { op: 'start', app: 'a' })
  nextMillisecond()
  writeRequest(pod, { op: 'stop', app: 'b', timeoutMs: 300 })
  nextMillisecond()
  writeRequest(pod, { op: 'start', app: 'c' })
  t.equal(requestsDir(pod), path.join(pod, REQUESTS_DIR))
  t.same(takeRequests(pod), [
    { op: 'start', app: 'a' },
    { op: 'stop', app: 'b', timeoutMs: 300 },
    { op: 'start', app: 'c' },
  ])
  t.same(fs.readdirSync(requestsDir(pod)), [], 'all deleted')
  t.same(takeRequests(pod), [], 'taken once')
})

t.test('damaged, unknown and temporary files: dropped or ignored', async (t) => {
  const pod = t.testdir({ requests: { '000000000000001-aaaa.json': '{not json', '000000000000002-bbbb.json': '{"op":"explode","app":"x"}', '.tmp.json': '{"op":"start","app":"t"}', 'other.txt': 'x' } })
  writeRequest(pod, { op: 'start', app: 'good' })
  t.same(takeRequests(pod), [{ op: 'start', app: 'good' }])
  t.same(fs.readdirSync(requestsDir(pod)).sort(), ['.tmp.json', 'other.txt'], 'bad requests are deleted; a temporary (being written) is left')
})

t.test('requests filed within the same millisecond keep their order', async (t) => {
  const pod = t.testdir({})
  const want = Array.from({ length: 20 }, (_, i) => ({ op: i % 2 === 0 ? 'start' : 'stop', app: `app-${i}` }) as const)
  for (const r of want) writeRequest(pod, r)
  const got = takeRequests(pod)
  t.equal(got.length, 20, 'none lost')
  t.same(got, want, 'in the order they were written')
})
