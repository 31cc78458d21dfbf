// Property tests of `podctl prepare` with random and mutated manifests
// each manifest is either accepted (exit 0, one UUID, the
// manifest stored as given) or refused (exit 2, "podctl: invalid manifest:"
// naming a field path, and nothing written). Most runs call the CLI
// in-process through main(); a few go through the spawned bin/podctl.
import t from 'tap'
import fc from 'fast-check'
import fs from 'node:fs'
import path from 'node:path'
import { main } from '../../lib/cli/main.js'
import { listTree, UUID_RE, runsOf, scaled } from '../helpers/common.js'
import { podctl } from '../helpers/cli-util.js'

type Json = null | boolean | number | string | Json[] | { [k: string]: Json }
type Obj = { [k: string]: Json }
type Seg = string | number

const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v)

// ---- paths, formatted the way podctl names fields: apps[0].exec[1], labels["a b"]

const join = (at: string, key: Seg): string =>
  typeof key === 'number'
    ? `${at}[${key}]`
    : /^[A-Za-z_][A-Za-z0-9_]*$/.test(key)
      ? at
        ? `${at}.${key}`
        : key
      : `${at}[${JSON.stringify(key)}]`
const format = (segs: Seg[]): string => segs.reduce<string>((at, k) => join(at, k), '')

/** Every path in a JSON value (not the root), depth first. */
const allPaths = (v: Json, at: Seg[] = []): Seg[][] => {
  const out: Seg[][] = []
  if (Array.isArray(v)) v.forEach((x, i) => out.push([...at, i], ...allPaths(x, [...at, i])))
  else if (isObj(v)) for (const k of Object.keys(v)) out.push([...at, k], ...allPaths(v[k]!, [...at, k]))
  return out
}

const get = (v: Json, segs: Seg[]): Json | undefined => {
  let cur: Json | undefined = v
  for (const s of segs) {
    if (cur === null || typeof cur !== 'object') return undefined
    cur = (cur as Record<string, Json>)[s as string]
  }
  return cur
}

// Own-property writes: a key named "__proto__" must stay a plain key.
const put = (o: Json[] | Obj, k: Seg, value: Json): void => {
  Object.defineProperty(o, k, { value, enumerable: true, writable: true, configurable: true })
}

const setAt = (root: Json, segs: Seg[], value: Json): void => {
  const parent = get(root, segs.slice(0, -1))
  if (parent !== null && typeof parent === 'object') put(parent, segs[segs.length - 1]!, value)
}

const deleteAt = (root: Json, segs: Seg[]): void => {
  const parent = get(root, segs.slice(0, -1))
  const k = segs[segs.length - 1]!
  if (Array.isArray(parent)) parent.splice(k as number, 1)
  else if (isObj(parent)) delete parent[k]
}

const typeOf = (v: Json | undefined): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v)

/** Every field name the manifest format knows, at any level. */
const KNOWN_FIELDS = [
  'apiVersion', 'name', 'labels', 'annotations', 'mutable', 'apps', 'volumes',
  'type', 'exec', 'env', 'workingDirectory', 'mounts', 'volume', 'path', 'readOnly',
  'kind', 'source', 'files', 'claim', 'accessMode', 'content', 'mode',
]

/**
 * The field paths a refusal may name: every path present in the value, a
 * known field below any object (a missing required field), or the top level.
 */
const candidatePaths = (v: Json): Set<string> => {
  const out = new Set<string>(['(top level)'])
  const objects: Seg[][] = isObj(v) ? [[]] : []
  for (const p of allPaths(v)) {
    out.add(format(p))
    if (isObj(get(v, p))) objects.push(p)
  }
  for (const o of objects) for (const f of KNOWN_FIELDS) out.add(format([...o, f]))
  return out
}

// ---- valid manifests

const NAME = fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,20}$/)
const ENV_KEY = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,12}$/)
const KEY = fc.string({ minLength: 1, maxLength: 12 }).filter((k) => k !== '__proto__')
const TEXT = fc.string({ maxLength: 16 })
const EXEC = fc.constantFrom(['/bin/sh', '-c', 'exit 0'], ['true'], ['sleep', '1'], ['/bin/true', '--flag'], ['env'])

const appArb = (name: string, withMount: boolean): fc.Arbitrary<Obj> =>
  fc.record(
    {
      name: fc.constant(name),
      type: fc.constantFrom('init', 'regular'),
      exec: EXEC,
      env: fc.dictionary(ENV_KEY, TEXT, { maxKeys: 3 }),
      workingDirectory: fc.constantFrom('/', '/tmp', '/var/lib/app'),
      ...(withMount ? { mounts: fc.constant([{ volume: 'data', path: '/data', readOnly: false }]) } : {}),
    },
    { requiredKeys: withMount ? ['name', 'exec', 'mounts'] : ['name', 'exec'] },
  ) as unknown as fc.Arbitrary<Obj>

const validManifest: fc.Arbitrary<Obj> = fc
  .record({
    names: fc.uniqueArray(NAME, { minLength: 1, maxLength: 3 }),
    volume: fc.boolean(),
    top: fc.record(
      {
        name: NAME,
        labels: fc.dictionary(KEY, TEXT, { maxKeys: 3 }),
        annotations: fc.dictionary(KEY, TEXT, { maxKeys: 2 }),
        mutable: fc.boolean(),
      },
      { requiredKeys: [] },
    ),
  })
  .chain(({ names, volume, top }) =>
    fc.tuple(...names.map((n, i) => appArb(n, volume && i === 0))).map((apps) => {
      const m: Obj = { apiVersion: 'podctl/v1', ...(top as Obj), apps }
      if (volume) m.volumes = [{ name: 'data', kind: 'empty' }]
      return JSON.parse(JSON.stringify(m)) as Obj
    }),
  )

// ---- mutations

interface Case {
  what: string
  value: Json
  /** Must be refused. */
  mustFail?: boolean
  /** Must be refused naming this path. */
  mustName?: string
  /** Must be accepted. */
  mustPass?: boolean
}

const clone = (v: Obj): Obj => JSON.parse(JSON.stringify(v)) as Obj
const pick = <T>(xs: T[], n: number): T | undefined => (xs.length === 0 ? undefined : xs[n % xs.length])
const RANDOM_JSON = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>
const WRONG_TYPES: Json[] = [null, 0, 1.5, -7, true, false, 'x', '', [], ['x'], {}, { a: 'b' }]

/** Objects whose fields are a fixed set (not string maps): root, apps[i], mounts[j], volumes[k]. */
const structPaths = (m: Obj): Seg[][] => {
  const out: Seg[][] = [[]]
  const apps = Array.isArray(m.apps) ? m.apps : []
  apps.forEach((a, i) => {
    if (!isObj(a)) return
    out.push(['apps', i])
    if (Array.isArray(a.mounts)) a.mounts.forEach((x, j) => isObj(x) && out.push(['apps', i, 'mounts', j]))
  })
  if (Array.isArray(m.volumes)) m.volumes.forEach((v, k) => isObj(v) && out.push(['volumes', k]))
  return out
}

const appCount = (m: Obj): number => (Array.isArray(m.apps) ? m.apps.length : 0)

type Mutation = (m: Obj) => Case

// A regular file without execute bits, made by the first test (a file of the
// system may well be executable: /etc/hostname is, in some containers).
const NOT_EXECUTABLE = '<not executable>'
let notExecutable = '/nonexistent/not-executable'

const mutations: fc.Arbitrary<Mutation>[] = [
  fc.constant((m: Obj): Case => ({ what: 'unchanged', value: m, mustPass: true })),
  fc.nat().map((n) => (m: Obj): Case => {
    const v = clone(m)
    const p = pick(allPaths(v), n)
    if (!p) return { what: 'nothing to delete', value: v }
    const required = new Set(['apiVersion', 'apps', ...Array.from({ length: appCount(v) }, (_, i) => [`apps[${i}].name`, `apps[${i}].exec`]).flat()])
    const at = format(p)
    deleteAt(v, p)
    // Deleting apps[i] itself renumbers its siblings: only named fields are certain.
    const named = typeof p[p.length - 1] === 'string' && required.has(at)
    return { what: `delete ${at}`, value: v, ...(named ? { mustFail: true, mustName: at } : {}) }
  }),
  fc.tuple(fc.nat(), RANDOM_JSON).map(([n, x]) => (m: Obj): Case => {
    const v = clone(m)
    const p = pick(allPaths(v), n)
    if (!p) return { what: 'nothing to replace', value: v }
    setAt(v, p, x)
    return { what: `replace ${format(p)} with ${JSON.stringify(x)}`, value: v }
  }),
  fc.tuple(fc.nat(), KEY.filter((k) => !KNOWN_FIELDS.includes(k)), RANDOM_JSON).map(([n, k, x]) => (m: Obj): Case => {
    const v = clone(m)
    const p = pick(structPaths(v), n)!
    put(get(v, p) as Obj, k, x)
    const at = format([...p, k])
    return { what: `add unknown field ${at}`, value: v, mustFail: true, mustName: at }
  }),
  fc
    .tuple(fc.nat(), fc.oneof(fc.string({ maxLength: 70 }), fc.constantFrom('', '-a', 'A', 'a_b', 'a.b', 'a'.repeat(64), 'é', 'a b', '..', '/')))
    .filter(([, s]) => !/^[a-z0-9][a-z0-9-]{0,62}$/.test(s))
    .map(([n, bad]) => (m: Obj): Case => {
      const v = clone(m)
      const targets: Seg[][] = [['name'], ...Array.from({ length: appCount(v) }, (_, i): Seg[] => ['apps', i, 'name'])]
      const p = pick(targets, n)!
      setAt(v, p, bad)
      return { what: `break name ${format(p)} = ${JSON.stringify(bad)}`, value: v, mustFail: true, mustName: format(p) }
    }),
  fc.constant((m: Obj): Case => {
    const v = clone(m)
    v.apps = []
    delete v.volumes // mounts went with the apps; keep the one problem certain
    return { what: 'empty apps', value: v, ...(v.mutable === true ? { mustPass: true } : { mustFail: true, mustName: 'apps' }) }
  }),
  fc.tuple(fc.nat(), fc.nat()).map(([n, w]) => (m: Obj): Case => {
    const v = clone(m)
    const p = pick(allPaths(v), n)
    if (!p) return { what: 'nothing to retype', value: v }
    const t0 = typeOf(get(v, p))
    const x = pick(WRONG_TYPES.filter((c) => typeOf(c) !== t0), w)!
    setAt(v, p, x)
    const at = format(p)
    return { what: `bad type ${at} = ${JSON.stringify(x)}`, value: v, mustFail: true, mustName: at }
  }),
  fc.tuple(fc.nat(), fc.constantFrom('podctl-no-such-program', '/nonexistent/prog', NOT_EXECUTABLE, '/tmp')).map(([n, which]) => (m: Obj): Case => {
    const v = clone(m)
    const prog = which === NOT_EXECUTABLE ? notExecutable : which
    const i = n % appCount(v)
    setAt(v, ['apps', i, 'exec', 0], prog)
    return { what: `exec ${prog}`, value: v, mustFail: true, mustName: `apps[${i}].exec[0]` }
  }),
  RANDOM_JSON.map((x) => (): Case => ({ what: `random ${JSON.stringify(x)}`, value: x, ...(isObj(x) ? {} : { mustFail: true, mustName: '(top level)' }) })),
]

/** One mutation with an oracle, or a few in a row without one. */
const caseArb: fc.Arbitrary<Case> = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(validManifest, fc.oneof(...mutations)).map(([m, f]) => f(m)) },
  {
    weight: 1,
    arbitrary: fc.tuple(validManifest, fc.array(fc.oneof(...mutations), { minLength: 2, maxLength: 4 })).map(([m, fs]) => {
      let c: Case = { what: '', value: m }
      const whats: string[] = []
      for (const f of fs) {
        c = f(isObj(c.value) ? c.value : m)
        whats.push(c.what)
      }
      return { what: whats.join(' + '), value: c.value }
    }),
  },
)

// ---- running prepare

interface Outcome {
  status: number | null
  stdout: string
  stderr: string
}

type Runner = (dataDir: string, file: string) => Promise<Outcome>

const inProcess: Runner = async (dataDir, file) => {
  let stdout = ''
  let stderr = ''
  const status = await main(['--dir', dataDir, 'prepare', '--manifest', file], {
    out: (s) => void (stdout += s),
    err: (s) => void (stderr += s),
    errIsTTY: false,
  })
  return { status, stdout, stderr }
}

const spawned: Runner = async (dataDir, file) => podctl(dataDir, ['prepare', '--manifest', file])

/** Checks one case; returns what is wrong (empty when all is well). */
const check = async (run: Runner, root: string, n: number, c: Case): Promise<string[]> => {
  const bad: string[] = []
  const file = path.join(root, `m${n}.json`)
  const text = JSON.stringify(c.value)
  fs.writeFileSync(file, text)
  const dataDir = path.join(root, `d${n}`)
  const r = await run(dataDir, file)
  if (r.status === 0) {
    if (c.mustFail) bad.push(`accepted, but must be refused naming ${c.mustName}`)
    if (!/^[0-9a-f-]{36}\n$/.test(r.stdout) || !UUID_RE.test(r.stdout.trim())) bad.push(`stdout ${JSON.stringify(r.stdout)} is not one UUID`)
    if (r.stderr !== '') bad.push(`stderr ${JSON.stringify(r.stderr)}`)
    const uuid = r.stdout.trim()
    const prepared = fs.existsSync(path.join(dataDir, 'pods', 'prepared')) ? fs.readdirSync(path.join(dataDir, 'pods', 'prepared')) : []
    if (JSON.stringify(prepared) !== JSON.stringify([uuid])) bad.push(`prepared/ holds ${JSON.stringify(prepared)}`)
    else {
      const storedText = fs.readFileSync(path.join(dataDir, 'pods', 'prepared', uuid, 'manifest'), 'utf8')
      if (JSON.stringify(JSON.parse(storedText)) !== text) bad.push(`stored manifest ${storedText} differs from ${text}`)
    }
  } else if (r.status === 2) {
    if (c.mustPass) bad.push(`refused, but must be accepted: ${r.stderr}`)
    const first = r.stderr.split('\n')[0]!
    const prefix = 'podctl: invalid manifest: '
    if (!first.startsWith(prefix)) bad.push(`stderr does not start with "${prefix}": ${JSON.stringify(r.stderr)}`)
    else {
      const named = [...candidatePaths(c.value)].some((p) => first.startsWith(`${prefix}${p}: `))
      if (!named) bad.push(`stderr names no field path of the manifest: ${first}`)
      if (c.mustName !== undefined) {
        const rest = first.slice(prefix.length)
        if (!rest.startsWith(`${c.mustName}: `) && !rest.includes(`; ${c.mustName}: `)) bad.push(`stderr does not name ${c.mustName}: ${first}`)
      }
    }
    if (r.stdout !== '') bad.push(`stdout ${JSON.stringify(r.stdout)} on a refusal`)
    if (/^\s+at /m.test(r.stderr)) bad.push('a stack trace')
    if (fs.existsSync(dataDir)) bad.push(`a refused prepare left ${JSON.stringify(listTree(dataDir))}`)
  } else {
    bad.push(`exit ${r.status}: ${r.stderr}`)
  }
  fs.rmSync(file)
  return bad
}

const property = (run: Runner, root: string) => {
  let n = 0
  return fc.asyncProperty(caseArb, async (c) => {
    const bad = await check(run, root, n++, c)
    if (bad.length > 0) throw new Error(`${c.what}:\n  ${bad.join('\n  ')}`)
  })
}

t.before(() => {
  const dir = t.testdir({ 'not-executable': 'data\n' })
  notExecutable = path.join(dir, 'not-executable')
  fs.chmodSync(notExecutable, 0o644)
})

t.test('random and mutated manifests, in-process', async (t) => {
  const root = t.testdir({})
  let accepted = 0
  let refused = 0
  const counting: Runner = async (d, f) => {
    const r = await inProcess(d, f)
    if (r.status === 0) accepted++
    else refused++
    return r
  }
  await fc.assert(property(counting, root), { seed: 20261122, numRuns: runsOf(300), endOnFailure: true })
  t.pass(`300 manifests: ${accepted} accepted, ${refused} refused`)
  // The generator must exercise both outcomes, or the property says little.
  t.ok(accepted >= scaled(30, 300), `at least ${scaled(30, 300)} accepted (${accepted})`)
  t.ok(refused >= scaled(100, 300), `at least ${scaled(100, 300)} refused (${refused})`)
  // Only the accepted runs made data dirs, each with one pod.
  const dirs = fs.readdirSync(root).filter((d) => d.startsWith('d'))
  t.equal(dirs.length, accepted, 'one data dir per accepted manifest, none for refused ones')
})

t.test('random and mutated manifests, through the spawned bin/podctl', async (t) => {
  const root = t.testdir({})
  await fc.assert(property(spawned, root), { seed: 4242, numRuns: runsOf(20), endOnFailure: true })
  t.pass('20 manifests through bin/podctl')
})

t.test('the oracle itself: known cases give known outcomes', async (t) => {
  // Guards the property's helpers: a wrong path formatter would make it vacuous.
  const root = t.testdir({})
  const valid = { apiVersion: 'podctl/v1', labels: { 'a b': 'x' }, apps: [{ name: 'a', exec: ['true'] }] }
  t.strictSame(await check(inProcess, root, 1, { what: 'valid', value: valid, mustPass: true }), [])
  const badLabel = { ...valid, labels: { 'a b': 1 } }
  t.strictSame(await check(inProcess, root, 2, { what: 'label', value: badLabel, mustFail: true, mustName: 'labels["a b"]' }), [])
  const wrong = await check(inProcess, root, 3, { what: 'label', value: badLabel, mustFail: true, mustName: 'labels.nope' })
  t.match(wrong, [/does not name labels\.nope/])
  const accepted = await check(inProcess, root, 4, { what: 'valid', value: valid, mustFail: true })
  t.match(accepted, [/accepted, but must be refused/])
})
