// Reaping orphans (lib/pod/reap.ts): the next podctl command kills apps that outlived their supervisor.
// (Here with the run tests: it is the run's second line of defence.)
import t from 'tap'
import { spawn } from 'node:child_process'
import { API_VERSION, type PodManifest } from '../../lib/pod/manifest.js'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { createPod } from '../../lib/pod/prepare.js'
import { writeRecord } from '../../lib/pod/record.js'
import { reapOrphans } from '../../lib/pod/reap.js'
import { pollUntil, type Test } from '../helpers/common.js'
import { alive, groupMembers, procStat } from '../helpers/run-util.js'

const manifest: PodManifest = { apiVersion: API_VERSION, apps: [{ name: 'app', exec: ['sleep', '1000'] }] }

/** A detached `sh` with a child, like an app (killed at teardown). */
const orphan = async (t: Test): Promise<{ pid: number; members: number[] }> => {
  const c = spawn('/bin/sh', ['-c', 'sleep 1000 & sleep 1000'], { detached: true, stdio: 'ignore' })
  c.unref()
  t.teardown(() => {
    try {
      process.kill(-c.pid!, 'SIGKILL')
    } catch {
      // gone
    }
  })
  const members = await pollUntil('the orphan group', () => (groupMembers(c.pid!).length >= 3 ? groupMembers(c.pid!) : undefined))
  return { pid: c.pid!, members }
}

/** An exited pod (run/, unlocked) whose record says its app still runs as `pid`. */
const exitedWithApp = async (t: Test, pid: number, pidStart: string | null) => {
  const dir = t.testdir({})
  const pod = await createPod(dir, manifest, { sync: false })
  pod.toRun({ sync: false })
  const r = pod.record()
  writeRecord(pod.path, { ...r, apps: [{ ...r.apps[0]!, state: 'running', pid, pid_start: pidStart }] })
  return { dir, pod }
}

t.test('kills the group of an app recorded running in a pod whose supervisor is gone', async (t) => {
  const o = await orphan(t)
  const { dir, pod } = await exitedWithApp(t, o.pid, procStat(o.pid)!.start)
  pod.close() // the supervisor is gone
  const seen = podFromUUIDString(dir, pod.uuid)
  t.equal(seen.state, 'exited')
  t.equal(reapOrphans(seen), 1)
  await pollUntil('the orphan group to die', () => o.members.every((p) => !alive(p)))
  t.pass('the app and its children are dead')
})

t.test('a reused pid (another start time) is never killed', async (t) => {
  const o = await orphan(t)
  const { dir, pod } = await exitedWithApp(t, o.pid, '1')
  pod.close()
  t.equal(reapOrphans(podFromUUIDString(dir, pod.uuid)), 0)
  t.ok(o.members.every(alive), 'left alone')
})

t.test('a live supervisor looks after its own apps: nothing is killed', async (t) => {
  const o = await orphan(t)
  const { pod } = await exitedWithApp(t, o.pid, procStat(o.pid)!.start)
  t.teardown(() => pod.close())
  t.ok(pod.locked)
  t.equal(reapOrphans(pod), 0)
  t.ok(o.members.every(alive))
})

t.test('gc reaps the apps of a pod whose supervisor was killed (its lock is left), and collects the pod', async (t) => {
  const { gc } = await import('../../lib/pod/gc.js')
  const { holdLocks } = await import('../helpers/pod-util.js')
  const o = await orphan(t)
  const dir = t.testdir({})
  const pod = await createPod(dir, manifest, { sync: false })
  pod.toRun({ sync: false })
  const r = pod.record()
  writeRecord(pod.path, { ...r, apps: [{ ...r.apps[0]!, state: 'running', pid: o.pid, pid_start: procStat(o.pid)!.start }] })
  pod.unlock()
  // A supervisor that dies by SIGKILL leaves its lock behind: so does this holder.
  const holder = await holdLocks(t, dir, [pod.uuid])
  await holder.kill()
  const result = await gc(dir, { gracePeriodMs: 0, expirePreparedMs: 24 * 3600_000 })
  t.strictSame(result.deleted, [pod.uuid], 'the exited pod is collected')
  await pollUntil('the orphaned group to die', () => o.members.every((p) => !alive(p)) || undefined)
  t.pass('every process of the app group is gone')
})
