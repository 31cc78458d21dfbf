// Property test of the volume part of the manifest:
// random volumes and mounts — every kind, good and bad fields, nesting,
// host sources and persistent volumes that exist or not — given to
// `podctl prepare` are either accepted (exit 0, one UUID) or refused with
// exit 2 naming a field of the manifest, and a refusal leaves nothing on
// disk. Some accepted pods are also run and removed through bin/podctl,
// which must leave the data dir and the host path exactly as they were.
import t from 'tap'
import fc from 'fast-check'
import fs from 'node:fs'
import path from 'node:path'
import { main } from '../../lib/cli/main.js'
import { createVolume } from '../../lib/storage/local/volumes.js'
import { ensureDataDir } from '../../lib/pod/layout.js'
import { snapshot, STACK_RE, UUID_RE, runsOf, scaled } from '../helpers/common.js'
import { podctl } from '../helpers/cli-util.js'

type Json = null | boolean | number | string | Json[] | { [k: string]: Json }

const JUNK: fc.Arbitrary<Json> = fc.oneof(fc.constant(null), fc.boolean(), fc.integer(), fc.string({ maxLength: 6 }), fc.constant<Json>([]), fc.constant<Json>({}))
const maybe = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.option(a, { nil: undefined, freq: 3 })
/** Drops undefined fields, so that "missing" is missing. */
const obj = (o: Record<string, Json | undefined>): Json => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Json

const NAME = fc.oneof({ weight: 6, arbitrary: fc.constantFrom('data', 'cfg', 'db', 'h', 'n') }, { weight: 1, arbitrary: fc.constantFrom('Bad', '', '-x', 'a'.repeat(64)) }, { weight: 1, arbitrary: JUNK })
const MOUNT_PATH = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('/data', '/data/sub', '/data/sub/deep', '/cfg', '/etc/x', '/data/', '//data//sub', '/db', '/data/./n') },
  { weight: 1, arbitrary: fc.constantFrom('/', 'rel', '/a/../b', '', '/a\u0000b') },
  { weight: 1, arbitrary: JUNK },
)
const REL = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom('a', 'b/c', 'b', 'd/e/f', '.hidden', 'x.conf') },
  { weight: 2, arbitrary: fc.constantFrom('..x', '../x', '/abs', 'a//b', './a', '', 'a/', 'a/..b') },
  { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
)
const FILE: fc.Arbitrary<Json> = fc.oneof(
  { weight: 5, arbitrary: fc.tuple(fc.string({ maxLength: 20 }), maybe(fc.oneof(fc.integer({ min: 0, max: 0o777 }), JUNK))).map(([content, mode]) => obj({ content, mode })) },
  { weight: 1, arbitrary: fc.tuple(maybe(JUNK), maybe(JUNK)).map(([content, extra]) => obj({ content, extra })) },
  { weight: 1, arbitrary: JUNK },
)

let hostDir = '/nonexistent'
const volumeArb: fc.Arbitrary<Json> = fc.oneof(
  fc.tuple(NAME, maybe(JUNK)).map(([name, extra]) => obj({ name, kind: 'empty', source: extra })),
  fc
    .tuple(NAME, fc.oneof(fc.constant('<host>'), fc.constant('<host>/nope'), fc.constantFrom('rel', '/a/../b', ''), JUNK), maybe(fc.oneof(fc.boolean(), JUNK)))
    .map(([name, source, readOnly]) => obj({ name, kind: 'host', source: typeof source === 'string' ? source.replace('<host>', hostDir) : source, readOnly })),
  fc
    .tuple(NAME, fc.oneof({ weight: 5, arbitrary: fc.dictionary(REL, FILE, { maxKeys: 4 }) }, { weight: 1, arbitrary: JUNK }))
    .map(([name, files]) => obj({ name, kind: 'files', files: files as Json })),
  fc
    .tuple(NAME, fc.oneof(fc.constantFrom('pv-rwo', 'pv-rwx', 'nope', 'Bad'), JUNK), maybe(fc.oneof(fc.constantFrom('ReadWriteOnce', 'ReadWriteMany', 'RWO'), JUNK)), maybe(fc.oneof(fc.boolean(), JUNK)))
    .map(([name, claim, accessMode, readOnly]) => obj({ name, kind: 'persistent', claim, accessMode, readOnly })),
  fc.tuple(NAME, fc.oneof(fc.constantFrom('tmpfs', ''), JUNK)).map(([name, kind]) => obj({ name, kind })),
  { arbitrary: JUNK, weight: 1 },
)
const mountArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 8, arbitrary: fc.tuple(NAME, MOUNT_PATH, maybe(fc.oneof(fc.boolean(), JUNK))).map(([volume, p, readOnly]) => obj({ volume, path: p, readOnly })) },
  { weight: 1, arbitrary: fc.tuple(NAME, MOUNT_PATH, JUNK).map(([volume, p, x]) => obj({ volume, path: p, rw: x })) },
  { weight: 1, arbitrary: JUNK },
)
const manifestArb: fc.Arbitrary<Json> = fc
  .tuple(
    fc.oneof({ weight: 8, arbitrary: fc.array(volumeArb, { maxLength: 5 }) }, { weight: 1, arbitrary: JUNK }),
    fc.array(fc.oneof({ weight: 8, arbitrary: fc.array(mountArb, { maxLength: 4 }) }, { weight: 1, arbitrary: JUNK }), { minLength: 1, maxLength: 3 }),
  )
  .map(([volumes, mountLists]) => ({
    apiVersion: 'podctl/v1',
    apps: mountLists.map((mounts, i) => ({ name: `app${i}`, exec: ['/bin/true'], mounts })),
    volumes,
  }))

// Mostly valid: unique names, valid fields, mounts of declared volumes at
// plausible paths; what is left to chance is nesting, conflicts between
// apps, and whether host sources and persistent volumes exist.
const VALID_NAMES = ['data', 'cfg', 'db', 'h', 'n'] as const
const validVolume = (name: string): fc.Arbitrary<Json> =>
  fc.oneof(
    fc.constant(obj({ name, kind: 'empty' })),
    fc.constantFrom('<host>', '<host>/sub', '<host>/nope').map((src) => obj({ name, kind: 'host', source: src.replace('<host>', hostDir), readOnly: true })),
    fc.dictionary(fc.constantFrom('a', 'b/c', 'x.conf', 'd/e/f'), fc.string({ maxLength: 10 }).map((content) => obj({ content })), { maxKeys: 3 }).map((files) => obj({ name, kind: 'files', files })),
    fc.tuple(fc.constantFrom('pv-rwo', 'pv-rwx', 'nope'), maybe(fc.constantFrom('ReadWriteOnce', 'ReadWriteMany'))).map(([claim, accessMode]) => obj({ name, kind: 'persistent', claim, accessMode })),
  )
const validManifestArb: fc.Arbitrary<Json> = fc
  .subarray([...VALID_NAMES], { minLength: 1 })
  .chain((names) =>
    fc.tuple(
      fc.tuple(...names.map(validVolume)),
      fc.array(fc.array(fc.tuple(fc.constantFrom(...names), fc.constantFrom('/data', '/data/sub', '/data/sub/deep', '/cfg', '/db', '/x/y')), { maxLength: 4 }), { minLength: 1, maxLength: 3 }),
    ),
  )
  .map(([volumes, appMounts]) => ({
    apiVersion: 'podctl/v1',
    apps: appMounts.map((ms, i) => ({ name: `app${i}`, exec: ['/bin/true'], mounts: [...new Map(ms.map(([volume, p]) => [p, { volume, path: p }])).values()] })),
    volumes,
  }))

/** Field paths a refusal may name: every path in the value, a known field below any object, the top level. */
const candidatePaths = (v: Json): Set<string> => {
  const out = new Set<string>(['(top level)'])
  const fields = ['name', 'kind', 'source', 'readOnly', 'files', 'claim', 'accessMode', 'content', 'mode', 'volume', 'path', 'mounts', 'volumes', 'apps']
  const join = (at: string, k: string | number): string =>
    typeof k === 'number' ? `${at}[${k}]` : /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? (at ? `${at}.${k}` : k) : `${at}[${JSON.stringify(k)}]`
  const walk = (x: Json, at: string): void => {
    if (Array.isArray(x)) x.forEach((y, i) => (out.add(join(at, i)), walk(y, join(at, i))))
    else if (x !== null && typeof x === 'object') {
      for (const f of fields) out.add(join(at, f))
      for (const [k, y] of Object.entries(x)) (out.add(join(at, k)), walk(y, join(at, k)))
    }
  }
  walk(v, '')
  return out
}

const runMain = async (dataDir: string, args: string[]) => {
  let stdout = ''
  let stderr = ''
  const status = await main(['--dir', dataDir, ...args], { out: (s) => void (stdout += s), err: (s) => void (stderr += s), errIsTTY: false })
  return { status, stdout, stderr }
}

t.test('random volume sections: accepted, or refused with exit 2 naming a field and nothing written', async (t) => {
  const root = t.testdir({ host: { keep: 'host data', sub: { deep: 'x' } }, data: {} })
  hostDir = path.join(root, 'host')
  const dataDir = path.join(root, 'data')
  ensureDataDir(dataDir) // the layout a first prepare makes is not what is checked
  createVolume(dataDir, 'pv-rwo')
  createVolume(dataDir, 'pv-rwx', { accessMode: 'ReadWriteMany' })
  fs.symlinkSync('/', path.join(hostDir, 'sub', 'root-link'))
  const baseline = snapshot(dataDir)
  const hostBefore = snapshot(hostDir)
  const accepted: string[] = []
  let refused = 0
  let n = 0
  await fc.assert(
    fc.asyncProperty(fc.oneof(manifestArb, validManifestArb), async (m) => {
      const file = path.join(root, `m${n++}.json`)
      fs.writeFileSync(file, JSON.stringify(m))
      const r = await runMain(dataDir, ['prepare', '--manifest', file])
      const bad: string[] = []
      if (r.status === 0) {
        if (!UUID_RE.test(r.stdout.trim())) bad.push(`stdout ${JSON.stringify(r.stdout)}`)
        accepted.push(file)
        // Removing the prepared pod leaves the data dir as it was.
        const rm = await runMain(dataDir, ['rm', r.stdout.trim()])
        if (rm.status !== 0) bad.push(`rm: ${rm.stderr}`)
      } else if (r.status === 2) {
        refused++
        const first = r.stderr.split('\n')[0]!
        const prefix = 'podctl: invalid manifest: '
        if (!first.startsWith(prefix)) bad.push(`stderr: ${r.stderr}`)
        else if (![...candidatePaths(m)].some((p) => first.startsWith(`${prefix}${p}: `))) bad.push(`names no field of the manifest: ${first}`)
        if (STACK_RE.test(r.stderr)) bad.push('a stack trace')
        if (r.stdout !== '') bad.push(`stdout ${r.stdout}`)
      } else {
        bad.push(`exit ${r.status}: ${r.stderr}`)
      }
      if (snapshot(dataDir) !== baseline) bad.push(`the data dir changed: ${snapshot(dataDir)}`)
      if (snapshot(hostDir) !== hostBefore) bad.push('the host path changed')
      if (bad.length > 0) throw new Error(`${JSON.stringify(m)}:\n  ${bad.join('\n  ')}`)
    }),
    { seed: 4004, numRuns: runsOf(400), endOnFailure: true },
  )
  t.ok(accepted.length >= scaled(20, 400), `accepted ${accepted.length}`)
  t.ok(refused >= scaled(100, 400), `refused ${refused}`)

  // Accepted manifests also run: through bin/podctl, then rm; the data dir and host path are as they were.
  let ran = 0
  for (const file of accepted.slice(0, 8)) {
    const r = podctl(dataDir, ['run', '--uuid-file-save', path.join(root, 'u'), '--manifest', file])
    t.equal(r.status, 0, `run accepted manifest ${path.basename(file)}`, { manifest: fs.readFileSync(file, 'utf8'), stderr: r.stderr })
    const rm = podctl(dataDir, ['rm', fs.readFileSync(path.join(root, 'u'), 'utf8').trim()])
    t.equal(rm.status, 0, rm.stderr)
    t.equal(snapshot(hostDir), hostBefore, 'the host path is untouched')
    t.same(fs.readdirSync(path.join(dataDir, 'pods', 'run')), [], 'the pod is gone')
    ran++
  }
  t.ok(ran > 0)
  for (const pv of ['pv-rwo', 'pv-rwx']) t.same(fs.readdirSync(path.join(dataDir, 'volumes', pv, 'claims')), [], `${pv}: no claim left`)
})
