// One suite of what a LeaderElection promises (lib/election/election.ts),
// run against the data dir's lease file (file.ts) and the fleet's etcd key
// (etcd.ts, on a real one-member etcd; skipped without etcd): among two
// candidates one leads at a time, the holder is what the store reports,
// a release (and a stepDown) lets the other take it at once, and a lease
// that is not renewed expires, while one that is renewed does not. Time
// only bounds the polls: no assertion is about how long something took.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { Cluster } from '../../lib/cluster/client.js'
import type { LeaderElection } from '../../lib/election/election.js'
import { FleetElection, fleetLeader, fleetLeaderLive } from '../../lib/election/etcd.js'
import { controllerLive, fileElection, readLease } from '../../lib/election/file.js'
import { pollUntil, type Test } from '../helpers/common.js'
import { etcdMissing, startEtcd, type EtcdCluster } from '../helpers/etcd.js'
import { dataDir } from '../helpers/run-util.js'

/** One place a lead is held (a data dir, an etcd prefix), and candidates for it. */
interface World {
  candidate(identity: string, leaseMs: number): Promise<LeaderElection>
  /** Who holds the lead as the store says it (what `controller status` shows); undefined: nobody. */
  holder(): Promise<string | undefined>
  /** Whether the store says somebody leads (what commands ask before provisioning). */
  live(): Promise<boolean>
  /** How many times the lead changed hands, as the store counts it (a hand-over adds one; the data dir's first holder is 0, the fleet's 1: both documented). */
  transitions(): Promise<number>
  /** The shortest lease the store keeps (etcd's TTLs are whole seconds). */
  shortMs: number
}
type WorldMaker = (t: Test) => Promise<World>

/** Whether `e` leads after one more try; a try that throws (an etcd lease that expired under it) does not lead. */
const leads = async (e: LeaderElection): Promise<boolean> => e.tryAcquireOrRenew().catch(() => false)

const electionSuite = (t: Test, makeWorld: WorldMaker): void => {
  t.test('two candidates: one leads, the holder is reported, the other stands by', async (t) => {
    const w = await makeWorld(t)
    const a = await w.candidate('cand-a', 10 * w.shortMs)
    const b = await w.candidate('cand-b', 10 * w.shortMs)
    t.equal(await w.holder(), undefined, 'nobody holds it at first')
    t.equal(await w.live(), false, 'and nobody leads')
    const [ra, rb] = await Promise.all([a.tryAcquireOrRenew(), b.tryAcquireOrRenew()])
    t.ok(ra !== rb, `exactly one of two concurrent tries leads (a: ${ra}, b: ${rb})`)
    const [leader, standby, leaderId] = ra ? [a, b, 'cand-a'] : [b, a, 'cand-b']
    t.equal(await w.holder(), leaderId, 'the store names the leader')
    t.equal(await w.live(), true, 'and says somebody leads')
    const first = await w.transitions()
    t.ok(first === 0 || first === 1, `the first holder counts as ${first} (the data dir's lease counts hand-overs, the fleet's every taking)`)
    for (let i = 0; i < 5; i++) {
      t.equal(await leader.tryAcquireOrRenew(), true, `renewal ${i}: the leader still leads`)
      t.equal(await standby.tryAcquireOrRenew(), false, `renewal ${i}: the standby does not`)
    }
    t.equal(await w.holder(), leaderId, 'the holder did not change')
    t.equal(await w.transitions(), first, 'nor did the count of transitions')
  })

  t.test('release lets the other take it at once', async (t) => {
    const w = await makeWorld(t)
    const a = await w.candidate('cand-a', 10 * w.shortMs)
    const b = await w.candidate('cand-b', 10 * w.shortMs)
    t.equal(await a.tryAcquireOrRenew(), true, 'a leads')
    const first = await w.transitions()
    t.equal(await b.tryAcquireOrRenew(), false, 'b does not')
    await a.release()
    t.equal(await w.holder(), undefined, 'released: the store names nobody')
    t.equal(await w.live(), false, 'and says nobody leads')
    // The lease is far from expiring: only the release can let b in.
    t.equal(await b.tryAcquireOrRenew(), true, 'b takes it at its next try')
    t.equal(await w.holder(), 'cand-b', 'and is named')
    t.equal(await a.tryAcquireOrRenew(), false, 'a, trying again, stands by')
    t.equal(await w.transitions(), first + 1, 'the hand-over is counted')
    await b.release()
    await b.release()
    t.pass('a release of a lead not held is fine')
    t.equal(await a.tryAcquireOrRenew(), true, 'and a takes it back')
  })

  t.test('a lease that is renewed holds past its duration', async (t) => {
    const w = await makeWorld(t)
    const leaseMs = 2 * w.shortMs
    const a = await w.candidate('cand-a', leaseMs)
    const b = await w.candidate('cand-b', leaseMs)
    t.equal(await a.tryAcquireOrRenew(), true, 'a leads')
    // Renewed every tenth of the lease, for twice its duration.
    for (let i = 0; i < 20; i++) {
      await delay(leaseMs / 10)
      t.equal(await a.tryAcquireOrRenew(), true, `renewal ${i}: a still leads`)
      t.equal(await b.tryAcquireOrRenew(), false, `renewal ${i}: b cannot take it`)
    }
    t.equal(await w.holder(), 'cand-a')
  })

  t.test('a lease that is not renewed expires: the other takes it, the old holder no longer leads', async (t) => {
    const w = await makeWorld(t)
    const a = await w.candidate('cand-a', w.shortMs)
    const b = await w.candidate('cand-b', w.shortMs)
    t.equal(await a.tryAcquireOrRenew(), true, 'a leads, then stops renewing')
    const first = await w.transitions()
    t.equal(await b.tryAcquireOrRenew(), false, 'b cannot take it yet')
    await pollUntil('b to take the expired lease', () => b.tryAcquireOrRenew(), { intervalMs: 50, polls: 200 })
    t.pass('b takes it once it expired')
    t.equal(await w.holder(), 'cand-b', 'the store names b')
    t.equal(await leads(a), false, "a's next try does not lead")
    a.stepDown()
    t.equal(await leads(a), false, 'nor, having stepped down, does its campaign from scratch')
    t.equal(await b.tryAcquireOrRenew(), true, 'b still leads')
    t.equal(await w.holder(), 'cand-b')
    t.equal(await w.transitions(), first + 1, 'one hand-over counted')
  })

  t.test('stepDown: the lead given up without a release is the other\'s, at once or at expiry', async (t) => {
    const w = await makeWorld(t)
    const a = await w.candidate('cand-a', w.shortMs)
    const b = await w.candidate('cand-b', w.shortMs)
    t.equal(await a.tryAcquireOrRenew(), true, 'a leads')
    a.stepDown()
    await pollUntil('b to take the lead a gave up', () => b.tryAcquireOrRenew(), { intervalMs: 50, polls: 200 })
    t.equal(await w.holder(), 'cand-b', 'b holds it')
    t.equal(await leads(a), false, 'a campaigns again and stands by')
  })

  t.test('watchVacancy, where there is one: a standby is told when the lead is given up', async (t) => {
    const w = await makeWorld(t)
    const a = await w.candidate('cand-a', 10 * w.shortMs)
    const b = await w.candidate('cand-b', 10 * w.shortMs)
    if (!b.watchVacancy) {
      t.pass(`${b.what} has no watch: standbys retry`)
      return
    }
    t.equal(await a.tryAcquireOrRenew(), true, 'a leads')
    let vacant = 0
    const stop = b.watchVacancy(() => vacant++)
    t.teardown(stop)
    // The watch connects in the background, out of sight: a release before it is connected would go unseen.
    await delay(300)
    t.equal(vacant, 0, 'not while a leads')
    await a.release()
    await pollUntil('the vacancy', () => vacant > 0, { intervalMs: 20, polls: 250 })
    t.pass('told once a released')
    t.equal(await b.tryAcquireOrRenew(), true, 'and b takes it')
  })
}

t.test('the lease file of a data dir', async (t) => {
  electionSuite(t, async (t) => {
    const dir = dataDir(t)
    return {
      shortMs: 300,
      candidate: async (identity, leaseMs) => fileElection(dir, identity, leaseMs, 5_000),
      holder: async () => readLease(dir)?.holder ?? undefined,
      live: async () => controllerLive(dir),
      transitions: async () => readLease(dir)?.transitions ?? 0,
    }
  })
})

t.test("the fleet's election key in etcd", { skip: etcdMissing ?? false }, async (t) => {
  const etcd: EtcdCluster = await startEtcd(t, 1)
  let worlds = 0
  electionSuite(t, async (t) => {
    // A prefix of each subtest's own: one etcd, no subtest sees another's lead.
    const prefix = `/election-${worlds++}/`
    const open = async (): Promise<Cluster> => {
      const c = await Cluster.open({ endpoints: etcd.endpoints.split(','), prefix })
      t.teardown(() => c.close())
      return c
    }
    const observer = await open()
    return {
      shortMs: 1_000,
      candidate: async (identity, leaseMs) => new FleetElection(await open(), identity, `node-${identity}`, leaseMs),
      holder: async () => (await fleetLeader(observer)).leader?.holder,
      live: () => fleetLeaderLive(observer),
      transitions: async () => (await fleetLeader(observer)).history.transitions,
    }
  })
})

t.test("a damaged lease file: EFAILED naming what is wrong and the file, never a stack trace", async (t) => {
  const dir = dataDir(t)
  const file = path.join(dir, 'controller', 'lease.json')
  fs.mkdirSync(path.dirname(file), { recursive: true })
  for (const [text, why] of [
    ['{', 'not valid JSON'],
    ['[]', 'not an object'],
    ['{"holder":7,"lease_duration_s":15,"transitions":0,"renewed_at":null}', 'bad holder'],
  ] as const) {
    fs.writeFileSync(file, text)
    t.throws(() => readLease(dir), { code: 'EFAILED', message: `the controller lease is damaged: ${why}`, hint: new RegExp(`look at ${file}`) }, text)
  }
})
