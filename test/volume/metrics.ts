// Volume usage (lib/volume/metrics.ts): du-like walk without following
// links, statfs for capacity, a short cache.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { METRICS_TTL_MS, clearMetricsCache, diskUsage, fsSpace, volumeMetrics } from '../../lib/volume/metrics.js'

t.test('diskUsage counts blocks and inodes, links once, never follows', async (t) => {
  const dir = t.testdir({ vol: { a: 'x'.repeat(10_000), sub: { b: 'y' } }, outside: { big: 'z'.repeat(100_000) } })
  const vol = path.join(dir, 'vol')
  const base = diskUsage(vol)!
  t.equal(base.inodes, 4, 'vol, a, sub, sub/b')
  t.ok(base.bytes >= 10_000, `blocks of a 10 kB file count (${base.bytes})`)
  fs.symlinkSync(path.join(dir, 'outside'), path.join(vol, 'escape'))
  fs.linkSync(path.join(vol, 'a'), path.join(vol, 'a-again'))
  const u = diskUsage(vol)!
  t.equal(u.inodes, 5, 'the link counts as one inode; the hard link is not counted twice')
  t.ok(u.bytes < base.bytes + 100_000, 'what the link points to is not counted')
  t.equal(diskUsage(path.join(dir, 'nope')), undefined)
  t.equal(diskUsage(vol, { maxEntries: 2 }), undefined, 'too large a walk gives up')
  fs.symlinkSync(vol, path.join(dir, 'vol-link'))
  t.equal(diskUsage(path.join(dir, 'vol-link'))!.inodes, 1, 'a root that is a link is not followed by default')
  t.equal(diskUsage(path.join(dir, 'vol-link'), { followRoot: true })!.inodes, 5, '... unless asked (a host source)')
})

t.test('volumeMetrics: statfs only for own storage; cached briefly', async (t) => {
  const dir = t.testdir({ vol: { a: 'x' } })
  const vol = path.join(dir, 'vol')
  clearMetricsCache()
  const shared = volumeMetrics(vol, false, { followRoot: false })
  t.equal(shared.capacity_bytes, null)
  t.equal(shared.available_bytes, null)
  const own = volumeMetrics(vol, true, { followRoot: false })
  t.same([own.capacity_bytes, own.available_bytes], [fsSpace(vol)!.capacity, own.available_bytes])
  t.ok(own.capacity_bytes! > 0 && own.available_bytes! >= 0)
  const now = Date.now()
  const first = volumeMetrics(vol, false, { followRoot: false }, now)
  fs.writeFileSync(path.join(vol, 'more'), 'x'.repeat(50_000))
  t.same(volumeMetrics(vol, false, { followRoot: false }, now + 1), first, 'within the TTL: the cached value')
  t.ok(volumeMetrics(vol, false, { followRoot: false }, now + METRICS_TTL_MS + 1).used_inodes! > first.used_inodes!, 'after it: computed again')
  const missing = volumeMetrics(path.join(dir, 'nope'), true, { followRoot: false })
  t.same(missing, { used_bytes: null, used_inodes: null, capacity_bytes: null, available_bytes: null })
  fs.symlinkSync('/', path.join(dir, 'root-link'))
  t.equal(volumeMetrics(path.join(dir, 'root-link'), true, { followRoot: false }).capacity_bytes, null, 'no statfs through a link')
})
