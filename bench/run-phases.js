#!/usr/bin/env node
// Where `podctl run -- /bin/true` spends its time, phase by phase, in a
// fresh process per run, making the calls lib/cli/main.ts and
// lib/cli/actions/run.ts make, in the same order, from dist/lib/ (ES
// modules; bin/podctl runs the bundles, so module loading costs differ).
// Used for the run section of Documentation/performance.md. Build dist/ first.
//
//   node bench/run-phases.js [--reps 11]
//
// Each child also times, after the run, a few operations on their own
// (one /proc scan for escaped processes, one spawn of /bin/true, one
// pod.json write), to attribute the supervisor's time. Uses a temp data
// dir, removed at the end.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn, spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { flag, option } from './lib/options.js'

const self = fileURLToPath(import.meta.url)

const child = async (dataDir) => {
  const marks = [['node start → script', performance.now()]]
  const mark = (name) => marks.push([name, performance.now()])
  const { buildProgram } = await import('../dist/lib/cli/program.js')
  mark('import the CLI (commander and every command declaration)')
  const ctx = { io: { out() {}, err() {}, errIsTTY: false }, state: { exitCode: 0, debug: false } }
  buildProgram(ctx)
  mark('build the commander program')
  const { manifestFromInputs } = await import('../dist/lib/cli/pod-input.js')
  mark('import pod-input (manifest, prepare, pod core)')
  const manifest = manifestFromInputs({}, ['/bin/true'])
  mark('build + validate the manifest, PATH check')
  const [{ createPod }] = await Promise.all([import('../dist/lib/pod/prepare.js'), import('../dist/lib/pod/pod.js')])
  mark('import prepare + pod (cached)')
  createRequire(import.meta.url)('proper-lockfile/lib/lockfile.js')
  mark('load proper-lockfile (lazy, on the first lock)')
  const pod = await createPod(dataDir, manifest)
  mark('createPod (lock, dirs, manifest, pod.json, fsyncs)')
  pod.toRun()
  mark('toRun (rename prepare → run, fsyncs)')
  const [{ Supervisor }, { terminalOutput }] = await Promise.all([import('../dist/lib/run/supervisor.js'), import('../dist/lib/run/terminal-output.js')])
  mark('import supervisor, guardian, logs')
  const code = await new Supervisor(pod, manifest, { output: terminalOutput(false) }).run()
  mark('Supervisor.run (guardian, spawn, wait, records)')
  if (code !== 0) throw new Error(`exit code ${code}`)
  // The same operations on their own, to attribute Supervisor.run's time.
  const { processesWithEnv } = await import('../dist/lib/proc/escaped.js')
  const extra = []
  const procs = fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length
  let t = performance.now()
  processesWithEnv([`PODCTL_POD_UUID=${pod.uuid}`, 'PODCTL_APP_NAME=true'])
  extra.push([`  of which: a full scan for escaped processes (${procs} processes)`, performance.now() - t])
  // The supervisor passes the app's start time: only younger processes' environments are read.
  const { procStart } = await import('../dist/lib/proc/identity.js')
  t = performance.now()
  processesWithEnv([`PODCTL_POD_UUID=${pod.uuid}`, 'PODCTL_APP_NAME=true'], { startedSince: procStart(process.pid) })
  extra.push(['  of which: the scan as the supervisor makes it', performance.now() - t])
  t = performance.now()
  await new Promise((resolve, reject) => {
    const c = spawn('/bin/true', [], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    c.once('error', reject)
    c.once('close', resolve)
  })
  extra.push(['  of which: spawn /bin/true and wait (as an app)', performance.now() - t])
  t = performance.now()
  const { writeRecord } = await import('../dist/lib/pod/record.js')
  writeRecord(pod.path, pod.record())
  extra.push(['  of which: one pod.json write', performance.now() - t])
  const phases = marks.map(([name, tm], i) => [name, i === 0 ? tm : tm - marks[i - 1][1]])
  process.stderr.write(JSON.stringify({ phases, extra, end: performance.now() }))
}

const main = async () => {
  const reps = Number(option('--reps', 11))
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-run-phases-'))
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
  try {
    const runs = []
    const walls = []
    const floors = []
    for (let r = 0; r < reps; r++) {
      spawnSync('sync')
      let t0 = process.hrtime.bigint()
      spawnSync(process.execPath, ['-e', "require('child_process').spawnSync('/bin/true')"])
      floors.push(Number(process.hrtime.bigint() - t0) / 1e6)
      spawnSync('sync')
      t0 = process.hrtime.bigint()
      const c = spawnSync(process.execPath, [self, '--run-child', '--dir', tmp], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' })
      walls.push(Number(process.hrtime.bigint() - t0) / 1e6)
      if (c.status !== 0) throw new Error(c.stderr)
      runs.push(JSON.parse(c.stderr))
    }
    console.log(`podctl run -- /bin/true, phase by phase (medians of ${reps} fresh processes):`)
    let sum = 0
    for (let i = 0; i < runs[0].phases.length; i++) {
      const m = median(runs.map((r) => r.phases[i][1]))
      sum += m
      console.log(`  ${runs[0].phases[i][0].padEnd(56)} ${m.toFixed(1).padStart(7)} ms`)
      if (runs[0].phases[i][0].startsWith('Supervisor.run')) {
        for (let k = 0; k < runs[0].extra.length; k++) {
          console.log(`  ${runs[0].extra[k][0].padEnd(56)} ${median(runs.map((r) => r.extra[k][1])).toFixed(1).padStart(7)} ms`)
        }
      }
    }
    const ends = runs.map((r, k) => walls[k] - r.end)
    console.log(`  ${'exit (wall − last mark, incl. the extra timings)'.padEnd(56)} ${median(ends).toFixed(1).padStart(7)} ms`)
    console.log(`  ${'whole process, wall'.padEnd(56)} ${median(walls).toFixed(1).padStart(7)} ms`)
    console.log(`  ${'floor: node -e spawnSync(/bin/true), wall'.padEnd(56)} ${median(floors).toFixed(1).padStart(7)} ms`)
    console.log(`  (sum of the phase medians: ${sum.toFixed(1)} ms)`)
  } finally {
    spawnSync(process.execPath, [path.join(path.dirname(self), '..', 'bin', 'podctl'), '--dir', tmp, 'gc', '--grace-period', '0s'])
    fs.rmSync(tmp, { recursive: true, force: true })
  }
}

if (flag('--run-child')) await child(option('--dir'))
else await main()
