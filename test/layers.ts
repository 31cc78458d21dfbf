// The floors of lib/ (Documentation/devel/layers.md): each folder imports
// only from the folders below it, never from one above, not even a type;
// and no module imports one that imports it back, however long the way
// round. Fails on an upward import, naming the file and what it imports,
// and on an import cycle, naming the modules on it.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const LIB = fileURLToPath(new URL('../lib/', import.meta.url))

/** Which rooms each room may import from (its own always). Bottom first. */
export const MAY_IMPORT: Record<string, readonly string[]> = {
  base: [], // lib/errors.ts, lib/duration.ts, lib/poll.ts
  fs: ['base'],
  proc: ['base'],
  lock: ['base', 'fs', 'proc'],
  cluster: ['base', 'fs', 'proc', 'lock'], // lib/cluster/: the etcd client, session leases and locks, key names
  pod: ['base', 'fs', 'proc', 'lock'],
  election: ['base', 'fs', 'proc', 'lock', 'cluster'], // lib/election/: one LeaderElection, a data dir's lease file or an etcd key
  storage: ['base', 'fs', 'proc', 'lock', 'pod', 'cluster', 'election'], // lib/storage/: claims, classes, volumes, the binder over a ClaimStore
  volume: ['base', 'fs', 'proc', 'lock', 'pod', 'storage'],
  image: ['base', 'fs', 'proc', 'lock', 'pod'], // lib/image/: the image store, imports, renders, app roots
  network: ['base', 'fs', 'proc', 'lock', 'pod', 'storage', 'volume', 'image'], // lib/network/: CNI networks, a pod's attachments, its /etc files
  runtime: ['base', 'fs', 'proc', 'lock', 'pod', 'volume', 'image', 'cluster', 'network'], // lib/runtime/: host processes or an OCI runtime
  run: ['base', 'fs', 'proc', 'lock', 'pod', 'storage', 'volume', 'image', 'runtime', 'cluster', 'network'],
  controller: ['base', 'fs', 'proc', 'lock', 'pod', 'election', 'storage', 'volume', 'image', 'runtime', 'cluster', 'network'],
  cli: ['base', 'fs', 'proc', 'lock', 'pod', 'election', 'storage', 'volume', 'image', 'runtime', 'run', 'controller', 'cluster', 'network'],
  library: ['base', 'fs', 'proc', 'lock', 'pod', 'election', 'storage', 'volume', 'image', 'runtime', 'run', 'controller', 'cluster', 'network'], // lib/index.ts
  build: [], // lib/build/: the bundler and its shims
}

/** The room of a file under lib/. */
const roomOf = (rel: string): string => {
  if (rel === 'index.ts') return 'library'
  if (!rel.includes('/')) return 'base'
  return rel.split('/')[0]!
}

const sources = (dir: string): string[] =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []))

/** Every relative module a file names (comments aside): static imports, re-exports, type imports and import(). */
const importsOf = (text: string): string[] =>
  [...text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '').matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^import\s+)'(\.{1,2}\/[^']+)'/gm)].map((m) => m[1]!)

/** lib/'s import graph: each module (a path below lib/) and the modules it imports. */
const importGraph = (): Map<string, string[]> => {
  const graph = new Map<string, string[]>()
  for (const file of sources(LIB)) {
    const targets = importsOf(fs.readFileSync(file, 'utf8')).map((spec) => path.relative(LIB, path.resolve(path.dirname(file), spec)).replace(/\.js$/, '.ts'))
    graph.set(path.relative(LIB, file), targets)
  }
  return graph
}

/**
 * Every import cycle of `graph`, one per set of modules that reach each
 * other (Tarjan's strongly connected components), each named by one way
 * round it: `a.ts -> b.ts -> a.ts`.
 */
export const importCycles = (graph: ReadonlyMap<string, readonly string[]>): string[] => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const components: string[][] = []
  const visit = (v: string): void => {
    index.set(v, index.size)
    low.set(v, index.get(v)!)
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!))
      }
    }
    if (low.get(v) !== index.get(v)) return
    const component: string[] = []
    let w: string
    do {
      w = stack.pop()!
      onStack.delete(w)
      component.push(w)
    } while (w !== v)
    if (component.length > 1 || graph.get(v)!.includes(v)) components.push(component)
  }
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v)
  return components.map((component) => {
    // The shortest way from the component's first module back to itself, within the component.
    const members = new Set(component)
    const start = [...component].sort()[0]!
    const from = new Map<string, string>()
    const queue = [start]
    while (queue.length > 0) {
      const v = queue.shift()!
      for (const w of graph.get(v) ?? []) {
        if (w === start) {
          const way = [v]
          while (way[0] !== start) way.unshift(from.get(way[0]!)!)
          return [...way, start].join(' -> ')
        }
        if (members.has(w) && !from.has(w)) {
          from.set(w, v)
          queue.push(w)
        }
      }
    }
    throw new Error(`no way round ${component.join(', ')}`)
  })
}

t.test('every room of lib/ is in the table', async (t) => {
  const rooms = new Set(sources(LIB).map((f) => roomOf(path.relative(LIB, f))))
  for (const r of rooms) t.ok(r in MAY_IMPORT, `${r} has a floor`)
})

// Small modules with one job: the runtime and image rooms were cut to this when they were rebuilt (issue 29).
t.test('no file of lib/runtime or lib/image is over 300 lines', async (t) => {
  const files = sources(LIB).filter((f) => ['runtime', 'image'].includes(roomOf(path.relative(LIB, f))))
  t.ok(files.length > 20, 'the rooms are read')
  const long = files.map((f) => [path.relative(LIB, f), fs.readFileSync(f, 'utf8').split('\n').length - 1] as const).filter(([, n]) => n > 300)
  t.same(long, [], 'each is 300 lines or less')
})

t.test('no import points up or sideways', async (t) => {
  const bad: string[] = []
  let checked = 0
  for (const file of sources(LIB)) {
    const rel = path.relative(LIB, file)
    const room = roomOf(rel)
    for (const spec of importsOf(fs.readFileSync(file, 'utf8'))) {
      const target = path.relative(LIB, path.resolve(path.dirname(file), spec)).replace(/\.js$/, '.ts')
      if (target.startsWith('..')) {
        bad.push(`${rel} imports ${spec}, outside lib/`)
        continue
      }
      const to = roomOf(target)
      checked++
      if (to !== room && !MAY_IMPORT[room]!.includes(to)) bad.push(`lib/${rel} (${room}) imports lib/${target} (${to})`)
    }
  }
  t.ok(checked > 200, `${checked} imports checked`)
  t.strictSame(bad, [], 'every import points down')
})

t.test('the check sees imports of every form', async (t) => {
  const text = [
    "import fs from 'node:fs'",
    "import { a } from '../pod/pod.js'",
    "import type { B } from '../volume/types.js'",
    "export { c } from './c.js'",
    "import './side-effect.js'",
    "const m = await import('../run/x.js')",
    "/* import('../cli/no.js') in a comment */",
    "// import { x } from '../cli/no.js'",
  ].join('\n')
  t.strictSame(importsOf(text), ['../pod/pod.js', '../volume/types.js', './c.js', './side-effect.js', '../run/x.js'])
})

t.test('no module imports one that imports it back', async (t) => {
  t.strictSame(importCycles(importGraph()), [], 'no import cycle')
})

t.test('the cycle check names a cycle of any length, and only cycles', async (t) => {
  const graph = new Map([
    ['a.ts', ['b.ts']],
    ['b.ts', ['c.ts', 'x.ts']],
    ['c.ts', ['a.ts']],
    ['d.ts', ['d.ts']],
    ['e.ts', ['a.ts', 'f.ts']],
    ['f.ts', []],
    ['x.ts', ['f.ts']],
  ])
  t.strictSame(importCycles(graph).sort(), ['a.ts -> b.ts -> c.ts -> a.ts', 'd.ts -> d.ts'])
  t.strictSame(importCycles(new Map([['a.ts', ['b.ts']], ['b.ts', []]])), [], 'a chain is no cycle')
})
