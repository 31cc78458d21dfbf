// Runs one gc pass over DATA_DIR through the built library and prints the
// result as one JSON line. For concurrent-gc tests.
// usage: node gc-once.mjs DATA_DIR GRACE_MS
import { dist } from './dist.mjs'
const { gc } = await dist('pod/gc.js')
const [dir, grace = '0'] = process.argv.slice(2)
try {
  const r = await gc(dir, { gracePeriodMs: Number(grace), expirePreparedMs: 24 * 3600 * 1000 })
  process.stdout.write(`${JSON.stringify({ ok: true, ...r })}\n`)
} catch (er) {
  process.stdout.write(`${JSON.stringify({ ok: false, message: String(er?.stack ?? er) })}\n`)
  process.exitCode = 1
}
