// stopPod (lib/run/stop.ts) on pods that are not running.
import t from 'tap'
import { PodctlError } from '../../lib/errors.js'
import { API_VERSION, type PodManifest } from '../../lib/pod/manifest.js'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { createPod, preparePod } from '../../lib/pod/prepare.js'
import { stopPod } from '../../lib/run/stop.js'

const manifest: PodManifest = { apiVersion: API_VERSION, apps: [{ name: 'app', exec: ['true'] }] }

t.test('a pod that never ran: EBADSTATE (exit 4), with a hint for a prepared one', async (t) => {
  const dir = t.testdir({})
  const prepared = await preparePod(dir, manifest, { sync: false })
  await t.rejects(stopPod(podFromUUIDString(dir, prepared.uuid), { timeoutMs: 100 }), { code: 'EBADSTATE', message: /is prepared; it never ran/, hint: /run-prepared/ })
  t.equal(podFromUUIDString(dir, prepared.uuid).state, 'prepared')
  const preparing = await createPod(dir, manifest, { sync: false })
  t.teardown(() => preparing.close())
  await t.rejects(stopPod(podFromUUIDString(dir, preparing.uuid), { timeoutMs: 100 }), { code: 'EBADSTATE', message: /preparing/ })
  const er = await stopPod(podFromUUIDString(dir, prepared.uuid), { timeoutMs: 100 }).catch((e: unknown) => e)
  t.equal((er as PodctlError).exitCode, 4)
})

t.test('an exited pod: "already exited", nothing changes', async (t) => {
  const dir = t.testdir({})
  const pod = await createPod(dir, manifest, { sync: false })
  pod.toRun({ sync: false })
  pod.close()
  const p = podFromUUIDString(dir, pod.uuid)
  t.equal(await stopPod(p, { timeoutMs: 100 }), 'already exited')
  t.equal(podFromUUIDString(dir, pod.uuid).state, 'exited')
})
