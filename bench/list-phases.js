#!/usr/bin/env node
// Where `podctl list --format json` spends its time, phase by phase, in a
// fresh process per run, with the library calls list.ts makes (listPods,
// podView, sort, JSON.stringify, write to stdout). Also times a variant
// that skips JSON.parse/JSON.stringify by splicing each pod.json into the
// output (a prototype of a possible optimization, not what podctl does).
// Used for Documentation/performance.md.
//
//   node bench/list-phases.js [--dir DATA_DIR] [--pods 10000] [--reps 7]
//
// Without --dir it builds --pods pods (half prepared, half exited) in a temp
// dir and removes them at the end.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { option } from './lib/options.js'

const self = fileURLToPath(import.meta.url)

const child = async (mode, dataDir) => {
  const marks = [['node start → script', performance.now()]]
  const mark = (name) => marks.push([name, performance.now()])
  const { listPods, Include, podView } = await import('../dist/lib/index.js')
  mark('import the core')
  let out
  if (mode === 'podctl') {
    const pods = listPods(dataDir, Include.all)
    mark('listPods (readdirs, lock set)')
    const views = pods.map(podView)
    mark('podView ×N (read + JSON.parse)')
    views.sort((a, b) => (a.created_at ?? '').localeCompare(b.created_at ?? '') || a.uuid.localeCompare(b.uuid))
    mark('sort (localeCompare, as list.ts)')
    out = `${JSON.stringify(views)}\n`
    mark('JSON.stringify')
  } else {
    const pods = listPods(dataDir, Include.all)
    mark('listPods (readdirs, lock set)')
    const items = pods.map((p) => {
      const text = fs.readFileSync(path.join(p.path, 'pod.json'), 'utf8')
      const i = text.indexOf('"created_at":"')
      return { created: i < 0 ? '' : text.slice(i + 14, i + 38), uuid: p.uuid, json: `{"state":${JSON.stringify(p.state)},${text.slice(1).trimEnd()}` }
    })
    mark('read ×N + splice (no parse)')
    items.sort((a, b) => (a.created < b.created ? -1 : a.created > b.created ? 1 : a.uuid < b.uuid ? -1 : 1))
    mark('sort (plain string compare)')
    out = `[${items.map((x) => x.json).join(',')}]\n`
    mark('join')
  }
  fs.writeSync(1, out)
  mark('write to stdout')
  const phases = marks.map(([name, t], i) => [name, i === 0 ? t : t - marks[i - 1][1]])
  process.stderr.write(JSON.stringify(phases))
}

const main = async () => {
  const reps = Number(option('--reps', 7))
  let dataDir = option('--dir')
  let tmp
  if (dataDir === undefined) {
    const { buildPopulation } = await import('./lib/population.js')
    const n = Number(option('--pods', 10000))
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-list-phases-'))
    dataDir = tmp
    await buildPopulation(dataDir, { prepared: Math.ceil(n / 2), exited: Math.floor(n / 2), label: 'list-phases' })
    spawnSync('sync')
  }
  try {
    for (const mode of ['podctl', 'splice']) {
      const runs = []
      const walls = []
      for (let r = 0; r < reps; r++) {
        const t0 = process.hrtime.bigint()
        const c = spawnSync(process.execPath, [self, '--child', mode, '--dir', dataDir], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' })
        walls.push(Number(process.hrtime.bigint() - t0) / 1e6)
        if (c.status !== 0) throw new Error(c.stderr)
        runs.push(JSON.parse(c.stderr))
      }
      const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
      console.log(mode === 'podctl' ? 'as podctl list --format json does it (minus commander):' : 'prototype: splice pod.json texts, no JSON.parse/stringify:')
      for (let i = 0; i < runs[0].length; i++) {
        console.log(`  ${runs[0][i][0].padEnd(36)} ${median(runs.map((r) => r[i][1])).toFixed(1).padStart(7)} ms`)
      }
      console.log(`  ${'whole process, wall (median)'.padEnd(36)} ${median(walls).toFixed(1).padStart(7)} ms\n`)
    }
  } finally {
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true })
  }
}

const c = option('--child')
if (c !== undefined) await child(c, option('--dir'))
else await main()
