#!/usr/bin/env node
// The I/O style question ("Measure the I/O style"): reading one
// small file per pod (its manifest) for 10,000 pods with a plain
// readFileSync loop, against promise pools of fs.promises.readFile.
//
//   node bench/io-style.js [--dir DATA_DIR] [--reps 7] [--json]
//
// Without --dir it builds its own population of 10,000 pods (half prepared,
// half exited) through the library in a temp dir, and removes it at the end.
// Two measurements per style, each the median of --reps runs:
//   - cold: a fresh `node` process per run that reads every file once, timed
//     inside the process (no Node start-up), as one podctl command would;
//   - warm: the same reads repeated in one process, styles interleaved.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { flag, option } from './lib/options.js'

const self = fileURLToPath(import.meta.url)
const POD_DIRS = ['embryo', 'prepare', 'prepared', 'run', 'exited-garbage', 'garbage']

const manifestPaths = (dataDir) => {
  const out = []
  for (const d of POD_DIRS) {
    let names = []
    try {
      names = fs.readdirSync(path.join(dataDir, 'pods', d))
    } catch {
      continue
    }
    for (const n of names) out.push(path.join(dataDir, 'pods', d, n, 'manifest'))
  }
  return out
}

const readSync = (paths) => {
  let bytes = 0
  for (const p of paths) bytes += fs.readFileSync(p, 'utf8').length
  return bytes
}

const readPool = async (paths, width) => {
  let bytes = 0
  let next = 0
  const worker = async () => {
    while (next < paths.length) {
      const p = paths[next++]
      bytes += (await fs.promises.readFile(p, 'utf8')).length
    }
  }
  await Promise.all(Array.from({ length: Math.min(width, paths.length) }, worker))
  return bytes
}

const readAll = async (paths) => {
  const texts = await Promise.all(paths.map((p) => fs.promises.readFile(p, 'utf8')))
  return texts.reduce((n, t) => n + t.length, 0)
}

export const STYLES = {
  'readFileSync loop': (paths) => readSync(paths),
  'fs.promises.readFile, pool of 8': (paths) => readPool(paths, 8),
  'fs.promises.readFile, pool of 64': (paths) => readPool(paths, 64),
  'fs.promises.readFile, Promise.all (unbounded)': (paths) => readAll(paths),
}

const timeStyle = async (name, paths) => {
  const t0 = process.hrtime.bigint()
  const bytes = await STYLES[name](paths)
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, bytes }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

/** Measures every style on the pods of `dataDir`; returns an array of rows. */
export const measureIoStyles = async (dataDir, reps = 7) => {
  const paths = manifestPaths(dataDir)
  const names = Object.keys(STYLES)
  const cold = Object.fromEntries(names.map((n) => [n, []]))
  const warm = Object.fromEntries(names.map((n) => [n, []]))
  let bytes = 0
  for (let r = 0; r < reps; r++) {
    // Rotate the order so that no style always runs first.
    const order = names.map((_, i) => names[(i + r) % names.length])
    for (const name of order) {
      const c = spawnSync(process.execPath, [self, '--child', name, '--dir', dataDir], { encoding: 'utf8' })
      if (c.status !== 0) throw new Error(`io-style child failed: ${c.stderr}`)
      cold[name].push(JSON.parse(c.stdout).ms)
    }
    for (const name of order) {
      const w = await timeStyle(name, paths)
      warm[name].push(w.ms)
      bytes = w.bytes
    }
  }
  return names.map((name) => ({
    style: name,
    files: paths.length,
    bytes,
    reps,
    cold_median_ms: Math.round(median(cold[name]) * 10) / 10,
    warm_median_ms: Math.round(median(warm[name]) * 10) / 10,
  }))
}

export const formatIoTable = (rows) => {
  const head = ['I/O style (one manifest per pod)', 'files', 'cold ms (fresh process)', 'warm ms (same process)']
  const body = rows.map((r) => [r.style, String(r.files), r.cold_median_ms.toFixed(1), r.warm_median_ms.toFixed(1)])
  const all = [head, ...body]
  const w = head.map((_, i) => Math.max(...all.map((r) => r[i].length)))
  return all.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join('  ')).join('\n') + '\n'
}


if (process.argv[1] === self) {
  const child = option('--child')
  if (child !== undefined) {
    const paths = manifestPaths(option('--dir'))
    const r = await timeStyle(child, paths)
    process.stdout.write(JSON.stringify(r))
  } else {
    let dataDir = option('--dir')
    let tmp
    if (dataDir === undefined) {
      const { buildPopulation } = await import('./lib/population.js')
      tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-io-style-'))
      dataDir = tmp
      await buildPopulation(dataDir, { prepared: 5000, exited: 5000, label: 'io-style' })
      spawnSync('sync')
    }
    try {
      const rows = await measureIoStyles(dataDir, Number(option('--reps') ?? 7))
      process.stdout.write(flag('--json') ? `${JSON.stringify(rows, null, 2)}\n` : formatIoTable(rows))
    } finally {
      if (tmp) fs.rmSync(tmp, { recursive: true, force: true })
    }
  }
}
