// waitFinished / waitReady (lib/pod/wait.ts) against real holders: no
// sleeps, the waits end on the holder's death or on an abort signal.
import t from 'tap'
import { waitFinished, waitReady } from '../../lib/pod/wait.js'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { readRecord, writeRecord, emptyRecord } from '../../lib/pod/record.js'
import { mkPod } from '../helpers/common.js'
import { dataDir } from '../helpers/run-util.js'
import { holdLocks } from '../helpers/pod-util.js'

t.test('waitFinished returns once the supervisor dies', async (t) => {
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'run')
  const h = await holdLocks(t, dir, [uuid])
  const pod = podFromUUIDString(dir, uuid)
  t.equal(pod.state, 'running')
  let done = false
  const w = waitFinished(pod).then(() => (done = true))
  await new Promise((r) => setImmediate(r))
  t.equal(done, false, 'still waiting while the holder lives')
  await h.kill()
  await w
  t.equal(pod.state, 'exited')
})

t.test('waitFinished returns at once for a finished pod', async (t) => {
  const dir = dataDir(t)
  for (const d of ['run', 'prepare', 'garbage', 'exited-garbage'] as const) {
    const pod = podFromUUIDString(dir, mkPod(dir, d))
    await waitFinished(pod)
    t.ok(pod.isFinished(), `${d}: ${pod.state}`)
  }
})

t.test('an aborted signal ends the wait with ETIMEOUT', async (t) => {
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'prepared')
  const pod = podFromUUIDString(dir, uuid)
  const ac = new AbortController()
  const w = waitFinished(pod, { signal: ac.signal })
  ac.abort()
  await t.rejects(w, { code: 'ETIMEOUT', message: new RegExp(`pod ${uuid} to be finished \\(it is prepared\\)`) })
  await t.rejects(waitReady(pod, { signal: AbortSignal.abort() }), { code: 'ETIMEOUT', message: /to be ready/ })
})

t.test('waitReady', async (t) => {
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'run')
  writeRecord(`${dir}/pods/run/${uuid}`, emptyRecord(uuid))
  const h = await holdLocks(t, dir, [uuid])
  const pod = podFromUUIDString(dir, uuid)
  const ac = new AbortController()
  const w = waitReady(pod, { signal: ac.signal })
  const r = readRecord(pod.path)!
  writeRecord(pod.path, { ...r, ready_at: new Date().toISOString() })
  await w
  t.equal(pod.isSupervisorReady(), true)
  await h.kill()
  pod.refresh()
  t.equal(pod.isSupervisorReady(), false, 'not ready once it exited')
  await t.rejects(waitReady(pod), { code: 'EBADSTATE', message: /will never be ready/ }, 'a finished pod never becomes ready')
})
