// The manifest of a mutable pod (lib/pod/sandbox.ts): refused for an
// immutable pod, replaced atomically under the manifest lock, which only
// manifest writers take.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { ErrImmutable, IMMUTABLE_MESSAGE, type PodctlError } from '../../lib/errors.js'
import { isLocked } from '../../lib/pod/locks.js'
import type { PodManifest } from '../../lib/pod/manifest.js'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { preparePod } from '../../lib/pod/prepare.js'
import { ManifestLock, sandboxManifest } from '../../lib/pod/sandbox.js'
import { manifest } from '../helpers/common.js'
import { holdLocks } from '../helpers/pod-util.js'
import { dataDir } from '../helpers/run-util.js'

t.test('the manifest of a mutable pod', async (t) => {
  const dir = dataDir(t)
  const immutable = await preparePod(dir, manifest() as PodManifest, { sync: false })
  const mutable = await preparePod(dir, manifest({ mutable: true, apps: [] }) as PodManifest, { sync: false })

  t.test('sandboxManifest refuses an immutable pod with ErrImmutable', async (t) => {
    const p = podFromUUIDString(dir, immutable.uuid)
    const er = t.throws(() => sandboxManifest(p)) as PodctlError
    t.type(er, ErrImmutable)
    t.equal(er.code, 'EIMMUTABLE')
    t.equal(er.exitCode, 4)
    t.match(er.message, new RegExp(`^${IMMUTABLE_MESSAGE}`))
    t.strictSame(sandboxManifest(podFromUUIDString(dir, mutable.uuid)), { apiVersion: 'podctl/v1', mutable: true, apps: [] })
  })

  t.test('update replaces it atomically under the manifest lock', async (t) => {
    const p = podFromUUIDString(dir, mutable.uuid)
    const next = manifest({ mutable: true, apps: [{ name: 'added', type: 'ephemeral', exec: ['true'] }] }) as PodManifest
    const lock = ManifestLock.take(p)
    t.equal(isLocked(dir, `${mutable.uuid}.manifest`), true, 'the manifest lock is held')
    t.equal(isLocked(dir, mutable.uuid), false, 'the pod lock is not needed')
    lock.update(next)
    t.strictSame(JSON.parse(fs.readFileSync(path.join(p.path, 'manifest'), 'utf8')), next)
    t.strictSame(fs.readdirSync(p.path).filter((n) => n.startsWith('.')), [], 'no temporary left')
    const before = fs.readFileSync(path.join(p.path, 'manifest'), 'utf8')
    t.throws(() => lock.update({ apiVersion: 'podctl/v1', apps: [] } as PodManifest), { code: 'EUSAGE', message: /^invalid manifest: apps:/ }, 'validated')
    t.equal(fs.readFileSync(path.join(p.path, 'manifest'), 'utf8'), before, 'a refused update changes nothing')
    lock.release()
    t.equal(isLocked(dir, `${mutable.uuid}.manifest`), false)
    t.throws(() => lock.update(next), { message: /^bug: manifest update of pod .* after its lock was released/ }, 'not once released')
    lock.release()
    t.pass('releasing again does nothing')
  })

  t.test('taking the lock times out while another process holds it', async (t) => {
    const holder = await holdLocks(t, dir, [`${mutable.uuid}.manifest`])
    const p = podFromUUIDString(dir, mutable.uuid)
    t.throws(() => ManifestLock.take(p, 50), { code: 'ETIMEOUT', message: /manifest lock/ })
    await holder.kill()
    const lock = ManifestLock.take(p, 50)
    t.equal(isLocked(dir, `${mutable.uuid}.manifest`), true, 'taken once the holder is dead')
    lock.release()
    t.equal(isLocked(dir, `${mutable.uuid}.manifest`), false, 'release() releases it')
  })

  t.test('update of a pod that moved meanwhile: ECHANGED', async (t) => {
    const p = podFromUUIDString(dir, mutable.uuid)
    const lock = ManifestLock.take(p)
    const other = podFromUUIDString(dir, mutable.uuid)
    other.toGarbage()
    other.close()
    t.throws(() => lock.update(manifest({ mutable: true }) as PodManifest), { code: 'ECHANGED' })
    lock.release()
  })
})
