// One suite of what a ClaimStore promises (lib/storage/store.ts), written
// once over a "world" in which stores are opened, and run against both
// stores: LocalStore on a data dir of the test's own, and FleetStore on a
// real one-member etcd (test/helpers/etcd.ts; skipped without etcd). In a
// world, every store sees the same classes and claims: two LocalStores on
// one data dir, or two nodes' FleetStores on one etcd prefix. The binder
// makes its decisions over exactly these calls, so a store that passes
// here is one the binder can trust.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { Cluster } from '../../lib/cluster/client.js'
import { isPodctlError } from '../../lib/errors.js'
import { LockBusyError } from '../../lib/lock/lock.js'
import type { VolumeClaim } from '../../lib/storage/claims.js'
import { FleetStore } from '../../lib/storage/fleet/store.js'
import { LocalStore } from '../../lib/storage/local/store.js'
import { Conflict, type ClaimStore } from '../../lib/storage/store.js'
import { newVolumeRecord, provisionedName, type PvRecord } from '../../lib/storage/volume-record.js'
import { pollUntil, type Test } from '../helpers/common.js'
import { etcdMissing, startEtcd, type EtcdCluster } from '../helpers/etcd.js'
import { dataDir } from '../helpers/run-util.js'

/** Where the stores of one subtest keep their objects; `open` gives another process's (or node's) view of them. */
interface World {
  open(): Promise<ClaimStore>
  /** Whether a store's writes compare revisions (a fleet), so that a stale read fails with Conflict. */
  revisions: boolean
}
type WorldMaker = (t: Test) => Promise<World>

/** An exec provisioner by name: a class both stores take (a fleet's local class must be pinned to a node). */
const EXEC = 'exec:shared'

/** Opens a store closed at the end of test `t`. */
const storeOf = async (t: Test, world: World): Promise<ClaimStore> => {
  const s = await world.open()
  t.teardown(() => s.close())
  return s
}

/**
 * What a provisioner of `store` would record for claim `c`: a volume made
 * for it on "shared storage" beside the data dir (t.testdir() again would
 * empty the data dir itself).
 */
const volumeFor = (store: ClaimStore, c: VolumeClaim): PvRecord => {
  const where = path.join(path.dirname(store.dataDir), `shared-${c.uid}`)
  fs.mkdirSync(where)
  return newVolumeRecord(provisionedName(c.uid), {
    reclaim: 'delete',
    accessMode: c.access_mode,
    claimRef: { name: c.name, uid: c.uid },
    provisioned: { class: c.class ?? 'none', provisioner: EXEC, parameters: {}, path: where, capacity_bytes: 1 << 20, by: store.identity, ...(store.node === undefined ? {} : { node: null }) },
  })
}

/** Asserts that `p` rejects with an instance of `kind` (tap's t.rejects matches a class's fields, not its prototype). */
const rejectsWith = async (t: Test, p: Promise<unknown>, kind: abstract new (...args: never[]) => Error, message: string): Promise<void> => {
  try {
    await p
    t.fail(`${message}: it resolved`)
  } catch (er) {
    t.ok(er instanceof kind, `${message} (${String(er)})`)
  }
}

const claimStoreSuite = (t: Test, makeWorld: WorldMaker): void => {
  t.test('classes: made, found, read and listed alike', async (t) => {
    const world = await makeWorld(t)
    const s = await storeOf(t, world)
    const other = await storeOf(t, world)
    t.same(await s.listClasses(), [], 'none at first')
    t.equal(await s.findClass('fast'), undefined, 'findClass of none: undefined')
    await t.rejects(s.readClass('fast'), { code: 'ENOVOLUME', message: /no such volume class.*: fast/ }, 'readClass of none: ENOVOLUME')

    const made = await s.createClass('fast', { provisioner: EXEC, parameters: { tier: 'ssd' }, reclaim: 'retain' })
    t.match(made, { version: 1, name: 'fast', provisioner: EXEC, parameters: { tier: 'ssd' }, reclaim: 'retain', default: false })
    t.same(await other.findClass('fast'), made, 'another store finds what was made, as it was returned')
    t.same(await other.readClass('fast'), made, 'and reads it')
    await s.createClass('bulk', { provisioner: EXEC })
    t.same((await other.listClasses()).map((c) => c.name), ['bulk', 'fast'], 'listed by name')
    t.equal((await other.readClass('bulk')).reclaim, 'delete', 'reclaim defaults to delete')

    await other.removeClass('bulk')
    t.equal(await s.findClass('bulk'), undefined, 'a removed class is gone for every store')
    t.same((await s.listClasses()).map((c) => c.name), ['fast'])
    await t.rejects(s.removeClass('bulk'), { code: 'ENOVOLUME' }, 'removing it again: ENOVOLUME')
  })

  t.test('class errors: exists, a second default, bad input; nothing written', async (t) => {
    const world = await makeWorld(t)
    const s = await storeOf(t, world)
    const other = await storeOf(t, world)
    const first = await s.createClass('fast', { provisioner: EXEC, isDefault: true })
    await t.rejects(other.createClass('fast', { provisioner: EXEC, reclaim: 'retain' }), { code: 'EBADSTATE', message: /volume class fast already exists/ }, 'the same name again: EBADSTATE')
    t.same(await s.readClass('fast'), first, 'the first is unchanged')
    await t.rejects(other.createClass('second', { provisioner: EXEC, isDefault: true }), { code: 'EBADSTATE', message: /volume class fast is already the .*default/ }, 'a second default: EBADSTATE naming the first')
    t.equal(await s.findClass('second'), undefined, 'and it was not made')
    await t.rejects(s.createClass('Bad/Name', { provisioner: EXEC }), { code: 'EUSAGE' }, 'a bad name: EUSAGE')
    await t.rejects(s.createClass('odd', { provisioner: 'nfs' }), { code: 'EUSAGE', message: /unknown provisioner/ }, 'an unknown provisioner: EUSAGE')
    await t.rejects(s.createClass('odd', { provisioner: EXEC, parameters: { 'bad key': 'x' } }), { code: 'EUSAGE' }, 'a bad parameter: EUSAGE')
    t.same((await s.listClasses()).map((c) => c.name), ['fast'], 'no failed create left anything')
  })

  t.test('the default class: given to a claim without one; its removal frees the default', async (t) => {
    const world = await makeWorld(t)
    const s = await storeOf(t, world)
    const other = await storeOf(t, world)
    t.equal((await s.createClaim('plain')).class, null, 'no default class: a claim of no class')
    await s.createClass('std', { provisioner: EXEC, isDefault: true })
    await s.createClass('fast', { provisioner: EXEC })
    t.equal((await other.createClaim('a')).class, 'std', 'a claim without a class gets the default')
    t.equal((await other.createClaim('b', { class: 'fast' })).class, 'fast', 'one that names a class keeps it')
    for (const n of ['a', 'b', 'plain']) {
      await s.withLock('claim', n, 0, async (held) => s.release(await s.readClaim(n), undefined, held))
    }
    await other.removeClass('std')
    const next = await s.createClass('next', { provisioner: EXEC, isDefault: true })
    t.equal(next.default, true, 'with the default class removed, another can be the default')
    t.equal((await other.createClaim('c')).class, 'next', 'and new claims get it')
  })

  t.test('a class in use by a claim cannot go; once the claim is released it can', async (t) => {
    const world = await makeWorld(t)
    const s = await storeOf(t, world)
    const other = await storeOf(t, world)
    await s.createClass('fast', { provisioner: EXEC })
    await other.createClaim('data', { class: 'fast' })
    await t.rejects(s.removeClass('fast'), { code: 'EBADSTATE', message: /volume class fast is used by claim data/ }, 'EBADSTATE naming the claim')
    t.ok(await s.findClass('fast'), 'the class stays')
    await s.withLock('claim', 'data', 0, async (held) => s.release(await s.readClaim('data'), undefined, held))
    t.equal(await other.findClaim('data'), undefined, 'released: the claim is gone')
    await s.removeClass('fast')
    t.equal(await other.findClass('fast'), undefined, 'then the class goes')
  })

  t.test('claims: made pending, found, read and listed alike', async (t) => {
    const world = await makeWorld(t)
    const s = await storeOf(t, world)
    const other = await storeOf(t, world)
    await s.createClass('fast', { provisioner: EXEC })
    t.same(await s.listClaims(), [], 'none at first')
    t.equal(await s.findClaim('data'), undefined, 'findClaim of none: undefined')
    await t.rejects(s.readClaim('data'), { code: 'ENOVOLUME', message: /no such volume claim.*: data/ }, 'readClaim of none: ENOVOLUME')
    const c = await s.createClaim('data', { class: 'fast', sizeBytes: 1 << 20 })
    t.match(c, { version: 1, name: 'data', class: 'fast', size_bytes: 1 << 20, access_mode: 'ReadWriteOnce', phase: 'pending', volume: null, bound_at: null, provisioning: null, failures: 0, retry_at: null, events: [] })
    t.match(c.uid, /^[0-9a-f]{8}-[0-9a-f]{4}-/, 'with a uid')
    const read = await other.readClaim('data')
    t.same(read.value, c, 'another store reads it as it was returned')
    t.same((await other.findClaim('data'))?.value, c, 'and finds it')
    t.equal(typeof read.rev, 'string', 'with a revision to compare')
    if (world.revisions) t.not(read.rev, '', "a fleet's revision is etcd's")
    const many = await s.createClaim('logs', { accessMode: 'ReadWriteMany' })
    t.equal(many.access_mode, 'ReadWriteMany')
    await other.createClaim('cache')
    t.same((await s.listClaims()).map((x) => x.name), ['cache', 'data', 'logs'], 'listed by name')
  })

  t.test('claim errors: exists, existingOk, unknown class, bad input', async (t) => {
    const world = await makeWorld(t)
    const s = await storeOf(t, world)
    const other = await storeOf(t, world)
    await s.createClass('fast', { provisioner: EXEC })
    const c = await s.createClaim('data', { class: 'fast', sizeBytes: 4096 })
    await t.rejects(other.createClaim('data', { class: 'fast', sizeBytes: 4096 }), { code: 'EBADSTATE', message: /volume claim data already exists/ }, 'the same name again: EBADSTATE')
    const same = await other.createClaim('data', { class: 'fast', sizeBytes: 4096, existingOk: true })
    t.equal(same.uid, c.uid, 'existingOk and the same request: the existing claim, not a new one')
    t.equal((await other.createClaim('data', { existingOk: true })).uid, c.uid, 'existingOk asking nothing in particular: the existing one too')
    await t.rejects(other.createClaim('data', { class: 'fast', sizeBytes: 8192, existingOk: true }), { code: 'EBADSTATE', message: /asks for something else/ }, 'existingOk, another size: EBADSTATE')
    await t.rejects(other.createClaim('data', { accessMode: 'ReadWriteMany', existingOk: true }), { code: 'EBADSTATE' }, 'existingOk, another access mode: EBADSTATE')
    t.same((await s.readClaim('data')).value, c, 'the claim is unchanged')
    await t.rejects(s.createClaim('other', { class: 'slow' }), { code: 'EUSAGE', message: /unknown volume class "slow"/ }, 'an unknown class: EUSAGE')
    await t.rejects(s.createClaim('Bad_Name'), { code: 'EUSAGE', message: /invalid claim name/ }, 'a bad name: EUSAGE')
    await t.rejects(s.createClaim('other', { sizeBytes: 0 }), { code: 'EUSAGE', message: /invalid size/ }, 'size 0: EUSAGE')
    await t.rejects(s.createClaim('other', { accessMode: 'ReadOnlyMany' as never }), { code: 'EUSAGE', message: /invalid access mode/ }, 'an unknown access mode: EUSAGE')
    t.same((await s.listClaims()).map((x) => x.name), ['data'], 'no failed create left anything')
  })

  t.test('saveClaim under the claim lock: written, with its event counted; a stale read is a Conflict where revisions are compared', async (t) => {
    const world = await makeWorld(t)
    const s = await storeOf(t, world)
    const other = await storeOf(t, world)
    await s.createClaim('data')
    const event = { type: 'Warning', reason: 'ProvisioningFailed', message: 'no room' } as const
    const saved = await s.withLock('claim', 'data', 0, async (held) => {
      const first = await s.readClaim('data')
      const once = await s.saveClaim(first, { ...first.value, failures: 1 }, held, event)
      return s.saveClaim(once, { ...once.value, failures: 2 }, held, event)
    })
    t.equal(saved.value.failures, 2)
    t.match(saved.value.events, [{ type: 'Warning', reason: 'ProvisioningFailed', message: 'no room', count: 2 }], 'the same event twice is one event, counted twice')
    const read = await other.readClaim('data')
    t.same(read.value, saved.value, 'what saveClaim returned is what another store reads')
    t.equal(read.rev, saved.rev, 'with the revision saveClaim returned')
    const plain = await s.withLock('claim', 'data', 0, async (held) => s.saveClaim(read, { ...read.value, failures: 0 }, held))
    t.equal(plain.value.events.length, 1, 'no event given: none added')

    if (!world.revisions) return
    const stale = read // read before `plain` was written
    await rejectsWith(t, s.withLock('claim', 'data', 0, async (held) => s.saveClaim(stale, { ...stale.value, failures: 9 }, held)), Conflict, 'a write over a stale read: Conflict')
    t.equal((await other.readClaim('data')).value.failures, 0, 'and nothing was written')
  })

  t.test('withLock: held by another, busy at once with waitMs 0; free again after', async (t) => {
    const world = await makeWorld(t)
    const s = await storeOf(t, world)
    const other = await storeOf(t, world)
    let inside = false
    await s.withLock('claim', 'data', 0, async () => {
      inside = true
      await rejectsWith(t, other.withLock('claim', 'data', 0, async () => 'no'), LockBusyError, "another's claim lock: LockBusyError")
      await t.rejects(other.withLock('claim', 'data', 0, async () => 'no'), { code: 'EBADSTATE', message: /is busy/ }, 'which is EBADSTATE, "busy"')
      t.equal(await other.withLock('claim', 'other', 0, async () => 'yes'), 'yes', 'the lock of another claim is free')
      t.equal(await other.withLock('volume', 'data', 0, async () => 'yes'), 'yes', 'and so is the volume lock of the same name')
    })
    t.ok(inside)
    t.equal(await other.withLock('claim', 'data', 0, async () => 'after'), 'after', 'released: another takes it')
    await t.rejects(s.withLock('claim', 'data', 0, async () => {
      throw new Error('work failed')
    }), /work failed/, "the work's error comes out")
    t.equal(await other.withLock('claim', 'data', 0, async () => 'again'), 'again', 'and the lock is released after a failure too')
  })

  t.test('provisioned, ownVolume, release, releasedVolumes, deleteVolume: the life of a provisioned volume', async (t) => {
    const world = await makeWorld(t)
    const s = await storeOf(t, world)
    const other = await storeOf(t, world)
    await s.createClass('fast', { provisioner: EXEC })
    const c = await s.createClaim('data', { class: 'fast' })
    t.equal(await s.ownVolume(c), undefined, 'no volume yet')
    const v = volumeFor(s, c)
    const event = { type: 'Normal', reason: 'ProvisioningSucceeded', message: `successfully provisioned volume ${v.name}` } as const
    const bound = await s.withLock('claim', 'data', 0, async (held) => s.provisioned(await s.readClaim('data'), v, event, held))
    t.ok(bound, 'the volume is written and the claim bound')
    t.match(bound!.value, { phase: 'bound', volume: v.name, provisioned_by: s.identity, events: [{ reason: 'ProvisioningSucceeded', count: 1 }] })
    const read = await other.readClaim('data')
    t.same(read.value, bound!.value, 'another store reads the bound claim')
    t.equal(read.rev, bound!.rev, 'at the revision provisioned returned')
    t.match((await other.findVolume(v.name))?.value, { name: v.name, phase: 'available', claim_ref: { name: 'data', uid: c.uid } }, 'and finds the volume')
    t.equal((await other.ownVolume(read.value))?.value.name, v.name, "ownVolume: the volume made for the claim")
    const again = await s.withLock('claim', 'data', 0, async (held) => s.provisioned(await s.readClaim('data'), v, event, held))
    t.equal(again, undefined, 'the same volume again: undefined, nothing written')
    t.same((await other.readClaim('data')).value, bound!.value, 'the claim unchanged')
    t.same(await s.releasedVolumes(), [], 'nothing released yet')

    t.same(await other.podsUsing(read.value), [], 'no pod uses it')
    await other.withLock('claim', 'data', 0, async (held) => other.release(await other.readClaim('data'), await other.ownVolume(read.value), held))
    t.equal(await s.findClaim('data'), undefined, 'released: the claim is gone')
    const released = await s.findVolume(v.name)
    t.equal(released?.value.phase, 'released', 'and its volume released')
    t.same(await s.releasedVolumes(), [v.name], 'a released volume of reclaim delete is to be reclaimed')
    await s.withLock('volume', v.name, 0, async (held) => s.volumeEvent((await s.findVolume(v.name))!, { type: 'Warning', reason: 'VolumeFailedDelete', message: 'busy' }, held))
    t.match((await other.findVolume(v.name))?.value.events, [{ reason: 'VolumeFailedDelete', message: 'busy' }], 'volumeEvent keeps an event on the volume')
    await s.withLock('volume', v.name, 0, async (held) => s.deleteVolume((await s.findVolume(v.name))!, held))
    t.equal(await other.findVolume(v.name), undefined, 'deleteVolume: the record is gone')
    t.same(await other.releasedVolumes(), [], 'and nothing is left to reclaim')
  })

  t.test('a new claim of a released name has a new uid, and does not own the old volume', async (t) => {
    const world = await makeWorld(t)
    const s = await storeOf(t, world)
    const c = await s.createClaim('data')
    const v = volumeFor(s, c)
    const event = { type: 'Normal', reason: 'ProvisioningSucceeded', message: 'made' } as const
    await s.withLock('claim', 'data', 0, async (held) => s.provisioned(await s.readClaim('data'), v, event, held))
    await s.withLock('claim', 'data', 0, async (held) => s.release(await s.readClaim('data'), await s.findVolume(v.name), held))
    const again = await s.createClaim('data')
    t.not(again.uid, c.uid, 'a new uid')
    t.equal(await s.ownVolume(again), undefined, 'the released volume of the old claim is not its')
  })

  t.test('two stores make one claim at once: one wins, the other is told it exists', async (t) => {
    const world = await makeWorld(t)
    const a = await storeOf(t, world)
    const b = await storeOf(t, world)
    for (let round = 0; round < 5; round++) {
      const name = `race-${round}`
      const results = await Promise.allSettled([a.createClaim(name, { sizeBytes: 4096 }), b.createClaim(name, { sizeBytes: 4096 })])
      const won = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []))
      const lost = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []))
      t.equal(won.length, 1, `${name}: one create succeeds`)
      t.ok(lost.length === 1 && isPodctlError(lost[0]) && lost[0].code === 'EBADSTATE', `${name}: the other is EBADSTATE (${String(lost[0])})`)
      t.equal((await a.readClaim(name)).value.uid, won[0]?.uid, `${name}: the winner's claim is the one stored`)
    }
  })

  t.test('two stores make a default class at once: one default', async (t) => {
    const world = await makeWorld(t)
    const a = await storeOf(t, world)
    const b = await storeOf(t, world)
    const results = await Promise.allSettled([a.createClass('one', { provisioner: EXEC, isDefault: true }), b.createClass('two', { provisioner: EXEC, isDefault: true })])
    t.equal(results.filter((r) => r.status === 'fulfilled').length, 1, 'one create succeeds')
    const defaults = (await a.listClasses()).filter((c) => c.default)
    t.equal(defaults.length, 1, `one default class (${defaults.map((c) => c.name).join(', ')})`)
    t.equal((await b.createClaim('data')).class, defaults[0]?.name, "a new claim gets the winner's class")
  })

  t.test('a class removed while a claim of it is made: never a claim whose class is gone', async (t) => {
    const world = await makeWorld(t)
    const a = await storeOf(t, world)
    const b = await storeOf(t, world)
    for (let round = 0; round < 5; round++) {
      const cls = `cls-${round}`
      await a.createClass(cls, { provisioner: EXEC })
      const [removed, made] = await Promise.allSettled([a.removeClass(cls), b.createClaim(`claim-${round}`, { class: cls })])
      const claim = await a.findClaim(`claim-${round}`)
      const klass = await a.findClass(cls)
      t.ok(claim === undefined || klass !== undefined, `round ${round}: no claim of a removed class (class rm ${removed.status}, claim create ${made.status})`)
      t.equal(removed.status === 'fulfilled', klass === undefined, `round ${round}: the class is gone exactly when its removal succeeded`)
      t.equal(made.status === 'fulfilled', claim !== undefined, `round ${round}: the claim exists exactly when its create succeeded`)
    }
  })

  t.test('watch tells of a claim made and removed by another store; the stop ends it', async (t) => {
    const world = await makeWorld(t)
    const s = await storeOf(t, world)
    const other = await storeOf(t, world)
    const claims: string[] = []
    const logs: string[] = []
    const stop = await s.watch((n) => claims.push(n), () => {}, (l) => logs.push(l))
    await other.createClaim('seen')
    await pollUntil('the watch to tell of claim seen', () => claims.includes('seen'), { intervalMs: 20, polls: 250 })
    t.pass('a made claim is told of')
    claims.length = 0
    await other.withLock('claim', 'seen', 0, async (held) => other.release(await other.readClaim('seen'), undefined, held))
    await pollUntil('the watch to tell of the removal', () => claims.includes('seen'), { intervalMs: 20, polls: 250 })
    t.pass('a removed claim is told of')
    stop()
    t.same(logs, [], 'nothing to log')
  })

  t.test('what a store with nothing running says of itself', async (t) => {
    const world = await makeWorld(t)
    const s = await storeOf(t, world)
    t.equal(await s.leaderLive(), false, 'no controller leads')
    t.same(await s.staticVolumes(), [], 'no static volumes')
    t.same(await s.releasedVolumes(), [], 'nothing released')
    t.ok(s.identity.length > 0, `an identity: ${s.identity}`)
    t.ok(s.flag === '' || s.flag === ' --cluster', `a flag for hints: ${JSON.stringify(s.flag)}`)
  })
}

t.test('LocalStore on a data dir', async (t) => {
  claimStoreSuite(t, async (t) => {
    const dir = dataDir(t)
    let n = 0
    return { revisions: false, open: async () => new LocalStore(dir, `local-${n++}`) }
  })
})

t.test('FleetStore on a real etcd', { skip: etcdMissing ?? false }, async (t) => {
  const etcd: EtcdCluster = await startEtcd(t, 1)
  let worlds = 0
  claimStoreSuite(t, async (t) => {
    // A prefix of each subtest's own: one etcd, no subtest sees another's objects.
    const prefix = `/claim-store-${worlds++}/`
    const dir = dataDir(t)
    let n = 0
    return {
      revisions: true,
      open: async () => {
        const node = `n${n++}`
        return new FleetStore(await Cluster.open({ endpoints: etcd.endpoints.split(','), prefix }), node, dir, `${node}/test`)
      },
    }
  })
})
