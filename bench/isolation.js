#!/usr/bin/env node
// The isolation benchmark (CONTRACT §12): `podctl run --isolation
// namespaces -- /bin/true` against `podctl run -- /bin/true` and a bare
// `runc run` of an equivalent bundle (the app container's own config.json,
// taken from a real run, with namespaces of its own in the place of the
// infra's), all interleaved in one run. Target: isolated ≤ host + 2 × bare
// runc (an isolated pod runs two containers: its infra and its app), for a
// pod with `--network none`; the same pod on the default network (bridge)
// is measured beside it, and what that adds has its own target
// (bench/network-pods.js).
// Part of `npm run bench` (BENCH_ISOLATION=0 skips it; it skips itself
// where the machine cannot isolate pods), and runnable alone once dist/ is
// built:
//   node bench/isolation.js [--reps 31]
// Prints one line and returns { host_ms, namespaces_ms, namespaces_none_ms, runc_ms, budget_ms, pass } to bench/run.js.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { median, round, timeSpawn } from './lib/measure.js'
import { removeNetworking } from './lib/network-cleanup.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const BIN = path.resolve(here, '..', 'bin', 'podctl')

/**
 * A bundle equivalent to the app container of an isolated `/bin/true`
 * pod: its config.json as podctl wrote it, the same root, mounts,
 * capabilities and seccomp filter, but namespaces (and a cgroup) of its own,
 * since the infra it joined is gone.
 */
const equivalentBundle = (dataDir, work) => {
  // The isolated pod: the one with bundles (the host pod beside it has none).
  const podDir = ['run', 'exited-garbage']
    .flatMap((state) => {
      const d = path.join(dataDir, 'pods', state)
      return fs.existsSync(d) ? fs.readdirSync(d).map((u) => path.join(d, u)) : []
    })
    .find((d) => fs.existsSync(path.join(d, 'bundles')))
  if (podDir === undefined) throw new Error(`no isolated pod in ${dataDir}`)
  const bundles = path.join(podDir, 'bundles')
  const app = fs.readdirSync(bundles).find((n) => !n.startsWith('.'))
  const config = JSON.parse(fs.readFileSync(path.join(bundles, app, 'config.json'), 'utf8'))
  config.linux.namespaces = config.linux.namespaces.map((n) => ({ type: n.type }))
  config.hostname = 'bench'
  config.linux.cgroupsPath = `/podctl-bench/${process.pid}`
  const bundle = path.join(work, 'bundle')
  fs.mkdirSync(bundle, { recursive: true })
  fs.writeFileSync(path.join(bundle, 'config.json'), JSON.stringify(config))
  return bundle
}

/** Measures `reps` interleaved triples in a temp data dir; undefined (with the reason logged) where pods cannot be isolated. */
export const measureIsolation = async ({ reps = 31, log = (s) => process.stderr.write(`bench: ${s}\n`) } = {}) => {
  const { findRuntime } = await import('../dist/lib/runtime/runtime.js')
  const { containersCommonProfile } = await import('../dist/lib/runtime/seccomp.js')
  let runtime
  try {
    runtime = findRuntime()
    containersCommonProfile()
  } catch (er) {
    log(`isolation: skipped, ${er.message}`)
    return undefined
  }
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-bench-iso-'))
  const dir = path.join(work, 'data')
  try {
    const run = (extra) => {
      const r = timeSpawn(process.execPath, [BIN, '--dir', dir, 'run', ...extra, '--', '/bin/true'])
      if (r.status !== 0) throw new Error(`podctl run ${extra.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr.slice(0, 500)}`)
      return r.ms
    }
    run([])
    run(['--isolation', 'namespaces'])
    const bundle = equivalentBundle(dir, work)
    const state = path.join(work, 'runc-state')
    let n = 0
    const bare = () => {
      const r = timeSpawn(runtime.path, ['--root', state, 'run', '--bundle', bundle, `bench-${process.pid}-${n++}`])
      if (r.status !== 0) throw new Error(`${runtime.name} run exited ${r.status ?? r.signal}: ${r.stderr.slice(0, 500)}`)
      return r.ms
    }
    bare()
    const host = []
    const ns = []
    const nsNone = []
    const runc = []
    const order = [() => host.push(run([])), () => ns.push(run(['--isolation', 'namespaces'])), () => nsNone.push(run(['--isolation', 'namespaces', '--network', 'none'])), () => runc.push(bare())]
    for (let i = 0; i < reps; i++) {
      // Rotate which goes first, so that none always follows another.
      for (let k = 0; k < order.length; k++) order[(i + k) % order.length]()
    }
    const out = { reps, runtime: runtime.name, host_ms: round(median(host)), namespaces_ms: round(median(ns)), namespaces_none_ms: round(median(nsNone)), runc_ms: round(median(runc)) }
    // The target is the containers' cost: a pod without networks; what the default network adds is bench/network-pods.js's.
    out.budget_ms = round(out.host_ms + 2 * out.runc_ms)
    out.pass = out.namespaces_none_ms <= out.budget_ms
    log(`isolation: run -- /bin/true ${out.host_ms} ms, bare ${runtime.name} run ${out.runc_ms} ms, run --isolation namespaces --network none -- /bin/true ${out.namespaces_none_ms} ms (target ≤ ${out.budget_ms} ms: ${out.pass ? 'PASS' : 'MISS'}), on the default network (bridge) ${out.namespaces_ms} ms`)
    return out
  } finally {
    // The default network's bridge and chains (its pods are gone), then the files.
    await removeNetworking(dir)
    fs.rmSync(work, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const i = process.argv.indexOf('--reps')
  const reps = i > 0 ? Number(process.argv[i + 1]) : 31
  if (!(Number.isInteger(reps) && reps > 0)) {
    console.error('bench: --reps takes a positive whole number')
    process.exit(2)
  }
  const r = await measureIsolation({ reps })
  if (r) console.log(JSON.stringify(r))
}
