#!/usr/bin/env node
// podctl's run benchmark. Part of `npm run bench`
// (bench/run.js calls it at the end; BENCH_RUN=0 skips it), and runnable
// alone: `node bench/run-bench.js` (build dist/ first: npx tsc -p tsconfig.json).
//
// Measures, in a temp data dir:
//   1. `podctl run -- /bin/true` end to end, beside the floor
//      `node -e "require('child_process').spawnSync('/bin/true')"`, in
//      interleaved rounds (target: median ≤ 1.5 × the floor's median). For
//      the analysis, also `node -e 0` and `podctl prepare -- /bin/true`.
//   2. The time from SIGKILL of a detached pod's supervisor until the pod
//      reads `exited` (target ≤ 1 s, median far lower), two ways, in
//      interleaved trials:
//        - library: the bench polls the pod in-process, without pause,
//          with the library's own Pod.refresh() + state (what `status` does);
//        - CLI: the bench runs `podctl status UUID` right after the kill,
//          again until it prints state=exited; the time includes the
//          command's own start-up.
//      It also checks that the app (`sleep 300`) dies without any podctl
//      command touching the pod (the guardian's job) and how long that takes.
//   3. `podctl run --detach -- sleep 300`, N pods back to back: pods/s,
//      beside N × `node -e 0`; then `podctl stop` of all N in one command
//      and `podctl gc --grace-period 0s` (both for information).
// Nothing is left behind: every pod is stopped and collected, every
// recorded app pid is checked, and the temp dir is removed.
//
// Environment (names follow bench/run.js):
//   BENCH_RUN=0              skip all of this in bench/run.js
//   BENCH_RUN_REPS=11        rounds of measurement 1 (default BENCH_REPS, else 11; odd)
//   BENCH_RUN_PER_ROUND=3    runs of each command per round (default BENCH_PER_ROUND, else 3; odd)
//   BENCH_KILL_TRIALS=11     trials of each kind in measurement 2 (odd)
//   BENCH_DETACH_N=100       pods per throughput run
//   BENCH_DETACH_REPS=1      throughput runs (odd)
//   BENCH_KEEP=1             keep the temp data dir (standalone only)
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { Samples, median, round, syncFs, timeSpawn } from './lib/measure.js'
import { formatMarkdown, formatTable, machineInfo } from './lib/report.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const BIN = path.resolve(here, '..', 'bin', 'podctl')
const NODE = process.execPath
const TRUE_FLOOR = "require('child_process').spawnSync('/bin/true')"
// The least any detached start can cost when the supervisor is a new Node
// process: Node starts a detached Node child and waits for one line from it
// on fd 3 (as podctl run --detach does), then exits.
const TWO_NODES =
  "const c=require('child_process').spawn(process.execPath,['-e','require(\\'fs\\').writeSync(3,\\'ok\\\\n\\')'],{detached:true,stdio:['ignore','ignore','ignore','pipe']});" +
  "c.stdio[3].once('data',()=>{c.unref();process.exit(0)})"

/** The commit measured, and whether lib/ had uncommitted changes (dist/ is built from the working tree). */
export const gitInfo = () => {
  const git = (args) => spawnSync('git', args, { cwd: here, encoding: 'utf8' })
  const head = git(['rev-parse', '--short', 'HEAD'])
  if (head.status !== 0) return undefined
  const dirty = git(['status', '--porcelain', '--', '../lib'])
  return { commit: head.stdout.trim(), lib_dirty: dirty.stdout.trim() !== '' }
}

const odd = (n) => (n % 2 === 0 ? n + 1 : n)
const envInt = (name, fallback) => {
  const v = process.env[name]
  if (v === undefined || v === '') return fallback
  const n = Number(v.replace(/_/g, ''))
  if (!Number.isInteger(n) || n <= 0) throw new Error(`bench: bad ${name}=${JSON.stringify(v)}: expected a positive whole number`)
  return n
}

export const runConfig = () => ({
  reps: odd(envInt('BENCH_RUN_REPS', envInt('BENCH_REPS', 11))),
  perRound: odd(envInt('BENCH_RUN_PER_ROUND', envInt('BENCH_PER_ROUND', 3))),
  killTrials: odd(envInt('BENCH_KILL_TRIALS', 11)),
  detachN: envInt('BENCH_DETACH_N', 100),
  detachReps: odd(envInt('BENCH_DETACH_REPS', 1)),
})

const hr = () => Number(process.hrtime.bigint()) / 1e6

/** Field 3 (state) and 22 (start time) of /proc/<pid>/stat, or undefined when gone. */
const procStat = (pid) => {
  let text
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'latin1')
  } catch {
    return undefined
  }
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ')
  return { state: rest[0], start: rest[19] }
}
/** Whether `pid` is still the live (not zombie) process that had start time `start`. */
const alive = (pid, start) => {
  const st = procStat(pid)
  return st !== undefined && st.start === start && st.state !== 'Z' && st.state !== 'X'
}

const sleepMs = (ms) => new Promise((r) => setTimeout(r, ms))

/**
 * Runs the run benchmarks in `dataDir` (created if needed). Returns
 * { rows, notes, results }: table rows in bench/lib/report.js's shape,
 * lines of text to print under the table, and everything for results.json.
 */
export const runBenchmarks = async ({ dataDir, log = (s) => process.stderr.write(`bench: ${s}\n`), config = runConfig() } = {}) => {
  const apps = new Map()
  // Leave no supervisor or app behind, whatever goes wrong: also on Ctrl-C
  // (before bench/run.js's own handler removes the data dir and exits).
  const onSignal = () => emergencyStop(dataDir, apps, log)
  for (const sig of ['SIGINT', 'SIGTERM']) process.prependListener(sig, onSignal)
  try {
    return await measure(dataDir, log, config, apps)
  } catch (er) {
    emergencyStop(dataDir, apps, log)
    throw er
  } finally {
    for (const sig of ['SIGINT', 'SIGTERM']) process.removeListener(sig, onSignal)
  }
}

/** Stops every running pod in `dataDir` at once (SIGKILL) and kills every app pid we recorded. */
const emergencyStop = (dataDir, apps, log) => {
  try {
    const r = timeSpawn(NODE, [BIN, '--dir', dataDir, 'list', '--state', 'running', '--format', 'json'])
    const uuids = r.status === 0 ? JSON.parse(r.stdout).map((p) => p.uuid) : []
    if (uuids.length > 0) {
      log(`cleaning up: stop --force of ${uuids.length} running pods`)
      timeSpawn(NODE, [BIN, '--dir', dataDir, 'stop', '--force', ...uuids])
    }
  } catch (er) {
    log(`cleaning up: ${er.message}`)
  }
  for (const [pid, start] of apps) {
    if (!alive(pid, start)) continue
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // gone
    }
  }
}

const measure = async (dataDir, log, config, apps) => {
  const { podFromUUIDString } = await import('../dist/lib/index.js')
  const podctl = (args) => timeSpawn(NODE, [BIN, '--dir', dataDir, ...args])
  const must = (what, r) => {
    if (r.status !== 0) throw new Error(`${what} exited with ${r.status ?? r.signal}:\n${r.stderr.slice(0, 2000)}`)
    return r
  }
  const samples = new Samples()
  const notes = []
  const results = { config, git: gitInfo() }
  // `apps`: every app pid we ever saw, with its start time: checked at the end.
  const load = [{ at: 'start', loadavg: os.loadavg().map((x) => round(x, 2)) }]

  const startDetached = () => {
    const r = must('podctl run --detach', podctl(['run', '--detach', '--', 'sleep', '300']))
    const uuid = r.stdout.trim()
    if (!/^[0-9a-f-]{36}$/.test(uuid)) throw new Error(`run --detach printed ${JSON.stringify(r.stdout)}`)
    return { uuid, ms: r.ms }
  }
  /** Waits until the pod's supervisor is ready and its app has a pid; returns the record. */
  const waitReady = async (uuid, timeoutMs = 10_000) => {
    const pod = podFromUUIDString(dataDir, uuid)
    const deadline = Date.now() + timeoutMs
    for (;;) {
      pod.refresh()
      const rec = pod.record()
      const app = rec.apps[0]
      if (pod.isSupervisorReady() && rec.pid !== null && app?.pid != null && app.pid_start) {
        apps.set(app.pid, app.pid_start)
        return { pod, rec, app }
      }
      if (pod.state !== 'running') throw new Error(`pod ${uuid} is ${pod.state} before it was ready`)
      if (Date.now() > deadline) throw new Error(`pod ${uuid} not ready after ${timeoutMs} ms`)
      await sleepMs(5)
    }
  }
  const supervisorStart = (pid) => procStat(pid)?.start

  // ---- 1. run -- /bin/true against the floor ----------------------------
  log(`run -- /bin/true: ${config.reps} rounds × ${config.perRound} of podctl run, its floor, node -e 0 and podctl prepare`)
  // Untimed warm-up: every file these commands touch is in the page cache.
  must('warm-up', timeSpawn(NODE, ['-e', TRUE_FLOOR]))
  must('warm-up', podctl(['run', '--', '/bin/true']))
  must('warm-up', podctl(['prepare', '--', '/bin/true']))
  const timed = {
    floor: () => must('node floor', timeSpawn(NODE, ['-e', TRUE_FLOOR])),
    run: () => {
      const r = must('podctl run -- /bin/true', podctl(['run', '--', '/bin/true']))
      if (r.stdout !== '' || r.stderr !== '') throw new Error(`podctl run -- /bin/true printed ${JSON.stringify(r.stdout + r.stderr)}`)
      return r
    },
    node0: () => must('node -e 0', timeSpawn(NODE, ['-e', '0'])),
    prepare: () => must('podctl prepare', podctl(['prepare', '--', '/bin/true'])),
  }
  const names = { floor: 'node spawnSync(/bin/true)', run: 'run -- /bin/true', node0: 'node -e 0', prepare: 'prepare -- /bin/true' }
  const order = Object.keys(timed)
  for (let r = 0; r < config.reps; r++) {
    load.push({ at: `run round ${r + 1}`, loadavg: os.loadavg().map((x) => round(x, 2)) })
    for (let j = 0; j < config.perRound; j++) {
      // Rotate the order so that no command always follows the same one.
      for (let i = 0; i < order.length; i++) {
        const k = order[(i + r + j) % order.length]
        syncFs()
        samples.add(names[k], undefined, timed[k]().ms)
      }
    }
  }
  // The prepared pods and exited pods made above go now, untimed.
  must('gc', podctl(['gc', '--grace-period', '0s', '--expire-prepared', '0s']))

  // ---- 2. SIGKILL of the supervisor → exited ----------------------------
  log(`SIGKILL → exited: ${config.killTrials} trials polling through the library, ${config.killTrials} through podctl status, interleaved`)
  const kill = { lib: [], cli: [], cliFloor: [], app: [], cliPolls: [], libPolls: [], survivors: [] }
  for (let t = 0; t < 2 * config.killTrials; t++) {
    const how = t % 2 === 0 ? 'lib' : 'cli'
    const { uuid } = startDetached()
    const { pod, rec, app } = await waitReady(uuid)
    const sup = rec.pid
    const supStart = supervisorStart(sup)
    if (!pod.locked || pod.state !== 'running') throw new Error(`pod ${uuid} is ${pod.state} before the kill`)
    if (!supStart) throw new Error(`supervisor ${sup} of ${uuid} is not there`)
    await sleepMs(20) // let the supervisor settle into its wait
    if (how === 'lib') {
      let polls = 0
      let appGone
      const t0 = hr()
      process.kill(sup, 'SIGKILL')
      let exitedAt
      // Tight poll: the pod's state as the library derives it.
      for (;;) {
        polls++
        pod.refresh()
        if (pod.state === 'exited') {
          exitedAt = hr()
          break
        }
        if (hr() - t0 > 5_000) throw new Error(`pod ${uuid} still ${pod.state} 5 s after SIGKILL of its supervisor`)
      }
      // The app must die without any podctl command touching the pod.
      for (;;) {
        if (!alive(app.pid, app.pid_start)) {
          appGone = hr()
          break
        }
        if (hr() - t0 > 2_000) break
        await sleepMs(1)
      }
      kill.lib.push(exitedAt - t0)
      kill.libPolls.push(polls)
      if (appGone === undefined) {
        kill.survivors.push({ uuid, pid: app.pid })
        log(`trial ${t + 1}: app ${app.pid} of ${uuid} still alive 2 s after the kill`)
      } else kill.app.push(appGone - t0)
    } else {
      const t0 = hr()
      process.kill(sup, 'SIGKILL')
      let polls = 0
      for (;;) {
        polls++
        const r = must('status', podctl(['status', uuid]))
        if (/^state=exited$/m.test(r.stdout)) {
          kill.cli.push(hr() - t0)
          break
        }
        if (hr() - t0 > 5_000) throw new Error(`podctl status still says ${JSON.stringify(r.stdout)} 5 s after the kill`)
      }
      kill.cliPolls.push(polls)
      // The same command once more on the now exited pod: its own cost.
      const again = must('status', podctl(['status', uuid]))
      if (!/^state=exited$/m.test(again.stdout)) throw new Error(`podctl status printed ${JSON.stringify(again.stdout)} after exited`)
      kill.cliFloor.push(again.ms)
    }
    if (alive(sup, supStart)) throw new Error(`supervisor ${sup} survived SIGKILL`)
  }
  results.kill = {
    library_ms: kill.lib.map((x) => round(x, 3)),
    library_polls: kill.libPolls,
    cli_ms: kill.cli.map((x) => round(x, 1)),
    cli_status_runs: kill.cliPolls,
    status_of_exited_pod_ms: kill.cliFloor.map((x) => round(x, 1)),
    app_dead_ms: kill.app.map((x) => round(x, 2)),
    survivors: kill.survivors,
  }
  must('gc', podctl(['gc', '--grace-period', '0s']))

  // ---- 3. run --detach throughput ---------------------------------------
  const N = config.detachN
  const thr = []
  for (let k = 0; k < config.detachReps; k++) {
    log(`run --detach throughput ${k + 1}/${config.detachReps}: ${N} × node -e 0, then ${N} pods back to back`)
    load.push({ at: `detach ${k + 1}`, loadavg: os.loadavg().map((x) => round(x, 2)) })
    syncFs()
    let t0 = hr()
    for (let i = 0; i < N; i++) must('node -e 0', timeSpawn(NODE, ['-e', '0']))
    const floorMs = hr() - t0
    syncFs()
    t0 = hr()
    for (let i = 0; i < N; i++) must('two-node floor', timeSpawn(NODE, ['-e', TWO_NODES]))
    const twoMs = hr() - t0
    syncFs()
    const uuids = []
    const each = []
    t0 = hr()
    for (let i = 0; i < N; i++) {
      const { uuid, ms } = startDetached()
      uuids.push(uuid)
      each.push(ms)
    }
    const detachMs = hr() - t0
    // All of them running? (untimed)
    const listed = JSON.parse(must('list', podctl(['list', '--state', 'running', '--format', 'json'])).stdout)
    const running = listed.filter((p) => uuids.includes(p.uuid)).length
    for (const u of uuids) await waitReady(u)
    const rss = rssOfSupervisors(dataDir, uuids, podFromUUIDString)
    syncFs()
    const stop = podctl(['stop', ...uuids])
    const stopped = stop.stdout.split('\n').filter((l) => uuids.includes(l.trim())).length
    syncFs()
    const gc = podctl(['gc', '--grace-period', '0s'])
    const deleted = gc.stdout.split('\n').filter((l) => l.startsWith('deleted ')).length
    const run = {
      n: N,
      floor_ms: round(floorMs),
      two_node_floor_ms: round(twoMs),
      detach_ms: round(detachMs),
      pods_per_s: round((N * 1000) / detachMs, 2),
      floor_per_s: round((N * 1000) / floorMs, 2),
      per_pod_ms: { median: round(median(each)), min: round(Math.min(...each)), max: round(Math.max(...each)), first: round(each[0]), last: round(each.at(-1)) },
      running_after: running,
      supervisor_rss_mib: rss,
      stop_ms: round(stop.ms),
      stop_exit: stop.status ?? stop.signal,
      stopped,
      gc_ms: round(gc.ms),
      gc_exit: gc.status ?? gc.signal,
      deleted,
      stderr: (stop.stderr + gc.stderr).slice(0, 2000),
    }
    thr.push(run)
    log(
      `  ${N} × node -e 0: ${round(floorMs)} ms; ${N} × run --detach: ${round(detachMs)} ms (${run.pods_per_s} pods/s), ${running} running; ` +
        `stop: ${round(stop.ms)} ms (exit ${run.stop_exit}, ${stopped} stopped); gc: ${round(gc.ms)} ms (exit ${run.gc_exit}, ${deleted} deleted)`,
    )
    if (run.stop_exit !== 0 || stopped !== N || running !== N || deleted !== N) log(`  something is off:\n${run.stderr}`)
  }
  results.throughput = thr

  // ---- leftovers -----------------------------------------------------------
  await sleepMs(200)
  const left = [...apps].filter(([pid, start]) => alive(pid, start))
  for (const [pid] of left) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // gone meanwhile
    }
  }
  results.leftover_apps = left.map(([pid]) => pid)
  results.apps_seen = apps.size
  load.push({ at: 'end', loadavg: os.loadavg().map((x) => round(x, 2)) })
  results.load = load

  // ---- the table -----------------------------------------------------------
  const rows = []
  const floor = samples.median(names.floor, undefined)
  const node0 = samples.median(names.node0, undefined)
  const runMs = samples.median(names.run, undefined)
  const prepMs = samples.median(names.prepare, undefined)
  rows.push({ op: 'node -e 0', median: node0, floorName: '(info)', verdict: '' })
  rows.push({ op: 'node -e spawnSync(/bin/true)', median: floor, floorName: '(floor)', verdict: '' })
  rows.push({ op: 'prepare -- /bin/true', median: prepMs, floorName: 'node spawnSync(/bin/true)', floor, ratio: prepMs / floor, target: '(info)', verdict: '' })
  rows.push({
    op: 'run -- /bin/true',
    median: runMs,
    floorName: 'node spawnSync(/bin/true)',
    floor,
    ratio: runMs / floor,
    target: '<= 1.50',
    verdict: runMs / floor <= 1.5 ? 'PASS' : 'MISS',
  })
  const libMed = median(kill.lib)
  const libMax = Math.max(...kill.lib)
  const cliMed = median(kill.cli)
  const cliMax = Math.max(...kill.cli)
  // "≤ 1 s, median far lower": every trial within 1 s, the median within a quarter of it.
  const killVerdict = (med, max) => (max <= 1000 && med <= 250 ? 'PASS' : 'MISS')
  const statusFloor = median(kill.cliFloor)
  rows.push({ op: 'SIGKILL supervisor -> exited (library)', n: kill.lib.length, median: libMed, floorName: `max ${libMax.toFixed(2)} ms`, target: 'max <= 1000, median <= 250', verdict: killVerdict(libMed, libMax) })
  rows.push({ op: 'status UUID (exited pod)', n: kill.cliFloor.length, median: statusFloor, floorName: '(floor)', verdict: '' })
  rows.push({ op: 'SIGKILL supervisor -> podctl status exited', n: kill.cli.length, median: cliMed, floorName: `status; max ${cliMax.toFixed(1)} ms`, floor: statusFloor, ratio: cliMed / statusFloor, target: 'max <= 1000, median <= 250', verdict: killVerdict(cliMed, cliMax) })
  rows.push({ op: 'SIGKILL supervisor -> app killed (guardian)', n: kill.app.length, median: median(kill.app), floorName: `max ${kill.app.length ? Math.max(...kill.app).toFixed(1) : '-'} ms`, target: '(info)', verdict: kill.survivors.length ? `${kill.survivors.length} SURVIVED` : '' })
  const dMed = median(thr.map((x) => x.detach_ms))
  const fMed = median(thr.map((x) => x.floor_ms))
  const twoMed = median(thr.map((x) => x.two_node_floor_ms))
  rows.push({ op: `${N} x node -e 0`, n: N, median: fMed, floorName: '(floor)', verdict: '' })
  rows.push({ op: `${N} x node starting a detached node`, n: N, median: twoMed, floorName: '(floor)', verdict: '' })
  rows.push({ op: `${N} x run --detach -- sleep 300`, n: N, median: dMed, floorName: `${N} x node -e 0`, floor: fMed, ratio: dMed / fMed, target: '(info)', verdict: '' })
  rows.push({ op: `${N} x run --detach -- sleep 300`, n: N, median: dMed, floorName: `${N} x node + detached node`, floor: twoMed, ratio: dMed / twoMed, target: '(info)', verdict: '' })
  rows.push({ op: `stop (${N} pods, one command)`, n: N, median: median(thr.map((x) => x.stop_ms)), floorName: '-', target: '(info)', verdict: thr.every((x) => x.stop_exit === 0 && x.stopped === N) ? '' : 'FAILED' })
  rows.push({ op: `gc --grace-period 0s (${N} pods)`, n: N, median: median(thr.map((x) => x.gc_ms)), floorName: '-', target: '(info)', verdict: thr.every((x) => x.gc_exit === 0 && x.deleted === N) ? '' : 'FAILED' })

  const perS = thr.map((x) => x.pods_per_s)
  notes.push(
    `medians of ${config.reps} rounds × ${config.perRound} (${config.reps * config.perRound} samples each) for node -e 0, the floor, prepare and run, interleaved; sync(1) before each`,
    `SIGKILL -> exited: library ${kill.lib.map((x) => x.toFixed(2)).join(', ')} ms (${median(kill.libPolls)} polls median); ` +
      `podctl status ${kill.cli.map((x) => x.toFixed(0)).join(', ')} ms (status runs needed: ${kill.cliPolls.join(',')}); status of the exited pod alone ${kill.cliFloor.map((x) => x.toFixed(0)).join(', ')} ms`,
    `app killed by the guardian after ${kill.app.map((x) => x.toFixed(1)).join(', ')} ms; ${kill.survivors.length} app(s) survived their supervisor`,
    `run --detach: ${perS.join(', ')} pods/s over ${N} pods (node -e 0: ${thr.map((x) => x.floor_per_s).join(', ')}/s; node + detached node: ${thr.map((x) => round((N * 1000) / x.two_node_floor_ms, 2)).join(', ')}/s); ` +
      `per pod ${thr.map((x) => `median ${x.per_pod_ms.median} ms, first ${x.per_pod_ms.first}, last ${x.per_pod_ms.last}, max ${x.per_pod_ms.max}`).join('; ')}; ` +
      `${thr.map((x) => x.running_after).join(', ')} running afterwards; supervisor RSS ${thr.map((x) => (x.supervisor_rss_mib ? `${x.supervisor_rss_mib.median} MiB median` : '?')).join(', ')}`,
    `leftover app processes after everything: ${results.leftover_apps.length} (of ${apps.size} seen)`,
  )
  results.table = rows.map((r) => ({ ...r, median: round(r.median, 2), floor: round(r.floor), ratio: round(r.ratio, 3) }))
  results.table_markdown = formatMarkdown(rows)
  results.samples = samples.toJSON()
  return { rows, notes, results }
}

/** Resident size of the supervisors of `uuids` (MiB): median and sum. */
const rssOfSupervisors = (dataDir, uuids, podFromUUIDString) => {
  const sizes = []
  for (const u of uuids) {
    try {
      const pid = podFromUUIDString(dataDir, u).record().pid
      const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'latin1'))
      if (m) sizes.push(Number(m[1]) / 1024)
    } catch {
      // gone
    }
  }
  if (sizes.length === 0) return undefined
  return { median: round(median(sizes)), total: round(sizes.reduce((a, b) => a + b, 0)) }
}

export const printRunTable = (out, { rows, notes }) => {
  out.write(`\n${formatTable(rows)}`)
  for (const n of notes) out.write(`${n}\n`)
}

// ---- standalone ----------------------------------------------------------
if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-run-bench-'))
  const log = (s) => process.stderr.write(`bench: ${s}\n`)
  const cleanup = () => {
    if (process.env.BENCH_KEEP === '1') log(`kept ${root}`)
    else fs.rmSync(root, { recursive: true, force: true })
  }
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
      cleanup()
      process.exit(130)
    })
  }
  try {
    const started = Date.now()
    const machine = machineInfo(os.tmpdir())
    const res = await runBenchmarks({ dataDir: path.join(root, 'data'), log })
    process.stdout.write(
      `\npodctl run bench — ${new Date().toISOString()}\n` +
        `machine: ${machine.cpus} CPUs (${machine.cpu_model}), ${machine.memory_mib} MiB, node ${machine.node}, ${machine.kernel}, ${machine.tmpdir} on ${machine.filesystem?.type ?? '?'}\n` +
        `1-minute load average: ${res.results.load.map((l) => l.loadavg[0]).join(' ')}\n` +
        `commit ${res.results.git ? `${res.results.git.commit}${res.results.git.lib_dirty ? ' (lib/ has uncommitted changes)' : ''}` : '?'}\n`,
    )
    printRunTable(process.stdout, res)
    const work = path.join(here, '.work')
    fs.mkdirSync(work, { recursive: true })
    fs.writeFileSync(path.join(work, 'run-results.json'), `${JSON.stringify({ date: new Date().toISOString(), duration_s: round((Date.now() - started) / 1000), machine, ...res.results }, null, 2)}\n`)
    log(`results in bench/.work/run-results.json; took ${((Date.now() - started) / 1000).toFixed(0)} s`)
  } catch (er) {
    console.error(`bench: crashed: ${er instanceof Error ? er.stack : er}`)
    process.exitCode = 1
  } finally {
    cleanup()
  }
}
