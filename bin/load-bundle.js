// Loads podctl's bundles (dist/bundle/, which `npm run build` writes;
// lib/build/bundle.ts says why the code is bundled) with the V8 code cache
// the build made beside each: compiling a bundle costs a command more than
// most of them do (Documentation/devel/build.md). A cache made by another
// Node version is rejected by V8 and the bundle compiled as usual. Used by
// bin/podctl for main.js and by the detached supervisor's entry
// (dist/bundle/supervisor-main.js) for supervisor.js. CommonJS (see
// bin/package.json): Node starts a CommonJS script faster than an ES module.
'use strict'
const fs = require('node:fs')
const path = require('node:path')
const vm = require('node:vm')
const { wrap } = require('node:module')

const BUNDLE = path.join(__dirname, '..', 'dist', 'bundle')
// Set by the build only (lib/build/bundle.ts): write the cache of every
// bundle the command loads, so that each of the build's commands adds the
// functions it compiled to what the commands before it left.
const makingCache = process.env.PODCTL_BUILD_CODE_CACHE === '1'
const compiled = []

/** A bundle compiled: reading and compiling it (from its cache) is done once per process. */
const scripts = new Map()
const compile = (file) => {
  let script = scripts.get(file)
  if (script !== undefined) return script
  let cachedData
  try {
    cachedData = fs.readFileSync(`${file}.cache`)
  } catch {
    // not made yet, or not at all
  }
  script = new vm.Script(wrap(fs.readFileSync(file, 'utf8')), { filename: file, cachedData })
  if (makingCache) compiled.push([file, script])
  scripts.set(file, script)
  return script
}

/**
 * A loader: each bundle runs once in it, as require() runs a module once
 * (the cluster client imports etcd3.js from more than one place). bin/podctl
 * has one; the tests' podctl thread (test/helpers/podctl-worker.mjs) makes
 * one per command, so that each command has module instances of its own,
 * as a process of its own would.
 */
const loader = () => {
  const loaded = new Map()
  /** Loads dist/bundle/NAME as a CommonJS module; its `./X.js` requires load sibling bundles the same way. */
  const load = (name) => {
    const done = loaded.get(name)
    if (done !== undefined) return done.exports
    const file = path.join(BUNDLE, name)
    const script = compile(file)
    const module = { exports: {} }
    loaded.set(name, module)
    const requireIn = (id) => (id.startsWith('./') ? load(id.slice(2)) : require(id))
    script.runInThisContext().call(module.exports, module.exports, requireIn, module, file, BUNDLE)
    return module.exports
  }
  return load
}

// The cache is made on exit, so that it holds every function the command compiled.
if (makingCache) process.on('exit', () => compiled.forEach(([file, script]) => fs.writeFileSync(`${file}.cache`, script.createCachedData())))

module.exports = { load: loader(), loader }
