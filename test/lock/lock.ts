// The pod lock (CONTRACT §2, lib/lock/lock.ts and lib/pod/locks.ts) with real holder processes:
// released when the holder dies (SIGKILL included), never lost by a live
// holder however old its mtime, kept across renames, and taken over by
// exactly one of several contenders.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { lockHeldAt, tryLockAt } from '../../lib/lock/lock.js'
import { formatOwner, ownOwner, parseOwner } from '../../lib/lock/owner.js'
import { isLocked, lockPath, lockedSet, sweepLocksDir, tryLock } from '../../lib/pod/locks.js'
import { newPod, podFromUUIDString } from '../../lib/pod/pod.js'
import { lockExists, lockOf, mkPod, pollUntil } from '../helpers/common.js'
import { dataDir, procStat } from '../helpers/run-util.js'
import { nodeCommand } from '../helpers/launcher.js'
import { endAll, HOLD_LOCK, holdLocks, pool, probeLock, race } from '../helpers/pod-util.js'

const HOUR = 3600_000
const backdate = (p: string, ms: number): void => {
  const when = new Date(Date.now() - ms)
  fs.lutimesSync(p, when, when)
}
/** The owner record of a lock, parsed. */
const ownerOf = (dir: string, uuid: string) => parseOwner(fs.readlinkSync(lockOf(dir, uuid)))
/** Entries of the locks dir (temporaries included). */
const locksDirEntries = (dir: string): string[] => fs.readdirSync(path.join(dir, 'locks')).sort()

t.test('a live holder in another process holds the lock', async (t) => {
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'run')
  t.equal(isLocked(dir, uuid), false, 'free before anyone takes it')
  const holder = await holdLocks(t, dir, [uuid])
  t.equal(isLocked(dir, uuid), true, 'isLocked sees the holder')
  t.equal(ownerOf(dir, uuid)?.pid, holder.pid, 'the owner record names the holder')
  t.equal(tryLock(dir, uuid), undefined, 'tryLock fails while it lives')
  t.equal(podFromUUIDString(dir, uuid).state, 'running')
  t.equal(await probeLock(t, dir, uuid), 'busy', 'a third process cannot take it either')
  await holder.release()
  t.equal(isLocked(dir, uuid), false, 'released')
  t.equal(lockExists(lockOf(dir, uuid)), false, 'release removes the lock')
  t.equal(podFromUUIDString(dir, uuid).state, 'exited')
})

t.test('a SIGKILLed holder is seen as gone as soon as it has exited', async (t) => {
  // No wall clock: the assertions run right after the 'exit' event, which
  // proves "within 1 s" for any machine that reaps a child within 1 s.
  for (const stateDir of ['run', 'prepare', 'exited-garbage', 'garbage'] as const) {
    const dir = dataDir(t)
    const uuid = mkPod(dir, stateDir)
    const holder = await holdLocks(t, dir, [uuid])
    const before = podFromUUIDString(dir, uuid).state
    t.equal(isLocked(dir, uuid), true, `${stateDir}: held`)
    holder.proc.kill('SIGKILL')
    const exit = await holder.exited
    t.equal(exit.signal, 'SIGKILL', `${stateDir}: the holder died of SIGKILL`)
    t.ok(fs.lstatSync(lockOf(dir, uuid), { throwIfNoEntry: false })?.isSymbolicLink(), `${stateDir}: its lock is still there (nobody cleaned up)`)
    t.equal(isLocked(dir, uuid), false, `${stateDir}: isLocked is false right after the exit event`)
    t.notOk(lockedSet(dir).has(uuid), `${stateDir}: lockedSet agrees`)
    const after = podFromUUIDString(dir, uuid).state
    t.not(after, before, `${stateDir}: ${before} became ${after}`)
    const lock = tryLock(dir, uuid)
    t.ok(lock, `${stateDir}: tryLock takes the dead holder's lock at once`)
    t.equal(ownerOf(dir, uuid)?.pid, process.pid, `${stateDir}: and the owner record is now ours`)
    if (stateDir === 'run') t.equal(await probeLock(t, dir, uuid), 'busy', `${stateDir}: another process sees our takeover as held`)
    lock!.release()
    t.equal(lockExists(lockOf(dir, uuid)), false, `${stateDir}: released`)
  }
})

t.test('running becomes exited when the supervisor is SIGKILLed', async (t) => {
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'prepared')
  // The contender moves the pod to run/ and keeps it locked, as a supervisor would.
  const { outcomes, children } = await race(t, dir, uuid, 'toRun', 1, 'hold')
  t.match(outcomes[0], { ok: true, state: 'running', dir: 'run' })
  t.equal(podFromUUIDString(dir, uuid).state, 'running')
  children[0]!.proc.kill('SIGKILL')
  await children[0]!.exited
  t.equal(podFromUUIDString(dir, uuid).state, 'exited', 'exited right after the exit event')
})

t.test('a zombie holder (dead, not yet reaped) holds nothing', async (t) => {
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'run')
  // sh starts the holder in the background and execs sleep, which never
  // reaps it: once killed, the holder stays a zombie.
  const [node, argv] = nodeCommand([HOLD_LOCK, dir, uuid, '--no-stdin'])
  const sh = spawn('/bin/sh', ['-c', `${[node, ...argv].map((a) => JSON.stringify(a)).join(' ')} & exec sleep 600`], { stdio: ['ignore', 'pipe', 'pipe'] })
  const shExited = new Promise((r) => sh.on('exit', r))
  t.teardown(async () => {
    if (sh.exitCode === null && sh.signalCode === null) sh.kill('SIGKILL')
    await shExited
  })
  const first = await new Promise<string>((resolve, reject) => {
    let out = ''
    sh.stdout!.setEncoding('utf8').on('data', (s: string) => {
      out += s
      if (out.includes('\n')) resolve(out.split('\n')[0]!)
    })
    sh.on('exit', () => reject(new Error('sh exited')))
  })
  const m = /^locked (\d+)$/.exec(first)
  t.ok(m, `the holder took the lock: ${first}`)
  const pid = Number(m![1])
  t.teardown(() => {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // gone
    }
  })
  t.equal(isLocked(dir, uuid), true, 'held while the holder lives')
  process.kill(pid, 'SIGKILL')
  await pollUntil('the holder to be a zombie', () => procStat(pid)?.state === 'Z')
  t.equal(procStat(pid)?.state, 'Z', 'the holder is a zombie: /proc still has it')
  t.equal(isLocked(dir, uuid), false, 'a zombie holds nothing')
  const lock = tryLock(dir, uuid)
  t.ok(lock, 'its lock can be taken')
  lock?.release()
})

t.test('a stopped holder whose lock mtime is long past any stale time still holds it', async (t) => {
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'run')
  const holder = await holdLocks(t, dir, [uuid])
  holder.proc.kill('SIGSTOP')
  await pollUntil('the holder to stop', () => procStat(holder.pid)?.state === 'T')
  t.teardown(() => {
    holder.proc.kill('SIGCONT')
  })
  // proper-lockfile's default stale time is 10 s, podctl's remote rule 30 s.
  for (const [what, age] of [
    ['1 hour', HOUR],
    ['30 days', 30 * 24 * HOUR],
  ] as const) {
    backdate(lockOf(dir, uuid), age)
    t.equal(isLocked(dir, uuid), true, `${what}: isLocked is still true`)
    t.ok(lockedSet(dir).has(uuid), `${what}: lockedSet has it`)
    t.equal(podFromUUIDString(dir, uuid).state, 'running', `${what}: the pod is still running`)
    t.equal(tryLock(dir, uuid), undefined, `${what}: tryLock fails`)
    t.equal(await probeLock(t, dir, uuid), 'busy', `${what}: another process cannot take it`)
    t.equal(ownerOf(dir, uuid)?.pid, holder.pid, `${what}: the lock is still the holder's`)
  }
  holder.proc.kill('SIGCONT')
  await pollUntil('the holder to go on', () => procStat(holder.pid)?.state !== 'T')
  t.equal(isLocked(dir, uuid), true, 'held after SIGCONT')
  await holder.kill()
  t.equal(isLocked(dir, uuid), false, 'free once it is killed')
})

t.test('a stopped holder whose lock mtime is older than a year still holds it', async (t) => {
  // podctl switches proper-lockfile's staleness off by a stale time of one
  // year; a live holder must not lose its lock past that either
  // (CONTRACT §2: "a live holder is never seen as dead, however long it runs").
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'run')
  const holder = await holdLocks(t, dir, [uuid])
  holder.proc.kill('SIGSTOP')
  await pollUntil('the holder to stop', () => procStat(holder.pid)?.state === 'T')
  t.teardown(() => {
    holder.proc.kill('SIGCONT')
  })
  backdate(lockOf(dir, uuid), 2 * 365 * 24 * HOUR)
  t.equal(isLocked(dir, uuid), true, 'isLocked is still true')
  const stolen = tryLock(dir, uuid)
  t.equal(stolen, undefined, 'tryLock fails')
  t.equal(ownerOf(dir, uuid)?.pid, holder.pid, "the lock is still the holder's")
  stolen?.release()
})

t.test('a rename of the pod dir never loses the lock', async (t) => {
  const dir = dataDir(t)
  const pod = await newPod(dir)
  const uuid = pod.uuid
  const lockBefore = fs.readlinkSync(lockOf(dir, uuid))
  t.equal(pod.dir, 'prepare')
  t.equal(await probeLock(t, dir, uuid), 'busy', 'held by the creator in prepare/ (embryo→prepare was a rename)')
  pod.toRun()
  t.equal(pod.dir, 'run')
  t.equal(await probeLock(t, dir, uuid), 'busy', 'still held in run/')
  t.equal(podFromUUIDString(dir, uuid).state, 'running', 'another reader sees running')
  t.equal(fs.readlinkSync(lockOf(dir, uuid)), lockBefore, 'the same lock instance')
  // A rename by hand (not through podctl) does not touch the lock either.
  fs.renameSync(path.join(dir, 'pods', 'run', uuid), path.join(dir, 'pods', 'exited-garbage', uuid))
  t.equal(podFromUUIDString(dir, uuid).state, 'exited deleting')
  t.equal(await probeLock(t, dir, uuid), 'busy')
  t.equal(pod.holdsLock, true)
  pod.close()
  t.equal(isLocked(dir, uuid), false)
})

t.test('a holder that renames the pod keeps it locked for other processes', async (t) => {
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'prepared')
  const { outcomes, children } = await race(t, dir, uuid, 'toGarbage', 1, 'hold')
  t.match(outcomes[0], { ok: true, state: 'deleting', dir: 'garbage' })
  t.equal(isLocked(dir, uuid), true)
  t.equal(podFromUUIDString(dir, uuid).state, 'deleting')
  t.equal(await probeLock(t, dir, uuid), 'busy')
  await endAll(children)
  t.equal(podFromUUIDString(dir, uuid).state, 'garbage', 'released when the holder exits')
})

t.test('taking over a dead holder: of 8 contenders exactly one wins', async (t) => {
  // A pool of 8 processes races round after round; each round has a new
  // pod whose holder was SIGKILLed.
  const p = pool(t, 8)
  for (let round = 1; round <= 5; round++) {
    const dir = dataDir(t)
    const uuid = mkPod(dir, 'run')
    const dead = await holdLocks(t, dir, [uuid])
    dead.proc.kill('SIGKILL')
    await dead.exited
    t.ok(lockExists(lockOf(dir, uuid)), `round ${round}: the dead holder's lock is left behind`)
    const outcomes = await p.race(dir, uuid, 'tryLock', 'hold')
    const winners = outcomes.filter((o) => o.ok)
    t.equal(winners.length, 1, `round ${round}: exactly one contender got the lock`)
    t.equal(outcomes.filter((o) => o.crash).length, 0, `round ${round}: nobody crashed`)
    t.equal(ownerOf(dir, uuid)?.pid, winners[0]?.pid, `round ${round}: the lock names the winner`)
    t.equal(isLocked(dir, uuid), true, `round ${round}: and it is held`)
    await p.release()
    t.equal(isLocked(dir, uuid), false, `round ${round}: free once the winner let go`)
  }
  t.strictSame((await p.end()).map((e) => e.code), Array(8).fill(0), 'every contender exited 0')
})

t.test('release removes the lock and leaves nothing behind', async (t) => {
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'prepared')
  const lock = tryLock(dir, uuid)
  t.ok(lock)
  t.equal(lock!.path, lockPath(dir, uuid))
  t.strictSame(locksDirEntries(dir), [uuid], 'only the lock itself while held (no temporaries)')
  t.equal(fs.readlinkSync(lockOf(dir, uuid)), formatOwner(ownOwner()), 'its owner record is ours')
  t.equal(tryLock(dir, uuid), undefined, 'a second tryLock in the same process fails: the lock is exclusive')
  lock!.release()
  t.strictSame(locksDirEntries(dir), [], 'released: the locks dir is empty')
  t.doesNotThrow(() => lock!.release(), 'a second release does nothing')
  t.equal(lock!.compromised, undefined)
  const again = tryLock(dir, uuid)
  t.ok(again, 'can be taken again')
  again!.release()
})

t.test('lockedSet sees exactly the live locks', async (t) => {
  const dir = dataDir(t)
  t.strictSame([...lockedSet(path.join(dir, 'nope'))], [], 'no data dir: nothing locked')
  const [childHeld, ownHeld, dead, released, foreignFresh, foreignStale, neverLocked] = Array.from({ length: 7 }, () =>
    mkPod(dir, 'run'),
  ) as [string, string, string, string, string, string, string]
  await holdLocks(t, dir, [childHeld])
  const own = tryLock(dir, ownHeld)
  t.ok(own)
  const killed = await holdLocks(t, dir, [dead])
  await killed.kill()
  tryLock(dir, released)!.release()
  fs.mkdirSync(lockOf(dir, foreignFresh))
  fs.mkdirSync(lockOf(dir, foreignStale))
  backdate(lockOf(dir, foreignStale), HOUR)
  // Temporaries and moved-away locks are not locks.
  fs.mkdirSync(path.join(dir, 'locks', `.${neverLocked}.new-0123456789ab`))
  fs.mkdirSync(path.join(dir, 'locks', `.${neverLocked}.gone-0123456789ab`))
  t.strictSame([...lockedSet(dir)].sort(), [childHeld, ownHeld, foreignFresh].sort())
  own!.release()
  t.strictSame([...lockedSet(dir)].sort(), [childHeld, foreignFresh].sort())
})

t.test('a lock dir without an owner record is judged by its mtime', async (t) => {
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'run')
  fs.mkdirSync(lockOf(dir, uuid))
  t.equal(isLocked(dir, uuid), true, 'fresh: held')
  t.ok(lockedSet(dir).has(uuid), 'fresh: in lockedSet')
  t.equal(podFromUUIDString(dir, uuid).state, 'running')
  backdate(lockOf(dir, uuid), 5_000)
  t.equal(isLocked(dir, uuid), true, '5 s old: still held (the rule is 10 s)')
  backdate(lockOf(dir, uuid), 60_000)
  t.equal(isLocked(dir, uuid), false, '60 s old: stale, not held')
  t.notOk(lockedSet(dir).has(uuid), '60 s old: not in lockedSet')
  t.equal(podFromUUIDString(dir, uuid).state, 'exited')
})

t.test('a fresh lock dir without an owner record is not taken', async (t) => {
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'run')
  fs.mkdirSync(lockOf(dir, uuid))
  t.equal(isLocked(dir, uuid), true, 'isLocked says held')
  const lock = tryLock(dir, uuid)
  t.equal(lock, undefined, 'so tryLock must fail')
  lock?.release()
})

t.test('a stale directory at a lock path is not podctl\'s: it is refused, never removed', async (t) => {
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'run')
  fs.mkdirSync(lockOf(dir, uuid))
  fs.writeFileSync(path.join(lockOf(dir, uuid), 'keep'), 'x')
  backdate(lockOf(dir, uuid), HOUR)
  t.equal(isLocked(dir, uuid), false, 'it is judged free')
  t.throws(() => tryLock(dir, uuid), { code: 'EFAILED', message: /is a directory, not a podctl lock/ }, 'taking it over says what is in the way')
  t.ok(fs.existsSync(path.join(lockOf(dir, uuid), 'keep')), 'and nothing in it was removed')
})

t.test('a lock whose target is not an owner record is judged by its mtime', async (t) => {
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'run')
  fs.symlinkSync('not an owner record', lockOf(dir, uuid))
  t.equal(isLocked(dir, uuid), true, 'fresh: held')
  t.equal(tryLock(dir, uuid), undefined, 'fresh: not taken')
  backdate(lockOf(dir, uuid), HOUR)
  t.equal(isLocked(dir, uuid), false, 'stale: free')
  t.equal(podFromUUIDString(dir, uuid).state, 'exited', 'stale: the pod reads as exited')
  const lock = tryLock(dir, uuid)
  t.ok(lock, 'stale: so tryLock takes it over')
  lock?.release()
})

t.test('owner records from another boot or host', async (t) => {
  const dir = dataDir(t)
  const me = ownOwner()
  const plant = (uuid: string, owner: string, ageMs = 0): void => {
    fs.symlinkSync(owner, lockOf(dir, uuid))
    if (ageMs) backdate(lockOf(dir, uuid), ageMs)
  }
  const otherBoot = mkPod(dir, 'run')
  plant(otherBoot, formatOwner({ ...me, boot: 'another-boot-id' }))
  t.equal(isLocked(dir, otherBoot), false, 'same host, other boot: the machine rebooted, dead at once')
  const taken = tryLock(dir, otherBoot)
  t.ok(taken, 'and it is taken over')
  taken?.release()

  const remoteFresh = mkPod(dir, 'run')
  plant(remoteFresh, formatOwner({ ...me, pid: 1, host: 'some-other-host' }))
  t.equal(isLocked(dir, remoteFresh), true, 'other host, fresh mtime: held')
  t.equal(tryLock(dir, remoteFresh), undefined, 'and not taken')

  const remoteStale = mkPod(dir, 'run')
  plant(remoteStale, formatOwner({ ...me, pid: 1, host: 'some-other-host' }), HOUR)
  t.equal(isLocked(dir, remoteStale), false, 'other host, stale mtime: dead')
  const l = tryLock(dir, remoteStale)
  t.ok(l, 'and taken over')
  l?.release()

  const reused = mkPod(dir, 'run')
  plant(reused, formatOwner({ ...me, start: String(Number(me.start) + 1) }))
  t.equal(isLocked(dir, reused), false, 'our pid but another start time: a reused pid, dead')
})

t.test('tryLockAt and lockHeldAt work on any path; a second manifest lock is separate', async (t) => {
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'run')
  const pod = tryLock(dir, uuid)
  const manifestLock = tryLockAt(`${lockPath(dir, uuid)}.manifest`)
  t.ok(pod && manifestLock, 'the pod lock and the manifest lock are independent')
  t.equal(lockHeldAt(`${lockPath(dir, uuid)}.manifest`), true)
  manifestLock!.release()
  t.equal(lockHeldAt(`${lockPath(dir, uuid)}.manifest`), false)
  t.equal(isLocked(dir, uuid), true)
  pod!.release()
})

t.test('sweepLocksDir removes the dead locks of missing pods only', async (t) => {
  const dir = dataDir(t)
  const live = mkPod(dir, 'run')
  const deadOfPresentPod = mkPod(dir, 'run')
  const missingDead = '0b8c1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'
  const missingLive = '1b8c1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'
  await holdLocks(t, dir, [live, missingLive])
  const killed = await holdLocks(t, dir, [deadOfPresentPod, missingDead])
  await killed.kill()
  const guard = path.join(dir, 'locks', `.${live}.takeover`)
  fs.symlinkSync('not an owner record', guard)
  backdate(guard, HOUR)
  const exists = (u: string): boolean => fs.existsSync(path.join(dir, 'pods', 'run', u))
  t.equal(sweepLocksDir(dir, exists), 1, 'one entry removed')
  t.strictSame(
    locksDirEntries(dir),
    [`.${live}.takeover`, deadOfPresentPod, live, missingLive].sort(),
    'the dead lock of a missing pod is gone; live locks, takeover guards (proper-lockfile expires them) and locks of present pods stay',
  )
  t.equal(isLocked(dir, missingLive), true, 'a live lock is never swept')
})
