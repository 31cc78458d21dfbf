/**
 * Builds the CLI that bin/podctl runs: dist/bundle/, made from tsc's
 * output in dist/lib/ by `npm run build` (and by `npm install`, through
 * `prepare`). Not part of the library.
 *
 * Why: every podctl command pays Node's start-up, and loading ~30 ES
 * modules (plus proper-lockfile and graceful-fs through the CommonJS
 * loader) cost `list` and `run` more than the work they do on a small
 * data dir. One CommonJS file per command path, loaded by a CommonJS
 * bin/podctl, skips the ES module loader and the per-file resolution
 * (Documentation/performance.md has the numbers).
 *
 * Layout, all in one directory so that the relative paths in the code
 * hold there too:
 *   entry.js            bin/podctl's entry (lib/cli/entry.ts): version, the
 *                       fast-path recognizers, and the dispatch below
 *   fast-list.js        plain `list` (lib/cli/fast-list.ts)
 *   fast-run.js         plain `run -- CMD` (lib/cli/fast-run.ts)
 *   main.js             every other command line, with commander
 *   supervisor-main.js  the detached supervisor (lib/run/detach.ts starts
 *                       ./supervisor-main.js next to its own file)
 * entry.js loads the other three with `import('./X.js')`, left as run-time
 * requires of the sibling file; each of the others holds its own copy of
 * everything it uses, and a process loads exactly one of them.
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build, type Plugin } from 'esbuild'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')
const lib = path.join(root, 'dist/lib')
const out = path.join(root, 'dist/bundle')

const ENTRIES = {
  entry: 'cli/entry.js',
  'fast-list': 'cli/fast-list.js',
  'fast-run': 'cli/fast-run.js',
  main: 'cli/main.js',
  'supervisor-main': 'run/supervisor-main.js',
}

/** entry.js's imports of the other bundles stay run-time imports of the sibling file. */
const siblingBundles: Plugin = {
  name: 'sibling-bundles',
  setup(b) {
    b.onResolve({ filter: /^\.\/(fast-list|fast-run|main)\.js$/ }, (args) =>
      args.importer === path.join(lib, ENTRIES.entry) ? { path: args.path, external: true } : undefined,
    )
  },
}

/**
 * One module per Node built-in, shared by the whole bundle, that binds the
 * built-in's exports to plain variables. esbuild turns `import fs from
 * 'node:fs'` of an external module into `__toESM(require('node:fs'))`,
 * which defines a getter on a new object for each of fs's ~100 properties
 * (22 such copies in fast-run.js cost 4 ms of each `podctl run`; one per
 * built-in still cost 2.5 ms). This module requires the built-in once and
 * exports `default` and, as variables, the names that lib/ imports by
 * name (`import { spawn } from 'node:child_process'`). Only those: reading
 * every property would run getters such as fs.promises, which load
 * modules. A name imported in a way this scan misses fails the build
 * ("No matching export"), never the CLI.
 */
const namedImports = (dir: string, found = new Map<string, Set<string>>()): Map<string, Set<string>> => {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) namedImports(p, found)
    else if (e.name.endsWith('.js')) {
      for (const m of fs.readFileSync(p, 'utf8').matchAll(/import\s+(?:[\w$]+\s*,\s*)?\{([^}]*)\}\s*from\s*'(node:[^']+)'/g)) {
        const names = found.get(m[2]!) ?? new Set<string>()
        for (const spec of m[1]!.split(',')) {
          const name = spec.trim().split(/\s+as\s+/)[0]!
          if (name !== '' && !name.startsWith('type ')) names.add(name)
        }
        found.set(m[2]!, names)
      }
    }
  }
  return found
}

const builtinModule = (specifier: string, names: Iterable<string>): string =>
  [`const m = require(${JSON.stringify(specifier)})`, 'export default m', ...[...names].map((n) => `export const ${n} = m.${n}`)].join('\n')

const sharedBuiltins: Plugin = {
  name: 'shared-builtins',
  setup(b) {
    // require() (proper-lockfile, commander, signal-exit) gets the built-in
    // itself: CommonJS code reads any property of it, and a require() is
    // no copy.
    b.onResolve({ filter: /^node:/ }, (args) =>
      args.namespace === 'shared-builtin' || args.kind === 'require-call'
        ? { path: args.path, external: true }
        : { path: args.path, namespace: 'shared-builtin' },
    )
    const imported = namedImports(lib)
    b.onLoad({ filter: /.*/, namespace: 'shared-builtin' }, (args) => ({
      contents: builtinModule(args.path, imported.get(args.path) ?? []),
      loader: 'js',
    }))
  },
}

const bundle = async (): Promise<void> => {
  fs.rmSync(out, { recursive: true, force: true })
  await build({
    entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([name, file]) => [name, path.join(lib, file)])),
    outdir: out,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // import.meta.url, in CommonJS: the bundle file's own URL.
    banner: { js: "const __import_meta_url = require('node:url').pathToFileURL(__filename).href;" },
    define: { 'import.meta.url': '__import_meta_url' },
    // proper-lockfile's default fs; podctl always passes its own (lib/pod/lock.ts).
    // signal-exit's one use of assert (./assert-shim.ts).
    alias: { 'graceful-fs': 'node:fs', assert: path.join(lib, 'build/assert-shim.js') },
    plugins: [siblingBundles, sharedBuiltins],
    // import() of a sibling bundle as a plain require(): a real import()
    // would start the ES module loader, which is what bundling avoids.
    supported: { 'dynamic-import': false },
    sourcemap: 'linked',
    minifyWhitespace: true,
    minifySyntax: true,
    logLevel: 'warning',
  })
  // The package is "type": "module"; these files are CommonJS.
  fs.writeFileSync(path.join(out, 'package.json'), '{ "type": "commonjs" }\n')
}

await bundle()
