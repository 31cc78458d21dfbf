// The floors of lib/ (Documentation/devel/layers.md): each folder imports
// only from the folders below it, never from one above, not even a type.
// Fails on the first upward import, naming the file and what it imports.
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
  runtime: ['base', 'fs', 'proc', 'lock', 'pod', 'volume', 'image', 'cluster'], // lib/runtime/: host processes or an OCI runtime
  run: ['base', 'fs', 'proc', 'lock', 'pod', 'storage', 'volume', 'image', 'runtime', 'cluster'],
  controller: ['base', 'fs', 'proc', 'lock', 'pod', 'election', 'storage', 'volume', 'image', 'runtime', 'cluster'],
  cli: ['base', 'fs', 'proc', 'lock', 'pod', 'election', 'storage', 'volume', 'image', 'runtime', 'run', 'controller', 'cluster'],
  library: ['base', 'fs', 'proc', 'lock', 'pod', 'election', 'storage', 'volume', 'image', 'runtime', 'run', 'controller', 'cluster'], // lib/index.ts
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

t.test('every room of lib/ is in the table', async (t) => {
  const rooms = new Set(sources(LIB).map((f) => roomOf(path.relative(LIB, f))))
  for (const r of rooms) t.ok(r in MAY_IMPORT, `${r} has a floor`)
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
