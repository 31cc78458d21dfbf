// `podctl volume update` and the AtomicWriter under a real reader: the
// pod's app (test/helpers/volume-reader.mjs) polls its files volume while
// this test makes 1,000 updates through the operation executor (every
// 50th through the spawned bin/podctl), and never sees a mix of two
// versions, a torn file, or a version's file set wrong.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import type { Payload } from '../../lib/volume/atomic-writer.js'
import { updateFilesVolume } from '../../lib/volume/update.js'
import { manifestFile, podDir, pollUntil, runsOf, scaled } from '../helpers/common.js'
import { podctl, runDetached } from '../helpers/cli-util.js'
import { nodeCommand } from '../helpers/launcher.js'
import { dataDir } from '../helpers/run-util.js'

const READER = fileURLToPath(new URL('../helpers/volume-reader.mjs', import.meta.url))
// npm test makes a fifth of the updates; npm run test:stress all of them.
const FULL = 1_000
const UPDATES = runsOf(FULL)

const content = (v: string): string => `v=${v};${`${v} `.repeat(512)};end=${v}`
const version = (v: string): Record<string, string> => {
  const files: Record<string, string> = { a: content(v), b: content(v), c: content(v), 'd/e': content(v) }
  if (v !== 'final' && Number(v) % 2 === 1) files.odd = 'odd'
  return files
}
const payload = (v: string): Payload => new Map(Object.entries(version(v)).map(([k, x]) => [k, { data: Buffer.from(x), mode: 0o644 }]))

t.test(`a running app reading its files volume during ${UPDATES} updates never sees a mix of two versions`, async (t) => {
  const dir = dataDir(t)
  const m = manifestFile(dir, {
    apiVersion: 'podctl/v1',
    apps: [{ name: 'reader', exec: [process.execPath, READER], mounts: [{ volume: 'cfg', path: '/cfg' }, { volume: 'out', path: '/out' }] }],
    volumes: [
      { name: 'cfg', kind: 'files', files: Object.fromEntries(Object.entries(version('0')).map(([k, x]) => [k, { content: x }])) },
      { name: 'out', kind: 'empty' },
    ],
  })
  const uuid = await runDetached(t, dir, ['--manifest', m])
  const out = path.join(podDir(dir, uuid)!, 'volumes', 'out')
  await pollUntil('the reader to start', () => fs.existsSync(path.join(out, 'started')))
  const pod = podFromUUIDString(dir, uuid)
  const src = path.join(dir, 'src')
  let changed = 0
  for (let i = 1; i <= UPDATES; i++) {
    const v = i === UPDATES ? 'final' : String(i)
    if (i % 50 === 0) {
      // Through the CLI: --from-dir with this version's files.
      fs.rmSync(src, { recursive: true, force: true })
      for (const [k, x] of Object.entries(version(v))) {
        fs.mkdirSync(path.dirname(path.join(src, k)), { recursive: true })
        fs.writeFileSync(path.join(src, k), x, { mode: 0o644 })
        fs.chmodSync(path.join(src, k), 0o644)
      }
      const r = podctl(dir, ['volume', 'update', uuid.slice(0, 8), 'cfg', '--from-dir', src])
      if (r.status !== 0 || r.stdout !== 'cfg updated\n') t.fail(`update ${i} through the CLI: ${r.status} ${r.stdout} ${r.stderr}`)
      changed++
    } else if (updateFilesVolume(pod, 'cfg', payload(v), { wait: true }).changed) changed++
  }
  t.equal(changed, UPDATES, 'every update changed the volume')
  const st = podctl(dir, ['status', uuid, '--wait', '--format', 'json'])
  t.equal(JSON.parse(st.stdout).apps[0].exit_code, 0, 'the reader saw the final version and exited 0')
  const result = JSON.parse(fs.readFileSync(path.join(out, 'result.json'), 'utf8'))
  t.equal(result.mixed, 0, 'never a mix of two versions', result)
  t.equal(result.torn, 0, 'never a torn file', result)
  t.equal(result.wrongSet, 0, "never a version with another version's set of files", result)
  t.equal(result.visibleTorn, 0, 'a user-visible file read on its own is always one whole version', result)
  t.ok(result.snapshots > scaled(100, FULL), `the reader read the volume many times (${result.snapshots} snapshots, ${result.retries} retries)`)
  t.ok(result.versions > scaled(10, FULL), `and saw many versions go by (${result.versions})`)
  const cfgDir = path.join(podDir(dir, uuid)!, 'volumes', 'cfg')
  t.equal(fs.readdirSync(cfgDir).filter((n) => n.startsWith('..') && n !== '..data').length, 1, 'one version directory is left')
})

t.test('the reader catches a mix and a torn file (the checks above are not vacuous)', async (t) => {
  const { spawnSync } = await import('node:child_process')
  type Tree = { [name: string]: string | Tree }
  const broken = (files: Tree): Record<string, number> => {
    const root = t.testdir({ cfg: { '..v': files }, out: {} })
    fs.symlinkSync('..v', path.join(root, 'cfg', '..data'))
    const env: NodeJS.ProcessEnv = { ...process.env, PODCTL_APP_ROOT: root, READER_ONCE: '1' }
    const [node, argv] = nodeCommand([READER])
    const r = spawnSync(node, argv, { env, encoding: 'utf8' })
    t.equal(r.status, 0, r.stderr)
    return JSON.parse(fs.readFileSync(path.join(root, 'out', 'result.json'), 'utf8'))
  }
  const v2 = version('2')
  t.match(broken({ a: v2.a!, b: v2.b!, c: v2.c!, d: { e: content('3') } }), { mixed: 1, torn: 0 }, 'files of two versions')
  t.match(broken({ a: v2.a!, b: v2.b!.slice(0, 100), c: v2.c!, d: { e: v2['d/e']! } }), { mixed: 0, torn: 1 }, 'a file cut short')
  t.match(broken({ a: v2.a!, b: v2.b!, c: v2.c!, d: { e: v2['d/e']! }, odd: 'odd' }), { mixed: 0, torn: 0, wrongSet: 1 }, "a file of another version's set")
})
