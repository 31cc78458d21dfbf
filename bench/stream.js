#!/usr/bin/env node
// Foreground output of long lines: `podctl run` of a pod whose
// app prints one 40 MB line, with one app (output passed through) and with
// two apps (each line prefixed with its app's name, so held until its end
// or cut into bounded pieces). Target: two apps cost at most 1.5 × one
// app on the same output, and memory stays bounded. Wall time and peak RSS
// (GNU time's %M) of the podctl process, interleaved, medians.
//
//   node bench/stream.js [--mb 40] [--reps 5] [--json]
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { flag, option } from './lib/options.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const BIN = path.resolve(here, '..', 'bin', 'podctl')

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]

/** Runs `podctl run --manifest m` with stdout to /dev/null; wall ms and peak RSS in KiB. */
const timedRun = (dataDir, manifestFile) => {
  const t0 = process.hrtime.bigint()
  const r = spawnSync('/usr/bin/time', ['-f', '%M', process.execPath, BIN, '--dir', dataDir, 'run', '--manifest', manifestFile], {
    stdio: ['ignore', 'ignore', 'pipe'],
    encoding: 'utf8',
  })
  const ms = Number(process.hrtime.bigint() - t0) / 1e6
  if (r.status !== 0) throw new Error(`podctl run exited ${r.status}: ${r.stderr}`)
  return { ms, rssKiB: Number(r.stderr.trim().split('\n').at(-1)) }
}

/** Measures one app against two on a line of `mb` MB; rows of { case, ms, rss_mib }, and the ratio. */
export const measureStreaming = (mb, reps, log = (s) => process.stderr.write(`${s}\n`)) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-stream-'))
  try {
    const line = { name: 'talker', exec: ['sh', '-c', `head -c ${mb * 1_000_000} /dev/zero | tr '\\0' x; echo`] }
    const cases = {
      'one app': [line],
      'two apps (prefixed)': [line, { name: 'quiet', exec: ['true'] }],
    }
    const files = Object.fromEntries(
      Object.entries(cases).map(([name, apps], k) => {
        const f = path.join(dir, `m${k}.json`)
        fs.writeFileSync(f, JSON.stringify({ apiVersion: 'podctl/v1', apps }))
        return [name, f]
      }),
    )
    const runs = Object.fromEntries(Object.keys(cases).map((c) => [c, []]))
    for (let r = 0; r < reps; r++) {
      for (const c of r % 2 === 0 ? Object.keys(cases) : Object.keys(cases).reverse()) {
        const m = timedRun(path.join(dir, 'data'), files[c])
        runs[c].push(m)
        log(`stream ${r + 1}/${reps}: ${c}: ${m.ms.toFixed(0)} ms, ${(m.rssKiB / 1024).toFixed(0)} MiB`)
      }
      spawnSync(process.execPath, [BIN, '--dir', path.join(dir, 'data'), 'gc', '--grace-period', '0s'])
    }
    const rows = Object.entries(runs).map(([c, xs]) => ({ case: c, ms: median(xs.map((x) => x.ms)), rss_mib: median(xs.map((x) => x.rssKiB)) / 1024 }))
    return { rows, ratio: rows[1].ms / rows[0].ms, mb }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

export const formatStreaming = ({ rows, ratio, mb }) =>
  [
    `Foreground run of an app printing one ${mb} MB line (stdout to /dev/null):`,
    '',
    '| case | median | peak RSS |',
    '|---|---:|---:|',
    ...rows.map((r) => `| ${r.case} | ${r.ms.toFixed(0)} ms | ${r.rss_mib.toFixed(0)} MiB |`),
    '',
    `two apps / one app: ${ratio.toFixed(2)} (target <= 1.50): ${ratio <= 1.5 ? 'PASS' : 'MISS'}`,
    '',
  ].join('\n')

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const res = measureStreaming(Number(option('--mb', 40)), Number(option('--reps', 5)))
  process.stdout.write(flag('--json') ? `${JSON.stringify(res)}\n` : formatStreaming(res))
}
