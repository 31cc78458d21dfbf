// randomUUIDv4 (lib/pod/uuid.ts): the format of crypto.randomUUID(), random bits, no repeats.
import t from 'tap'
import { randomUUIDv4 } from '../../lib/pod/uuid.js'
import { UUID_RE } from '../../lib/pod/layout.js'

t.test('version 4, variant 10, lower-case hex, as crypto.randomUUID()', async (t) => {
  const uuids = Array.from({ length: 10_000 }, randomUUIDv4)
  for (const u of uuids.slice(0, 100)) t.match(u, UUID_RE)
  t.ok(uuids.every((u) => UUID_RE.test(u) && u === u.toLowerCase()), 'all 10,000 match')
  t.equal(new Set(uuids).size, uuids.length, 'no two alike')
  // Every hex digit that is random takes all 16 values over 10,000 draws
  // (the chance that one does not is about 16 × (15/16)^10000).
  const digits = uuids[0]!.replace(/-/g, '').length
  for (let i = 0; i < digits; i++) {
    if (i === 12 || i === 16) continue // the version digit, and the variant digit (4 values)
    const seen = new Set(uuids.map((u) => u.replace(/-/g, '')[i]))
    if (seen.size !== 16) t.fail(`hex digit ${i} took only ${seen.size} values`)
  }
  t.same(new Set(uuids.map((u) => u[19])), new Set(['8', '9', 'a', 'b']), 'the variant digit takes its 4 values')
})
