// Property test of `volume class create` and `volume claim create`:
// random names, provisioners, parameters, reclaim policies, sizes and
// access modes, good and bad. Each command line is accepted (exit 0, the
// object readable afterwards) or refused with exit 2 (bad input) or 4 (the
// name exists), one message and a hint, no stack trace, and a refusal
// writes nothing: the data dir is byte for byte what it was.
import t from 'tap'
import fc from 'fast-check'
import fs from 'node:fs'
import path from 'node:path'
import { main } from '../../lib/cli/main.js'
import { ensureDataDir } from '../../lib/pod/layout.js'
import { snapshot, STACK_RE, runsOf, scaled } from '../helpers/common.js'

const runMain = async (dataDir: string, args: string[]) => {
  let stdout = ''
  let stderr = ''
  const status = await main(['--dir', dataDir, ...args], { out: (s) => void (stdout += s), err: (s) => void (stderr += s), errIsTTY: false })
  return { status, stdout, stderr }
}

const junk = fc.string({ maxLength: 12 })
const NAME = fc.oneof(
  { weight: 4, arbitrary: fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,8}$/) },
  { weight: 1, arbitrary: fc.constantFrom('', '-x', 'Bad', 'a_b', 'a'.repeat(64), 'a/b', '..', 'a\nb', 'é', 'pvc-x') },
  { weight: 1, arbitrary: junk },
)
const PROVISIONER = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('local', 'exec:/bin/true') },
  { weight: 1, arbitrary: fc.constantFrom('nfs', '', 'exec:', 'exec:rel/prog', 'exec:/no/such/prog', 'local ', 'LOCAL', 'exec:/bin/true\n') },
  { weight: 1, arbitrary: junk },
)
const SIZE = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('1M', '1Gi', '512', '10K', '2G') },
  { weight: 2, arbitrary: fc.constantFrom('', '-1', '0', '1.5Gi', 'lots', '1 M', '99999999999999999999', 'Infinity', '1e3', '0x10', '+5M', ' 1M') },
  { weight: 1, arbitrary: junk },
)
const PARAM = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom('sizeLimit=1G', 'timeout=30s', 'base=/srv') },
  { weight: 2, arbitrary: fc.constantFrom('sizeLimit=lots', 'timeout=-1s', 'novalue', '=x', 'color=blue', 'k=', 'sizeLimit=', 'timeout=forever') },
  { weight: 1, arbitrary: fc.tuple(junk, junk).map(([k, v]) => `${k}=${v}`) },
)
const RECLAIM = fc.oneof(fc.constantFrom('delete', 'retain', 'recycle'), fc.constantFrom('', 'Delete', 'keep'), junk)
const MODE = fc.oneof(fc.constantFrom('ReadWriteOnce', 'ReadWriteMany'), fc.constantFrom('', 'RWO', 'ReadOnlyMany', 'readwriteonce'), junk)
const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined, freq: 2 })

const classLine = fc
  .tuple(NAME, PROVISIONER, fc.array(PARAM, { maxLength: 3 }), maybe(RECLAIM), fc.boolean())
  .map(([name, prov, params, reclaim, dflt]) => [
    'volume',
    'class',
    'create',
    name,
    '--provisioner',
    prov,
    ...params.flatMap((p) => ['--param', p]),
    ...(reclaim !== undefined ? ['--reclaim', reclaim] : []),
    ...(dflt ? ['--default'] : []),
  ])
const claimLine = fc
  .tuple(NAME, maybe(fc.oneof(fc.constantFrom('std', 'ext'), NAME)), maybe(SIZE), maybe(MODE))
  .map(([name, cls, size, mode]) => [
    'volume',
    'claim',
    'create',
    name,
    ...(cls !== undefined ? ['--class', cls] : []),
    ...(size !== undefined ? ['--size', size] : []),
    ...(mode !== undefined ? ['--access-mode', mode] : []),
  ])

t.test('random class and claim command lines: accepted, or refused (2 or 4) with a message and nothing written', async (t) => {
  const dataDir = path.join(t.testdir({}), 'data')
  ensureDataDir(dataDir)
  // A class to claim from; the controller's lock directory exists from here on.
  t.equal((await runMain(dataDir, ['volume', 'class', 'create', 'std', '--provisioner', 'local'])).status, 0)
  const outcomes: Record<string, number> = {}
  await fc.assert(
    fc.asyncProperty(fc.oneof(classLine, claimLine), async (args) => {
      const before = snapshot(dataDir)
      const r = await runMain(dataDir, args)
      outcomes[`${args[1]} ${r.status}`] = (outcomes[`${args[1]} ${r.status}`] ?? 0) + 1
      const bad: string[] = []
      if (STACK_RE.test(r.stderr)) bad.push('a stack trace')
      if (r.stderr.includes('undefined')) bad.push('"undefined" in the message')
      if (r.status === 0) {
        if (r.stdout !== `${args[3]}\n`) bad.push(`stdout ${JSON.stringify(r.stdout)}`)
        const inspect = await runMain(dataDir, ['volume', args[1]!, 'inspect', args[3]!, '--format', 'json'])
        if (inspect.status !== 0 || JSON.parse(inspect.stdout).name !== args[3]) bad.push(`not readable after create: ${inspect.stderr}`)
      } else if (r.status === 2 || r.status === 4) {
        const lines = r.stderr.trimEnd().split('\n')
        if (!lines[0]!.startsWith('podctl')) bad.push(`stderr ${JSON.stringify(r.stderr)}`)
        if (r.stdout !== '') bad.push(`stdout ${JSON.stringify(r.stdout)}`)
        if (snapshot(dataDir) !== before) bad.push('the data dir changed')
      } else bad.push(`exit ${r.status}: ${r.stderr}`)
      if (bad.length > 0) throw new Error(`podctl ${JSON.stringify(args)}:\n  ${bad.join('\n  ')}`)
    }),
    { seed: 1010, numRuns: runsOf(300), endOnFailure: true },
  )
  t.comment(JSON.stringify(outcomes))
  t.ok((outcomes['class 0'] ?? 0) + (outcomes['claim 0'] ?? 0) >= scaled(20, 300), 'many were accepted')
  t.ok((outcomes['class 2'] ?? 0) >= scaled(30, 300) && (outcomes['claim 2'] ?? 0) >= scaled(30, 300), 'many of each were refused')
  t.ok(fs.existsSync(path.join(dataDir, 'claims')), 'claims were made')
})
