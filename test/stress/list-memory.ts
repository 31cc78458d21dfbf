// `list --format json` holds a bounded amount whatever the store's size:
// 100,000 pods (grown by cloning real pods, bench/lib/clone-store.js) are
// listed in under 200 MB of peak memory, and the output is the same JSON
// the slow form gives. Part of `npm run test:stress`: the store takes a
// while to make.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { BIN } from '../helpers/common.js'

const MAX_RSS = fileURLToPath(new URL('../helpers/max-rss.cjs', import.meta.url))
const PODS = Number(process.env.LIST_MEMORY_PODS ?? 100_000)
const LIMIT_KB = 200 * 1024

t.test(`list --format json of ${PODS} pods stays under 200 MB`, async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const { cloneStore } = (await import(new URL('../../bench/lib/clone-store.js', import.meta.url).href)) as { cloneStore: (dir: string, n: number) => Promise<void> }
  await cloneStore(dir, PODS)
  const out = path.join(path.dirname(dir), 'out.json')
  const fd = fs.openSync(out, 'w')
  const r = spawnSync('/usr/bin/env', ['-u', 'NODE_OPTIONS', '-u', 'NODE_V8_COVERAGE', process.execPath, '-r', MAX_RSS, BIN, '--dir', dir, 'list', '--format', 'json'], { stdio: ['ignore', fd, 'pipe'], encoding: 'utf8' })
  fs.closeSync(fd)
  t.equal(r.status, 0, r.stderr)
  const peakKb = Number(/max-rss=(\d+)\n$/.exec(r.stderr)?.[1])
  t.ok(peakKb > 0 && peakKb <= LIMIT_KB, `peak resident memory ${Math.round(peakKb / 1024)} MB ≤ 200 MB`)
  const pods = JSON.parse(fs.readFileSync(out, 'utf8')) as { uuid: string; created_at: string }[]
  t.equal(pods.length, PODS, 'every pod is listed')
  t.equal(new Set(pods.map((p) => p.uuid)).size, PODS, 'each once')
  t.ok(pods.every((p, i) => i === 0 || `${pods[i - 1]!.created_at}${pods[i - 1]!.uuid}` < `${p.created_at}${p.uuid}`), 'in order of creation')
  // The slow form (a filter) gives the same objects.
  const slow = spawnSync(process.execPath, [BIN, '--dir', dir, 'list', '--format', 'json', '--sort', 'created', '--filter', 'app=web', '--filter', 'app=sidecar'], { encoding: 'utf8', maxBuffer: 1 << 30, env: { ...process.env, NODE_OPTIONS: '' } })
  t.equal(slow.status, 0, slow.stderr)
  t.same(JSON.parse(slow.stdout), pods, 'the same JSON as the form that parses every record')
})
