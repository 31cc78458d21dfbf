#!/usr/bin/env node
// Where gc's time goes, against rm -rf: deletes fresh populations of exited
// pods with `podctl gc --grace-period 0s` and with stand-ins that make the
// same system calls as gc with parts left out (the lock, or the block that
// the lock's owner symlink occupies), interleaved, `sync` before each.
// Also counts the block device's discards, reads and writes per pod where
// /proc/diskstats knows the device (ext4 mounted with `discard` frees each
// block with a synchronous discard). Used for Documentation/performance.md.
//
//   node bench/gc-anatomy.js [--pods 3000] [--reps 3] [--base DIR] [--only 'prefix|prefix']
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { buildExitedPopulations } from './lib/population.js'
import { option } from './lib/options.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const BIN = path.resolve(here, '..', 'bin', 'podctl')
const N = Number(option('--pods', 3000))
const REPS = Number(option('--reps', 3))
const BASE = option('--base', os.tmpdir())
const ONLY = option('--only')

// An owner record as lock.ts writes it: under 60 bytes, so ext4 keeps the
// symlink's target in the inode (a "fast" symlink, no data block).
const bootId = (() => {
  try {
    return fs.readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim()
  } catch {
    return '00000000-0000-0000-0000-000000000000'
  }
})()
const SHORT_OWNER = `podctl2 ${process.pid} 12345678 ${bootId.slice(0, 8)} 0123abcd`

const removeTree = (dir) => {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name)
    if (e.isDirectory()) removeTree(p)
    else fs.unlinkSync(p)
  }
  fs.rmdirSync(dir)
}

// gc's calls per exited pod (lock.ts, pod.ts, remove-tree.ts): lock =
// one symlink locks/<uuid> whose target is the owner record (or, to
// compare, a hard link to one owner file per process); the existence check
// after locking; run/ → exited-garbage/ rename; delete the tree; release =
// unlink of the lock.
const gcCalls = (lock) => (d) => {
  const locks = path.join(d, 'locks')
  const ownerFile = path.join(locks, `.owner-${process.pid}`)
  if (lock === 'link') fs.writeFileSync(ownerFile, SHORT_OWNER)
  for (const u of fs.readdirSync(path.join(d, 'pods', 'run'))) {
    const lockPath = path.join(locks, u)
    const from = path.join(d, 'pods', 'run', u)
    if (lock === 'symlink') fs.symlinkSync(SHORT_OWNER, lockPath)
    else if (lock === 'link') fs.linkSync(ownerFile, lockPath)
    if (lock) fs.lstatSync(from)
    const to = path.join(d, 'pods', 'exited-garbage', u)
    fs.renameSync(from, to)
    removeTree(to)
    if (lock) fs.unlinkSync(lockPath)
  }
  if (lock === 'link') fs.unlinkSync(ownerFile)
}

const VARIANTS = {
  'rm -rf (xargs)': (d) => {
    const list = path.join(d, 'list')
    const run = path.join(d, 'pods', 'run')
    fs.writeFileSync(list, fs.readdirSync(run).map((u) => path.join(run, u)).join('\n'))
    const fd = fs.openSync(list, 'r')
    spawnSync('xargs', ['rm', '-rf'], { stdio: [fd, 'ignore', 'inherit'] })
    fs.closeSync(fd)
  },
  'removeTree per pod, in node': (d) => {
    for (const u of fs.readdirSync(path.join(d, 'pods', 'run'))) removeTree(path.join(d, 'pods', 'run', u))
  },
  'podctl gc --grace-period 0s': (d) => {
    const r = spawnSync(process.execPath, [BIN, '--dir', d, 'gc', '--grace-period', '0s'], { stdio: ['ignore', 'ignore', 'inherit'] })
    if (r.status !== 0) throw new Error(`gc exited with ${r.status}`)
  },
  [`gc's calls, lock = owner symlink of ${SHORT_OWNER.length} B (as now)`]: gcCalls('symlink'),
  "gc's calls, lock = hard link to one owner file": gcCalls('link'),
  "gc's calls without the lock (rename + removeTree)": gcCalls(undefined),
}

// The block device under BASE, for /proc/diskstats.
const device = (() => {
  const r = spawnSync('df', ['--output=source', BASE], { encoding: 'utf8' })
  const src = (r.stdout ?? '').trim().split('\n')[1] ?? ''
  return src.startsWith('/dev/') ? path.basename(src) : undefined
})()
const diskstats = () => {
  if (!device) return undefined
  const line = fs.readFileSync('/proc/diskstats', 'utf8').split('\n').map((l) => l.trim().split(/\s+/)).find((f) => f[2] === device)
  // Fields (0-based): 3 reads completed, 7 writes completed, 14 discards completed.
  return line ? { reads: Number(line[3]), writes: Number(line[7]), discards: Number(line[14] ?? 0) } : undefined
}

if (!fs.statSync(BASE, { throwIfNoEntry: false })?.isDirectory()) {
  console.error(`gc-anatomy: --base ${BASE} is not a directory; give one where the populations may be built (default: ${os.tmpdir()})`)
  process.exit(2)
}

const names = Object.keys(VARIANTS).filter((n) => !ONLY || ONLY.split('|').some((o) => n.startsWith(o)))
const base = fs.mkdtempSync(path.join(BASE, 'podctl-gc-anatomy-'))
const times = Object.fromEntries(names.map((n) => [n, []]))
const io = Object.fromEntries(names.map((n) => [n, { reads: 0, writes: 0, discards: 0 }]))
try {
  for (let r = 0; r < REPS; r++) {
    // One population per variant, built pod by pod in turn so that all are
    // equally fresh in the page cache.
    const dirs = names.map((_, i) => path.join(base, `r${r}-${i}`))
    await buildExitedPopulations(dirs, N, { label: `gc-anatomy rep ${r + 1}/${REPS}` })
    for (let k = 0; k < names.length; k++) {
      const i = (k + r) % names.length // rotate the order
      spawnSync('sync')
      const a = diskstats()
      const t0 = process.hrtime.bigint()
      VARIANTS[names[i]](dirs[i])
      times[names[i]].push(Number(process.hrtime.bigint() - t0) / 1e6)
      spawnSync('sync')
      const b = diskstats()
      if (a && b) for (const f of ['reads', 'writes', 'discards']) io[names[i]][f] += b[f] - a[f]
      const left = fs.readdirSync(path.join(dirs[i], 'pods', 'run')).length
      if (left !== 0) throw new Error(`${names[i]} left ${left} pods`)
    }
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true })
  }
} finally {
  fs.rmSync(base, { recursive: true, force: true })
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
const floorName = names.find((n) => n.startsWith('rm -rf'))
const floor = floorName ? median(times[floorName]) : NaN
const w = Math.max(...names.map((n) => n.length))
console.log(`${N} exited pods per run, ${REPS} runs each, under ${BASE}${device ? ` (${device})` : ''}; medians`)
for (const n of names) {
  const m = median(times[n])
  const per = (f) => (io[n][f] / N / REPS).toFixed(2)
  console.log(
    `${n.padEnd(w)}  ${m.toFixed(0).padStart(7)} ms  ${Number.isFinite(floor) ? `x${(m / floor).toFixed(2)}` : ''}` +
      `  [${times[n].map((x) => x.toFixed(0)).join(', ')}]` +
      (device ? `  per pod: ${per('discards')} discards, ${per('reads')} reads, ${per('writes')} writes` : ''),
  )
}
