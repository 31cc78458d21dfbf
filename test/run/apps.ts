// Changing a mutable pod's apps (lib/run/apps.ts): state checks and the manifest lock.
import t from 'tap'
import { ErrImmutable, PodctlError } from '../../lib/errors.js'
import { API_VERSION } from '../../lib/pod/manifest.js'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { createPod, preparePod } from '../../lib/pod/prepare.js'
import { addApp, removeApp, startApp, stopApp } from '../../lib/run/apps.js'

const app = { name: 'extra', exec: ['true'] }

t.test('an immutable pod: ErrImmutable ("immutable pod", exit 4) for every change', async (t) => {
  const dir = t.testdir({})
  const pod = await preparePod(dir, { apiVersion: API_VERSION, apps: [{ name: 'main', exec: ['true'] }] }, { sync: false })
  const p = podFromUUIDString(dir, pod.uuid)
  for (const [what, call] of [
    ['add', () => addApp(p, app)],
    ['rm', () => removeApp(p, 'main')],
    ['start', () => startApp(p, 'main')],
    ['stop', () => stopApp(p, 'main')],
  ] as const) {
    const er = await call().then(() => undefined, (e: unknown) => e)
    t.type(er, ErrImmutable, what)
    t.match((er as Error).message, /^immutable pod/)
    t.equal((er as PodctlError).exitCode, 4)
  }
  t.same(p.podManifest().manifest.apps.map((a) => a.name), ['main'], 'unchanged')
})

t.test('a prepared mutable pod takes adds and removals without a supervisor', async (t) => {
  const dir = t.testdir({})
  const pod = await preparePod(dir, { apiVersion: API_VERSION, mutable: true, apps: [] }, { sync: false })
  const p = podFromUUIDString(dir, pod.uuid)
  await addApp(p, app)
  t.same(p.podManifest().manifest.apps, [app])
  await t.rejects(addApp(p, app), { code: 'EBADSTATE', message: /already has an app named extra/ })
  await t.rejects(removeApp(p, 'nope'), { code: 'ENOPOD' })
  await removeApp(p, 'extra')
  t.same(p.podManifest().manifest.apps, [])
  await t.rejects(startApp(p, 'extra'), { code: 'EBADSTATE', message: /only in a running pod/ })
})

t.test('an exited mutable pod takes no changes', async (t) => {
  const dir = t.testdir({})
  const pod = await createPod(dir, { apiVersion: API_VERSION, mutable: true, apps: [] }, { sync: false })
  pod.toRun({ sync: false })
  pod.close()
  const p = podFromUUIDString(dir, pod.uuid)
  t.equal(p.state, 'exited')
  await t.rejects(addApp(p, app), { code: 'EBADSTATE', message: /exited/ })
  t.same(p.podManifest().manifest.apps, [])
})
