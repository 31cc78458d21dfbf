#!/usr/bin/env node
// The isolation benchmark (issue 11): `podctl run --isolation namespaces --
// /bin/true` against `podctl run -- /bin/true`, in interleaved rounds of one
// run (target: the medians' ratio ≤ 1.3). Part of `npm run bench`
// (BENCH_ISOLATION=0 skips it; it skips itself where the machine cannot
// isolate pods), and runnable alone once dist/ is built:
//   node bench/isolation.js [--reps 31]
// Prints one line and returns { host_ms, namespaces_ms, ratio } to bench/run.js.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { median, round, timeSpawn } from './lib/measure.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const BIN = path.resolve(here, '..', 'bin', 'podctl')

/** Measures `reps` interleaved pairs in a temp data dir; undefined (with the reason logged) where namespaces are not available. */
export const measureIsolation = async ({ reps = 31, log = (s) => process.stderr.write(`bench: ${s}\n`) } = {}) => {
  const { namespaceSupport } = await import('../dist/lib/proc/namespaces.js')
  const support = namespaceSupport('host')
  if (Array.isArray(support)) {
    log(`isolation: skipped, this machine lacks ${support.join(', ')}`)
    return undefined
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-bench-iso-'))
  try {
    const run = (extra) => {
      const r = timeSpawn(process.execPath, [BIN, '--dir', dir, 'run', ...extra, '--', '/bin/true'])
      if (r.status !== 0) throw new Error(`podctl run ${extra.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr.slice(0, 500)}`)
      return r.ms
    }
    run([])
    run(['--isolation', 'namespaces'])
    const host = []
    const ns = []
    for (let i = 0; i < reps; i++) {
      // Alternate which goes first, so that neither always follows the other.
      if (i % 2 === 0) {
        host.push(run([]))
        ns.push(run(['--isolation', 'namespaces']))
      } else {
        ns.push(run(['--isolation', 'namespaces']))
        host.push(run([]))
      }
    }
    const out = { reps, host_ms: round(median(host)), namespaces_ms: round(median(ns)), ratio: round(median(ns) / median(host), 2), userns: support.userns }
    log(`isolation: run -- /bin/true ${out.host_ms} ms, run --isolation namespaces -- /bin/true ${out.namespaces_ms} ms: ${out.ratio}× (target ≤ 1.3)`)
    return out
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
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
