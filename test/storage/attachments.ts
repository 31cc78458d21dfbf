// A node's entry in a fleet claim's attachment (lib/storage/fleet/
// attachments.ts: localEntry), worked out from a real data dir: which of
// its pods use the claim, and which of them count as running. A pod whose
// lock is held while it prepares or is prepared (a `run` or `start` under
// way) counts only once attach has recorded it, so that a pod refused
// there is never published as running by the node's controller.
import t from 'tap'
import { isRunning, tryLock } from '../../lib/pod/locks.js'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { preparePod } from '../../lib/pod/prepare.js'
import { localEntry } from '../../lib/storage/fleet/attachments.js'
import { volumeManifest } from '../helpers/volume-util.js'

t.test('running: a pod in run/ with its lock held, or one that attach recorded; a starting pod always', async (t) => {
  const dir = t.testdir({})
  const u = (await preparePod(dir, volumeManifest([{ name: 'v', kind: 'persistent', claim: 'db' }]), { sync: false })).uuid
  const other = (await preparePod(dir, volumeManifest([{ name: 'v', kind: 'persistent', claim: 'other' }]), { sync: false })).uuid

  t.same(localEntry(dir, 'db', []), { pods: [u], running: [] }, 'a prepared pod uses the claim and does not run')
  t.same(localEntry(dir, 'db', [], u), { pods: [u], running: [u] }, 'the pod attach is recording runs')

  const held = tryLock(dir, u)
  t.ok(held, 'its lock taken, as `start` does before attach')
  t.notOk(isRunning(dir, u), 'a prepared pod whose lock is held is not running')
  t.same(localEntry(dir, 'db', []).running, [], 'not recorded by attach: not running (it may yet be refused)')
  t.same(localEntry(dir, 'db', [u]).running, [u], 'recorded by attach and still held: running')
  held!.release()
  t.same(localEntry(dir, 'db', [u]).running, [], 'recorded, but nothing holds its lock any more: not running')

  const pod = podFromUUIDString(dir, u)
  pod.toRun({ sync: false })
  t.teardown(() => pod.close())
  t.ok(isRunning(dir, u), 'in run/ with its lock held')
  t.same(localEntry(dir, 'db', []), { pods: [u], running: [u] }, 'a running pod counts without a record')
  pod.unlock()
  t.notOk(isRunning(dir, u), 'exited: in run/, its lock free')
  t.same(localEntry(dir, 'db', [u]), { pods: [u], running: [] }, 'an exited pod does not run, whatever the record says')
  t.same(localEntry(dir, 'other', []), { pods: [other], running: [] }, "another claim's pods are its own")
})
