// The volume rules of the manifest (lib/volume/manifest.ts): every kind's
// fields, projected file paths, and the whole manifest validated with the
// pod's rules and these together.
import t from 'tap'
import fc from 'fast-check'
import { PodctlError } from '../../lib/errors.js'
import { podManifestProblems, projectedPathProblem, validatePodManifest } from '../../lib/volume/manifest.js'
import { app, man, manifestChecks, V, vol, withVolume } from '../helpers/manifest-checks.js'
import { runsOf } from '../helpers/common.js'

const { problems, ok } = manifestChecks(podManifestProblems, validatePodManifest)
const manifestProblems = podManifestProblems
const validateManifest = validatePodManifest

t.test('the CONTRACT §3 example, with a volume of every kind, is valid', async (t) => {
  const m = {
    apiVersion: V,
    name: 'web',
    apps: [{ name: 'web', exec: ['sleep', '60'], mounts: [{ volume: 'data', path: '/var/lib/data', readOnly: false }] }],
    volumes: [
      { name: 'data', kind: 'empty' },
      { name: 'etc', kind: 'host', source: '/etc', readOnly: true },
      { name: 'cfg', kind: 'files', files: { 'a.txt': { content: 'x', mode: 0o644 }, 'dir/b.txt': { content: '' }, '.hidden': { content: 'y' } } },
      { name: 'db', kind: 'persistent', claim: 'db-1', readOnly: false, accessMode: 'ReadWriteMany' },
    ],
  }
  ok(t, m)
})

t.test('unknown fields of volumes are errors, by kind', async (t) => {
  problems(t, man({ volumes: [vol({ kind: 'empty', source: '/x' })] }), [['volumes[0].source', 'unknown field (allowed: name, kind)']], 'empty volume')
  problems(t, man({ volumes: [vol({ kind: 'host', source: '/x', claim: 'c' })] }), [['volumes[0].claim', 'unknown field (allowed: name, kind, source, readOnly)']], 'host volume')
  problems(t, man({ volumes: [vol({ kind: 'files', files: {}, source: '/x' })] }), [['volumes[0].source', 'unknown field (allowed: name, kind, files)']], 'files volume')
  problems(
    t,
    man({ volumes: [vol({ kind: 'persistent', claim: 'c', files: {} })] }),
    [['volumes[0].files', 'unknown field (allowed: name, kind, claim, readOnly, accessMode, class, size)']],
    'persistent volume',
  )
  problems(
    t,
    man({ volumes: [vol({ kind: 'files', files: { 'a.txt': { content: 'x', owner: 'root' } } })] }),
    [['volumes[0].files["a.txt"].owner', 'unknown field (allowed: content, mode)']],
    'projected file',
  )
})

t.test('a missing volume field is called missing', async (t) => {
  for (const [field, m] of [['volumes[0].source', man({ volumes: [vol({ kind: 'host' })] })], ['volumes[0].kind', man({ volumes: [vol({})] })]] as const) {
    const p = manifestProblems(m).find((x) => x.path === field)
    t.ok(p, `${field} is reported`)
    t.notMatch(p?.problem ?? '', /undefined undefined/, `${field}: the problem does not read "not undefined undefined"`)
  }
})

t.test('problems of the pod and of its volumes are reported together, in one message', async (t) => {
  const m = {
    apiVersion: V,
    apps: [{ name: 'job', exec: ['true'], mounts: [{ volume: 'scratch', path: '/' }] }],
    volumes: [{ name: 'scratch', kind: 'empty', readOnly: true }, 5, { name: 'x', kind: 'nope' }],
  }
  problems(t, m, [
    ['volumes[1]', 'must be an object, not number 5'],
    ['apps[0].mounts[0].path', 'cannot be "/", the app root itself'],
    ['volumes[0].readOnly', 'unknown field (allowed: name, kind)'],
    ['volumes[2].kind', 'must be one of "empty", "host", "files", "persistent", not string "nope"'],
  ])
  // The mount plan needs a valid manifest: with apps that are not an array it is not judged (and nothing throws).
  problems(t, man({ apps: 'x', volumes: [vol({ kind: 'tmpfs' })] }), [
    ['apps', 'must be an array, not string "x"'],
    ['volumes[0].kind', 'must be one of "empty", "host", "files", "persistent", not string "tmpfs"'],
  ])
})

t.test('volumes', async (t) => {
  problems(t, man({ volumes: 'x' }), [['volumes', 'must be an array, not string "x"']])
  problems(t, man({ volumes: [1] }), [['volumes[0]', 'must be an object, not number 1']])
  problems(t, man({ volumes: [vol({ name: 'A', kind: 'empty' })] }), [['volumes[0].name', /^"A" must be 1 to 63/]])
  problems(t, man({ volumes: [vol({ kind: 'empty' }), vol({ kind: 'empty' })] }), [['volumes[1].name', '"data" is the name of another volume']])
  problems(t, man({ volumes: [vol({ kind: 'tmpfs' })] }), [['volumes[0].kind', 'must be one of "empty", "host", "files", "persistent", not string "tmpfs"']])
  problems(t, man({ volumes: [vol({})] }), [['volumes[0].kind', /^must be one of "empty", "host", "files", "persistent"/]], 'missing kind')
  ok(t, withVolume(vol({ kind: 'empty' })))
})

t.test('host volumes', async (t) => {
  problems(t, withVolume(vol({ kind: 'host', source: 'rel' })), [['volumes[0].source', '"rel" must be an absolute path']])
  problems(t, withVolume(vol({ kind: 'host', source: '/a/../etc' })), [['volumes[0].source', '"/a/../etc" must not contain ".."']])
  problems(t, withVolume(vol({ kind: 'host', source: '' })), [['volumes[0].source', 'must not be empty']])
  problems(t, withVolume(vol({ kind: 'host' })), [['volumes[0].source', /^must be a string/]], 'missing source')
  problems(t, withVolume(vol({ kind: 'host', source: '/x', readOnly: 1 })), [['volumes[0].readOnly', 'must be true or false, not number 1']])
  ok(t, withVolume(vol({ kind: 'host', source: '/srv/data', readOnly: true })))
})

t.test('files volumes', async (t) => {
  const files = (f: unknown): Record<string, unknown> => withVolume(vol({ kind: 'files', files: f }))
  problems(t, files([]), [['volumes[0].files', 'must be an object mapping relative paths to {"content", "mode"}, not an array']])
  problems(t, withVolume(vol({ kind: 'files' })), [['volumes[0].files', /^must be an object mapping relative paths/]], 'missing files')
  const bad: Array<[string, string]> = [
    ['../escape', 'must not contain ".."'],
    ['a/../../b', 'must not contain ".."'],
    ['a/..', 'must not contain ".."'],
    ['/etc/passwd', 'must be a relative path'],
    ['..data', 'must not have a part starting with ".."'],
    ['a/..data/b', 'must not have a part starting with ".."'],
    ['..2026_01_01', 'must not have a part starting with ".."'],
    ['a//b', 'must be a normalized path (no "//", "." or trailing "/")'],
    ['./a', 'must be a normalized path (no "//", "." or trailing "/")'],
    ['a/./b', 'must be a normalized path (no "//", "." or trailing "/")'],
    ['a/', 'must be a normalized path (no "//", "." or trailing "/")'],
    ['.', 'must be a normalized path (no "//", "." or trailing "/")'],
    ['', 'must not be empty'],
    ['a\0b', 'must not contain a NUL character'],
    ['a-'.repeat(2049), 'is longer than 4096 characters'],
  ]
  for (const [p, why] of bad) {
    problems(t, files({ [p]: { content: 'x' } }), [[`volumes[0].files[${JSON.stringify(p)}]`, why]], JSON.stringify(p.slice(0, 20)))
    t.equal(projectedPathProblem(p), why, `projectedPathProblem(${JSON.stringify(p.slice(0, 20))})`)
  }
  for (const good of ['a', 'a.txt', 'dir/b', '.hidden', 'a..b', 'x/.y', '...']) {
    t.equal(projectedPathProblem(good), good === '...' ? 'must not have a part starting with ".."' : undefined, JSON.stringify(good))
  }
  problems(
    t,
    files({ a: { content: 'x' }, 'a/b': { content: 'y' } }),
    [['volumes[0].files["a/b"]', 'conflicts with "a": a path cannot be both a file and a directory']],
    'a file that is also a directory',
  )
  problems(t, files({ a: 'x' }), [['volumes[0].files.a', 'must be an object {"content": ..., "mode": ...}, not string "x"']])
  problems(t, files({ a: {} }), [['volumes[0].files.a.content', /^must be a string/]], 'missing content')
  problems(t, files({ a: { content: 1 } }), [['volumes[0].files.a.content', 'must be a string, not number 1']])
  for (const mode of [512, -1, 1.5, '0644', null]) {
    problems(t, files({ a: { content: '', mode } }), [['volumes[0].files.a.mode', /^must be an integer from 0 to 511 \(0777\), not /]], `mode ${JSON.stringify(mode)}`)
  }
  ok(t, files({ a: { content: '', mode: 0 } }), 'mode 0')
  ok(t, files({ a: { content: '', mode: 511 } }), 'mode 0777')
})

t.test('persistent volumes', async (t) => {
  problems(t, withVolume(vol({ kind: 'persistent', claim: 'Bad' })), [['volumes[0].claim', /^"Bad" must be 1 to 63/]])
  problems(t, withVolume(vol({ kind: 'persistent' })), [['volumes[0].claim', /^must be a string/]], 'missing claim')
  problems(t, withVolume(vol({ kind: 'persistent', claim: 'c', accessMode: 'ReadOnlyMany' })), [['volumes[0].accessMode', 'must be "ReadWriteOnce" (RWO) or "ReadWriteMany" (RWX), not string "ReadOnlyMany"']])
  for (const accessMode of ['RWO', 'RWX', 'ReadWriteOnce', 'ReadWriteMany']) problems(t, withVolume(vol({ kind: 'persistent', claim: 'c', accessMode })), [], `${accessMode}: the names --access-mode takes`)
  problems(t, withVolume(vol({ kind: 'persistent', claim: 'c', accessMode: 'toString' })), [['volumes[0].accessMode', 'must be "ReadWriteOnce" (RWO) or "ReadWriteMany" (RWX), not string "toString"']])
  problems(t, withVolume(vol({ kind: 'persistent', claim: 'c', readOnly: 'yes' })), [['volumes[0].readOnly', 'must be true or false, not string "yes"']])
  ok(t, withVolume(vol({ kind: 'persistent', claim: 'c', accessMode: 'ReadWriteOnce' })))
})

/** Asserts the property: returns the value, or throws EUSAGE "invalid manifest: ...". */
const neverCrashes = (v: unknown, opts?: { allowEphemeral?: boolean }): boolean => {
  try {
    const r = validateManifest(v, opts)
    return r === v && manifestProblems(v, opts).length === 0
  } catch (er) {
    return er instanceof PodctlError && er.code === 'EUSAGE' && er.message.startsWith('invalid manifest:') && manifestProblems(v, opts).length > 0
  }
}

t.test('property: any JSON value is accepted or refused with EUSAGE, never another exception', async (t) => {
  t.doesNotThrow(() => fc.assert(fc.property(fc.jsonValue(), (v) => neverCrashes(v)), { numRuns: runsOf(2000) }))
  t.doesNotThrow(() => fc.assert(fc.property(fc.jsonValue(), (v) => neverCrashes(JSON.parse(JSON.stringify(v)), { allowEphemeral: true })), { numRuns: runsOf(500) }))
})

t.test('property: mutated valid manifests are accepted or refused with EUSAGE', async (t) => {
  // Random JSON is almost never close to a manifest; start from valid ones
  // and replace or add one field at some depth with random JSON.
  const name = fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,8}$/)
  const appArb = fc.record(
    {
      name,
      type: fc.constantFrom('init', 'regular', 'ephemeral'),
      exec: fc.array(fc.string(), { minLength: 1, maxLength: 3 }),
      env: fc.dictionary(fc.string(), fc.string(), { maxKeys: 3 }),
      workingDirectory: fc.constantFrom('/', '/srv', 'rel', '/a/../b'),
      mounts: fc.array(fc.record({ volume: name, path: fc.constantFrom('/d', '/d/', '/', 'x', '/a/../b'), readOnly: fc.boolean() }), { maxLength: 2 }),
    },
    { requiredKeys: ['name', 'exec'] },
  )
  const volArb = fc.oneof(
    fc.record({ name, kind: fc.constant('empty') }),
    fc.record({ name, kind: fc.constant('host'), source: fc.constantFrom('/srv', 'rel', '/a/../b', ''), readOnly: fc.boolean() }),
    fc.record({ name, kind: fc.constant('files'), files: fc.dictionary(fc.constantFrom('a', 'a/b', '../x', '/x', '..data', 'a//b', ''), fc.record({ content: fc.string(), mode: fc.integer({ min: -1, max: 600 }) }), { maxKeys: 3 }) }),
    fc.record({ name, kind: fc.constant('persistent'), claim: name, accessMode: fc.constantFrom('ReadWriteOnce', 'ReadWriteMany', 'x') }),
  )
  const manifestArb = fc.record(
    {
      apiVersion: fc.constant(V),
      name,
      labels: fc.dictionary(fc.string(), fc.string(), { maxKeys: 3 }),
      annotations: fc.dictionary(fc.string(), fc.string(), { maxKeys: 3 }),
      mutable: fc.boolean(),
      apps: fc.array(appArb, { maxLength: 3 }),
      volumes: fc.array(volArb, { maxLength: 3 }),
    },
    { requiredKeys: ['apiVersion', 'apps'] },
  )
  // A path into the value and a JSON value to put there.
  const mutate = (m: unknown, steps: number[], key: string, value: unknown): unknown => {
    const copy = JSON.parse(JSON.stringify(m)) as unknown
    let cur: unknown = copy
    for (const s of steps) {
      if (cur === null || typeof cur !== 'object') break
      const keys = Object.keys(cur)
      if (keys.length === 0) break
      const next = (cur as Record<string, unknown>)[keys[s % keys.length]!]
      if (next === null || typeof next !== 'object') {
        ;(cur as Record<string, unknown>)[keys[s % keys.length]!] = value
        return copy
      }
      cur = next
    }
    if (cur !== null && typeof cur === 'object') (cur as Record<string, unknown>)[Array.isArray(cur) ? 0 : key] = value
    return copy
  }
  let accepted = 0
  let refused = 0
  t.doesNotThrow(() =>
    fc.assert(
      fc.property(manifestArb, fc.array(fc.nat(), { maxLength: 5 }), fc.string(), fc.jsonValue({ maxDepth: 2 }), fc.boolean(), (m, steps, key, value, doMutate) => {
        const v = doMutate ? mutate(m, steps, key, value) : m
        const good = neverCrashes(v, { allowEphemeral: true })
        if (manifestProblems(v, { allowEphemeral: true }).length === 0) accepted++
        else refused++
        return good
      }),
      { numRuns: runsOf(1500) },
    ),
  )
  t.ok(accepted > 0, `some generated manifests are valid (${accepted})`)
  t.ok(refused > 0, `some are refused (${refused})`)
})
