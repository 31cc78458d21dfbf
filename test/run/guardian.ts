// The guardian (lib/run/guardian.ts): kills the listed app groups when its pipe closes.
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { Guardian } from '../../lib/run/guardian.js'
import { alive, groupMembers, pollUntil, type Test } from '../helpers/run-util.js'

/** A process group like an app's: `sh` leading its group, with a child. Killed at teardown. */
const appGroup = async (t: Test): Promise<{ child: ChildProcess; members: number[] }> => {
  const child = spawn('/bin/sh', ['-c', 'sleep 1000 & sleep 1000'], { detached: true, stdio: 'ignore' })
  child.unref()
  t.teardown(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL')
    } catch {
      // gone
    }
  })
  const members = await pollUntil('sh and its two sleeps', () => (groupMembers(child.pid!).length >= 3 ? groupMembers(child.pid!) : undefined))
  return { child, members }
}

t.test('when its pipe closes, it SIGKILLs every listed group, children included, and exits', async (t) => {
  const g = new Guardian()
  g.start()
  const gpid = g.pid!
  t.ok(alive(gpid), 'the guardian runs')
  const a = await appGroup(t)
  const b = await appGroup(t)
  g.add(a.child.pid!)
  g.add(b.child.pid!)
  g.stop() // the same end of file a dead supervisor gives it
  t.equal(g.pid, undefined)
  await pollUntil('both groups to die', () => [...a.members, ...b.members].every((p) => !alive(p)))
  await pollUntil('the guardian to exit', () => !alive(gpid))
  t.pass('all killed, guardian gone')
})

t.test('a removed group is left alone', async (t) => {
  const g = new Guardian()
  g.start()
  const gpid = g.pid!
  const kept = await appGroup(t)
  const killed = await appGroup(t)
  g.add(killed.child.pid!)
  g.add(kept.child.pid!)
  g.remove(kept.child.pid!)
  g.stop()
  await pollUntil('the listed group to die', () => killed.members.every((p) => !alive(p)))
  await pollUntil('the guardian to exit', () => !alive(gpid))
  t.ok(kept.members.every(alive), 'the removed group lives on')
})

t.test('SIGTERM, SIGINT and SIGHUP do not end it early', async (t) => {
  const g = new Guardian()
  g.start()
  const gpid = g.pid!
  t.teardown(() => g.stop())
  const a = await appGroup(t)
  g.add(a.child.pid!)
  for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.kill(gpid, s)
  // Prove the signals were handled: it still reads its pipe and acts on EOF.
  g.stop()
  await pollUntil('the group to die', () => a.members.every((p) => !alive(p)))
  await pollUntil('the guardian to exit', () => !alive(gpid))
  t.pass('it outlived the signals and did its job')
})

t.test('calls on a guardian that was never started, or has stopped, do nothing', async (t) => {
  const g = new Guardian()
  t.equal(g.pid, undefined)
  t.doesNotThrow(() => {
    g.add(12345)
    g.remove(12345)
    g.stop()
    g.stop()
  })
})
