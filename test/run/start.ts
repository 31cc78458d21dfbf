// startPrepared (lib/run/start.ts): prepared → run for run-prepared, and the loser of a race.
import t from 'tap'
import { PodChangedStateError, PodctlError } from '../../lib/errors.js'
import { API_VERSION, type PodManifest } from '../../lib/pod/manifest.js'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { preparePod } from '../../lib/pod/prepare.js'
import { startPrepared } from '../../lib/run/start.js'

const manifest: PodManifest = { apiVersion: API_VERSION, apps: [{ name: 'main', exec: ['/bin/sh', '-c', 'exit 0'] }] }

t.test('moves a prepared pod to run/, locked by the caller, and returns its manifest', async (t) => {
  const dir = t.testdir({})
  const { uuid } = await preparePod(dir, manifest, { sync: false })
  const pod = podFromUUIDString(dir, uuid)
  const started = await startPrepared(pod)
  t.teardown(() => pod.close())
  t.equal(started.pod, pod)
  t.same(started.manifest, manifest)
  t.equal(pod.state, 'running')
  t.ok(pod.holdsLock)
  t.equal(podFromUUIDString(dir, uuid).state, 'running', 'others see it running')
})

t.test('a pod another process runs: the loser gets a lost-race error (exit 4)', async (t) => {
  const dir = t.testdir({})
  const { uuid } = await preparePod(dir, manifest, { sync: false })
  const winner = podFromUUIDString(dir, uuid)
  await startPrepared(winner)
  t.teardown(() => winner.close())
  const loser = podFromUUIDString(dir, uuid) // already sees run/
  const er = (await startPrepared(loser).then(() => undefined, (e: unknown) => e)) as PodctlError
  t.type(er, PodctlError)
  t.equal(er.exitCode, 4)
  t.match(er.message, /running/)
})

t.test('the loser looked before the winner moved the pod: still a lost race, not a failure', async (t) => {
  const dir = t.testdir({})
  const { uuid } = await preparePod(dir, manifest, { sync: false })
  // Both resolve the UUID while the pod is prepared (run-prepared does this,
  // then loads modules, before startPrepared)...
  const loser = podFromUUIDString(dir, uuid)
  const winner = podFromUUIDString(dir, uuid)
  // ... and the winner gets there first.
  await startPrepared(winner)
  t.teardown(() => winner.close())
  let caught: unknown
  try {
    await startPrepared(loser)
  } catch (er) {
    caught = er
  }
  t.type(caught, PodctlError)
  t.type(caught, PodChangedStateError, 'a PodChangedStateError')
  t.equal((caught as PodctlError).exitCode, 4, 'exit code 4', { message: (caught as Error).message })
  t.match((caught as Error).message, /already running|gone|running/, 'says the pod is already running (or gone)')
  t.notOk(loser.holdsLock, 'the loser holds no lock')
})
