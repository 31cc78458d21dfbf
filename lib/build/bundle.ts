/**
 * Builds the CLI that bin/podctl runs: dist/bundle/, made from tsc's
 * output in dist/lib/ by `npm run build` (and by `npm install`, through
 * `prepare`). Not part of the library.
 *
 * Why: every podctl command pays Node's start-up, and loading ~30 ES
 * modules (plus proper-lockfile and graceful-fs through the CommonJS
 * loader) cost `list` and `run` more than the work they do on a small
 * data dir. CommonJS bundles, loaded by a CommonJS bin/podctl, skip the ES
 * module loader and the per-file resolution; and V8 reads every byte of a
 * script it loads, so each command loads the parser plus its own code and
 * nothing else (Documentation/devel/build.md has the numbers).
 *
 * Layout, all in one directory so that the relative paths in the code
 * hold there too:
 *   main.js             bin/podctl's entry (lib/cli/main.ts): commander and
 *                       every command's declaration (lib/cli/commands/)
 *   <action>.js         one per action module: what a command does, loaded
 *                       by its declaration's action. A command's is
 *                       lib/cli/commands/<name>/action.ts (list.js), a
 *                       subcommand's in a folder of its own
 *                       lib/cli/commands/<name>/<sub>/action.ts
 *                       (image-import.js); the modules of lib/cli/actions/
 *                       that remain are bundled by their file names
 *   supervisor.js       the detached supervisor (lib/run/supervisor-main.ts)
 *   supervisor-main.js  what lib/run/detach.ts starts (./supervisor-main.js
 *                       next to its own file): a few lines that load
 *                       supervisor.js with its code cache through
 *                       bin/load-bundle.js, as bin/podctl loads main.js
 *   remove-worker.js    gc's removal threads (lib/fs/remove-pool.ts), the
 *                       same way
 *   etcd3.js            the etcd client (node_modules/etcd3 with gRPC and
 *                       etcd's RPC definitions parsed at build time:
 *                       ./etcd-bundle.ts), which lib's `import('etcd3')`
 *                       requires, with --cluster only
 * A declaration's `import('./action.js')` is left as a run-time require of
 * the sibling file (./list.js); each bundle holds its own copy of
 * everything else it uses, and a process loads main.js and at most one
 * action bundle (errors cross between them: lib/errors.ts marks them).
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build, type Plugin } from 'esbuild'
import { buildEtcdBundle, etcdExternal } from './etcd-bundle.js'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')
const lib = path.join(root, 'dist/lib')
const out = path.join(root, 'dist/bundle')
const cli = path.join(lib, 'cli')

/** Every `action.js` below `dir`, by bundle name: its folder's path below lib/cli/commands/, "/" as "-". */
const commandActions = (dir: string, found = new Map<string, string>()): Map<string, string> => {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) commandActions(p, found)
    else if (e.name === 'action.js') found.set(path.relative(path.join(cli, 'commands'), dir).split(path.sep).join('-'), p)
  }
  return found
}

/**
 * The action modules, by bundle name: each command folder's action.js, and
 * the modules of lib/cli/actions/ not yet moved into a command's folder.
 * Two with one name would be one file in dist/bundle/: the build refuses.
 */
const actionModules = (): Map<string, string> => {
  const found = commandActions(path.join(cli, 'commands'))
  const old = path.join(cli, 'actions')
  for (const f of fs.existsSync(old) ? fs.readdirSync(old) : []) {
    if (!f.endsWith('.js')) continue
    const name = f.slice(0, -3)
    if (found.has(name)) throw new Error(`build: two action modules make dist/bundle/${name}.js: ${found.get(name)} and ${path.join(old, f)}`)
    found.set(name, path.join(old, f))
  }
  return found
}

const ACTIONS = actionModules()
/** The bundle each action module becomes, by the module's path. */
const BUNDLE_OF = new Map([...ACTIONS].map(([name, file]) => [file, name]))

const ENTRIES: Record<string, string> = {
  main: path.join(cli, 'main.js'),
  supervisor: path.join(lib, 'run/supervisor-main.js'),
  'remove-worker': path.join(lib, 'fs/remove-worker.js'),
  ...Object.fromEntries(ACTIONS),
}

/**
 * A declaration's `await import('./action.js')` stays a run-time require of
 * that action's bundle. A static import of an action module (another
 * action's helper) is bundled like any other module: a process loads one
 * action bundle.
 */
const siblingActions: Plugin = {
  name: 'sibling-actions',
  setup(b) {
    b.onResolve({ filter: /\.js$/ }, (args) => {
      if (args.kind !== 'dynamic-import') return undefined
      const bundle = BUNDLE_OF.get(path.resolve(args.resolveDir, args.path))
      return bundle === undefined ? undefined : { path: `./${bundle}.js`, external: true }
    })
  },
}

/**
 * One module per Node built-in, shared by the whole bundle, that binds the
 * built-in's exports to plain variables. esbuild turns `import fs from
 * 'node:fs'` of an external module into `__toESM(require('node:fs'))`,
 * which defines a getter on a new object for each of fs's ~100 properties,
 * in every module that imports it (Documentation/devel/build.md has what
 * that cost). This module requires the built-in once and exports
 * `default` and, as variables, the names that lib/ imports by name
 * (`import { spawn } from 'node:child_process'`). Only those: reading every
 * property would run getters such as fs.promises, which load modules. A
 * name imported in a way this scan misses fails the build ("No matching
 * export"), never the CLI.
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
    // no copy. commander's child_process is loaded on first use
    // (./lazy-child-process.ts).
    b.onResolve({ filter: /^node:/ }, (args) => {
      if (args.path === 'node:child_process' && args.kind === 'require-call' && args.importer.includes(`${path.sep}commander${path.sep}`)) {
        return { path: path.join(lib, 'build/lazy-child-process.js') }
      }
      // A dependency's own imports of built-ins (uuid's) stay plain requires too.
      return args.namespace === 'shared-builtin' || args.kind === 'require-call' || args.importer.includes(`${path.sep}node_modules${path.sep}`)
        ? { path: args.path, external: true }
        : { path: args.path, namespace: 'shared-builtin' }
    })
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
    entryPoints: ENTRIES,
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
    plugins: [siblingActions, sharedBuiltins, etcdExternal],
    // import() of a sibling bundle as a plain require(): a real import()
    // would start the ES module loader, which is what bundling avoids.
    supported: { 'dynamic-import': false },
    sourcemap: 'linked',
    // Names are kept: --debug traces show them, and the code cache spares
    // parsing the extra bytes.
    minifyWhitespace: true,
    minifySyntax: true,
    logLevel: 'warning',
  })
  await buildEtcdBundle(out)
  // The package is "type": "module"; these files are CommonJS.
  fs.writeFileSync(path.join(out, 'package.json'), '{ "type": "commonjs" }\n')
  fs.writeFileSync(
    path.join(out, 'supervisor-main.js'),
    "'use strict'\n// The detached supervisor: its bundle, with the code cache the build made (lib/build/bundle.ts).\nrequire('../../bin/load-bundle.js').load('supervisor.js')\n",
  )
}

/** How long the build waits for a detached supervisor to end and write its cache. */
const SUPERVISOR_CACHE_MS = 10_000

/** Waits (blocking, in steps of 50 ms) until `done` or `ms` have passed. */
const waitFor = (done: () => boolean, ms: number): void => {
  const step = new Int32Array(new SharedArrayBuffer(4))
  for (const end = Date.now() + ms; !done() && Date.now() < end; ) Atomics.wait(step, 0, 0, 50)
}

/**
 * Makes the V8 code cache of the bundles (`X.js.cache`, which bin/podctl
 * loads): runs one command of each kind through bin/podctl against a
 * scratch data dir, and each command rewrites the cache of every bundle it
 * loaded, after it has run: the cache it started from plus what it
 * compiled. So run.js's cache holds a host pod's path and, where this
 * machine can run one (root, an OCI runtime), an isolated pod's, which
 * would otherwise be compiled by every `run --isolation namespaces` and
 * image run. A command that cannot run here (no runtime) adds what it
 * compiled before it failed, which costs time, not correctness.
 */
const makeCodeCaches = (): void => {
  const bin = path.join(root, 'bin', 'podctl')
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-build-'))
  const env = { ...process.env, PODCTL_BUILD_CODE_CACHE: '1' }
  const podctl = (...args: string[]): string => {
    const r = spawnSync(process.execPath, [bin, '--dir', dataDir, ...args], { env, encoding: 'utf8' })
    if (r.status !== 0) console.warn(`build: code cache: podctl ${args.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr.trim()}`)
    return r.stdout.trim()
  }
  /** A command this machine may not be able to run: what it compiles counts, its failure is not reported. */
  const mayFail = (...args: string[]): void => void spawnSync(process.execPath, [bin, '--dir', dataDir, ...args], { env, stdio: 'ignore' })
  try {
    podctl('run', '--', 'true')
    // The runtime room, on no network: nothing is made on the host but the pod's cgroup, which its end removes.
    if (process.geteuid?.() === 0) mayFail('run', '--isolation', 'namespaces', '--network', 'none', '--', 'true')
    // The detached supervisor writes its bundle's cache as it exits, when its pod has ended.
    const supervisorCache = path.join(out, 'supervisor.js.cache')
    if (process.geteuid?.() === 0) mayFail('run', '--detach', '--isolation', 'namespaces', '--network', 'none', '--', 'true')
    if (!fs.existsSync(supervisorCache)) podctl('run', '--detach', '--', 'true')
    waitFor(() => fs.existsSync(supervisorCache), SUPERVISOR_CACHE_MS)
    const uuid = podctl('prepare', '--', 'true')
    const commands = [['run-prepared', uuid], ['list'], ['status', uuid], ['cat-manifest', uuid], ['logs', uuid], ['app', 'list', uuid], ['stop', uuid], ['volume', 'list'], ['rm', uuid], ['gc']]
    for (const args of commands) podctl(...args)
    // etcd3.js's cache: loading it and a first call, which fails at once on a port nothing listens on (discard, 9).
    mayFail('--cluster', 'http://127.0.0.1:9', 'node', 'list')
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

await bundle()
makeCodeCaches()
