#!/usr/bin/env node
// Ways to delete the directories of 10,000 exited pods, against `xargs rm
// -rf` of the same tree (keep a hand-written routine only where
// the library costs a target). Each way runs in a fresh `node` process
// that deletes every pod directory listed in a file, one by one, as gc
// does, on a freshly built population; the populations are built pod by
// pod in turn, so that all are equally fresh in the page cache, and the
// ways run in a rotating order, `sync` before each.
//
//   node bench/remove-styles.js [--pods 10000] [--reps 1] [--base DIR] [--json]
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { buildExitedPopulations } from './lib/population.js'
import { flag, option } from './lib/options.js'

const self = fileURLToPath(import.meta.url)

/** The ways, by name: what a child process runs for each listed directory. */
const WAYS = {
  'podctl removeTree (lib/fs/remove-tree.ts)': async () => {
    const { removeTree } = await import('../dist/lib/fs/remove-tree.js')
    return removeTree
  },
  "fs-extra's removeSync": async () => (await import('fs-extra')).default.removeSync,
  "node's fs.rmSync (recursive)": async () => (dir) => fs.rmSync(dir, { recursive: true, force: true }),
}

const child = async (way, listFile) => {
  const remove = await WAYS[way]()
  const dirs = fs.readFileSync(listFile, 'utf8').split('\n').filter(Boolean)
  const t0 = process.hrtime.bigint()
  for (const d of dirs) remove(d)
  process.stdout.write(`${Number(process.hrtime.bigint() - t0) / 1e6}\n`)
}

const timed = (cmd, args) => {
  spawnSync('sync')
  const t0 = process.hrtime.bigint()
  const r = spawnSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 24 })
  const ms = Number(process.hrtime.bigint() - t0) / 1e6
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status}: ${r.stderr}`)
  return ms
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]

/** Measures every way and rm -rf `reps` times over `n` pods each; rows of { way, median, ratio }. */
export const measureRemoveStyles = async (n, reps, base = os.tmpdir(), log = (s) => process.stderr.write(`${s}\n`)) => {
  const names = [...Object.keys(WAYS), 'xargs rm -rf (the floor)']
  const times = new Map(names.map((w) => [w, []]))
  const root = fs.mkdtempSync(path.join(base, 'podctl-remove-styles-'))
  try {
    for (let r = 0; r < reps; r++) {
      const dirs = names.map((_, k) => path.join(root, `r${r}-${k}`))
      log(`remove styles ${r + 1}/${reps}: building ${names.length} × ${n} exited pods, interleaved`)
      const uuids = await buildExitedPopulations(dirs, n, { label: `remove styles ${r + 1}/${reps}` })
      const lists = dirs.map((d, k) => {
        const file = `${d}.txt`
        fs.writeFileSync(file, uuids[k].map((u) => path.join(d, 'pods', 'run', u)).join('\n') + '\n')
        return file
      })
      const order = names.map((_, k) => (k + r) % names.length)
      for (const k of order) {
        const way = names[k]
        const ms = way.startsWith('xargs') ? timed('sh', ['-c', `xargs rm -rf < '${lists[k]}'`]) : Number(spawnSync(process.execPath, [self, '--child-way', way, '--child-list', lists[k]], { encoding: 'utf8' }).stdout)
        if (!Number.isFinite(ms)) throw new Error(`${way}: no time`)
        if (fs.readdirSync(path.join(dirs[k], 'pods', 'run')).length !== 0) throw new Error(`${way} left pods behind`)
        times.get(way).push(ms)
        log(`  ${way}: ${ms.toFixed(0)} ms`)
      }
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
  const floor = median(times.get(names.at(-1)))
  return names.map((way) => ({ way, median: median(times.get(way)), ratio: median(times.get(way)) / floor, runs: times.get(way) }))
}

/** A markdown table of the rows. */
export const formatRemoveTable = (rows, n) =>
  [
    `Deleting ${n} exited pod directories one by one, in a fresh node process per way (times exclude node's start-up; rm -rf's include its own):`,
    '',
    '| way | median | × rm -rf |',
    '|---|---:|---:|',
    ...rows.map((r) => `| ${r.way} | ${r.median.toFixed(0)} ms | ${r.ratio.toFixed(2)} |`),
    '',
  ].join('\n')

if (option('--child-way') !== undefined) await child(option('--child-way'), option('--child-list'))
else if (process.argv[1] === self) {
  const n = Number(option('--pods', 10000))
  const rows = await measureRemoveStyles(n, Number(option('--reps', 1)), option('--base', os.tmpdir()))
  process.stdout.write(flag('--json') ? `${JSON.stringify(rows)}\n` : `${formatRemoveTable(rows, n)}\n`)
}
