#!/usr/bin/env node
// podctl's benchmark: `npm run bench`.
//
// Builds populations of N pods (half prepared, half exited) through the
// library in a temp data dir, and measures, in one run, the medians of
//   podctl list --format json, podctl status UUID, podctl rm UUID,
//   podctl version, and podctl gc --grace-period 0s over exited pods,
// each beside a floor measured in the same run: `node -e 0`, `xargs cat`
// of one file per pod (its manifest), `rm -rf` of the same pod dirs.
// Prints a table and writes bench/.work/results.json. Missing a target is a
// result, not a failure: the process exits 0 unless something crashed.
//
// Environment:
//   BENCH_SIZES=10,1000,10000   population sizes (default 10,1000,10000)
//   BENCH_REPS=11               rounds: repetitions of cat and list (odd)
//   BENCH_PER_ROUND=3           runs per round of node -e 0, version, status
//                               and rm (odd; 3 × 11 = 33 samples each)
//   BENCH_GC_REPS=3             repetitions of the gc measurement (odd)
//   BENCH_GC_N=10000            exited pods per gc run (default: 10,000, or
//                               the largest size when BENCH_SIZES stays below)
//   BENCH_IO_REPS=7             repetitions of the I/O style measurement
//   BENCH_STREAM_REPS=5         repetitions of the long-line output measurement
//                               (bench/stream.js); 0 skips it
//   BENCH_REMOVE_REPS=1         repetitions of the tree removal comparison
//                               (bench/remove-styles.js) over BENCH_GC_N pods;
//                               0 skips it
//   BENCH_CONTROLLER=0          skip the controller benchmark (bench/controller.js)
//   BENCH_FLEET=0               skip the fleet benchmarks (bench/fleet.js and
//                               bench/fleet-claims.js: a 3-member etcd;
//                               skipped without the etcd binary)
//   BENCH_KEEP=1                keep the temp data dirs (prints where)
//   BENCH_ISOLATION=0           skip the isolation benchmark (bench/isolation.js)
//   BENCH_NETWORK=0             skip the network benchmark (bench/network.js:
//                               a default-network pod's namespace, ADD and DEL)
//   BENCH_NETWORK_PODS=0        skip the network pods benchmark (bench/network-pods.js:
//                               run -- /bin/true on bridge against network none,
//                               and BENCH_NETWORK_PODS_N=250 bridge pods at once)
//   BENCH_IMAGES=0              skip the image benchmark (bench/images.js:
//                               import vs tar -x, peak memory of a ~500 MB
//                               import, renders found again, disk of 100
//                               app roots, run --image of a 10 MB and a
//                               500 MB image, disk of 100 pods of one
//                               image); BENCH_IMAGES_REPS=3 its rounds
//   BENCH_RUN=0                 skip the run benchmark (bench/run-bench.js:
//                               run -- /bin/true, SIGKILL of a supervisor,
//                               run --detach throughput; its own variables
//                               are described there)
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Samples, round, syncFs, timeSpawn } from './lib/measure.js'
import { buildExitedPopulations, buildPopulation, createExited, manifestPath, podDirPath } from './lib/population.js'
import { formatMarkdown, formatTable, machineInfo } from './lib/report.js'
import { formatIoTable, measureIoStyles } from './io-style.js'
import { formatRemoveTable, measureRemoveStyles } from './remove-styles.js'
import { formatStreaming, measureStreaming } from './stream.js'
import { controllerRows, formatControllerTable, measureController } from './controller.js'
import { printRunTable, runBenchmarks } from './run-bench.js'
import { measureIsolation } from './isolation.js'
import { measureNetwork } from './network.js'
import { measureNetworkPods } from './network-pods.js'
import { measureImages } from './images.js'

const here = path.dirname(fileURLToPath(import.meta.url))
const BIN = path.resolve(here, '..', 'bin', 'podctl')
const WORK = path.join(here, '.work')
const NODE = process.execPath

const odd = (n) => (n % 2 === 0 ? n + 1 : n)
const intList = (s) => s.split(',').map((x) => Number(x.trim().replace(/_/g, ''))).filter((x) => Number.isInteger(x) && x > 0)

const SIZES = [...new Set(intList(process.env.BENCH_SIZES ?? '10,1000,10000'))].sort((a, b) => a - b)
const REPS = odd(Number(process.env.BENCH_REPS ?? 11))
const GC_REPS = odd(Number(process.env.BENCH_GC_REPS ?? 3))
const GC_N = Number(process.env.BENCH_GC_N ?? (SIZES.includes(10_000) || Math.max(...SIZES) > 10_000 ? 10_000 : Math.max(...SIZES)))
const IO_REPS = odd(Number(process.env.BENCH_IO_REPS ?? 7))
const REMOVE_REPS = Number(process.env.BENCH_REMOVE_REPS ?? 1)
const STREAM_REPS = Number(process.env.BENCH_STREAM_REPS ?? 5)
const CONTROLLER = process.env.BENCH_CONTROLLER !== '0'
// The cheap commands (node -e 0, version, status, rm) run this many times
// per round: their ratios are differences of a few ms between runs of
// ~100 ms, so they need more samples than list does.
const PER_ROUND = odd(Number(process.env.BENCH_PER_ROUND ?? 3))
const KEEP = process.env.BENCH_KEEP === '1'
const RUN = process.env.BENCH_RUN !== '0'
// Each population needs two exited pods: one for status, one (or more) for rm.
if (SIZES.length === 0 || SIZES[0] < 4 || !(REPS > 0) || !(PER_ROUND > 0) || !(GC_REPS > 0) || !(GC_N > 0)) {
  console.error('bench: bad BENCH_SIZES (each at least 4) / BENCH_REPS / BENCH_PER_ROUND / BENCH_GC_REPS / BENCH_GC_N')
  process.exit(2)
}
const N_MIN = SIZES[0]
const N_MAX = SIZES[SIZES.length - 1]

const log = (s) => process.stderr.write(`bench: ${s}\n`)

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-bench-'))
const cleanup = () => {
  if (KEEP) {
    log(`kept ${root}`)
    return
  }
  fs.rmSync(root, { recursive: true, force: true })
}
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    cleanup()
    process.exit(130)
  })
}

/** Runs podctl; throws if it fails (a command that does not work measures nothing). */
const podctl = (dataDir, args, opts = {}) => timeSpawn(NODE, [BIN, '--dir', dataDir, ...args], opts)
const mustSucceed = (what, r) => {
  if (r.status !== 0) {
    throw new Error(`${what} exited with ${r.status ?? r.signal}:\n${r.stderr.slice(0, 2000)}`)
  }
  return r
}

/** One line per path, for `xargs` (the paths hold no blanks or quotes). */
const writeList = (file, paths) => fs.writeFileSync(file, `${paths.join('\n')}\n`)

/** xargs CMD... < listFile > /dev/null, timed. */
const timeXargs = (listFile, cmd) => {
  const fd = fs.openSync(listFile, 'r')
  try {
    return timeSpawn('xargs', cmd, { stdin: fd, stdout: 'ignore' })
  } finally {
    fs.closeSync(fd)
  }
}

// ---- populations --------------------------------------------------------

/** A population of N pods: half prepared, half exited, with its manifest list. */
class Population {
  constructor(n) {
    this.n = n
    this.dataDir = path.join(root, `pop-${n}`)
    this.listFile = path.join(root, `manifests-${n}.txt`)
    this.created = 0
  }

  async build() {
    const exited = Math.floor(this.n / 2)
    const prepared = this.n - exited
    const t0 = Date.now()
    const { prepared: p, exited: e } = await buildPopulation(this.dataDir, { prepared, exited, label: `N=${this.n}` })
    this.prepared = p
    this.exited = e
    this.created = this.n
    // status looks at one exited pod throughout; rm takes the others in turn.
    this.statusUUID = e[0] ?? p[0]
    this.victims = e.slice(1)
    this.writeList()
    log(`N=${this.n}: ${prepared} prepared + ${exited} exited pods built in ${((Date.now() - t0) / 1000).toFixed(1)} s`)
  }

  writeList() {
    writeList(this.listFile, [
      ...this.prepared.map((u) => manifestPath(this.dataDir, 'prepared', u)),
      ...this.exited.map((u) => manifestPath(this.dataDir, 'run', u)),
    ])
  }

  /** The next exited pod to remove; never the one status looks at. */
  nextVictim() {
    if (this.victims.length === 0) throw new Error(`N=${this.n}: no exited pod left to remove`)
    return this.victims.shift()
  }

  /** After an rm: one new exited pod, so the population stays at N. */
  async replace(removed) {
    this.exited = this.exited.filter((u) => u !== removed)
    const u = await createExited(this.dataDir, this.created++)
    this.exited.push(u)
    this.victims.push(u)
    this.writeList()
  }
}

// ---- measurements -------------------------------------------------------

const samples = new Samples()
const checks = []

const measureNode = () => {
  syncFs()
  const r = mustSucceed('node -e 0', timeSpawn(NODE, ['-e', '0']))
  samples.add('node -e 0', undefined, r.ms)
}

const measureVersion = (dataDir) => {
  syncFs()
  const plain = mustSucceed('podctl version', timeSpawn(NODE, [BIN, 'version']))
  if (!plain.stdout.startsWith('podctl version ')) throw new Error(`podctl version printed ${JSON.stringify(plain.stdout)}`)
  samples.add('version', undefined, plain.ms)
  syncFs()
  const withDir = mustSucceed('podctl --dir D version', podctl(dataDir, ['version']))
  samples.add('version (--dir D)', undefined, withDir.ms)
}

const measureCat = (pop) => {
  syncFs()
  const r = timeXargs(pop.listFile, ['cat'])
  mustSucceed(`xargs cat (N=${pop.n})`, r)
  samples.add('xargs cat', pop.n, r.ms)
}

const measureList = (pop) => {
  syncFs()
  const r = mustSucceed(`list (N=${pop.n})`, podctl(pop.dataDir, ['list', '--format', 'json']))
  samples.add('list --format json', pop.n, r.ms)
  const pods = JSON.parse(r.stdout)
  if (!Array.isArray(pods) || pods.length !== pop.n) {
    throw new Error(`list (N=${pop.n}) returned ${Array.isArray(pods) ? pods.length : typeof pods} pods`)
  }
  return r.stdout.length
}

const measureStatus = (pop) => {
  syncFs()
  const r = mustSucceed(`status (N=${pop.n})`, podctl(pop.dataDir, ['status', pop.statusUUID]))
  if (!/^state=exited$/m.test(r.stdout)) throw new Error(`status (N=${pop.n}) printed ${JSON.stringify(r.stdout)}`)
  samples.add('status UUID', pop.n, r.ms)
}

const measureRm = async (pop) => {
  const uuid = pop.nextVictim()
  syncFs()
  const r = mustSucceed(`rm (N=${pop.n})`, podctl(pop.dataDir, ['rm', uuid]))
  if (r.stdout.trim() !== uuid) throw new Error(`rm (N=${pop.n}) printed ${JSON.stringify(r.stdout)}`)
  if (fs.existsSync(podDirPath(pop.dataDir, 'run', uuid))) throw new Error(`rm (N=${pop.n}) left ${uuid} behind`)
  samples.add('rm UUID', pop.n, r.ms)
  await pop.replace(uuid) // outside the timed region
}

/** One gc measurement: a fresh population for gc, an identical one for rm -rf. */
const measureGc = async (k) => {
  const gcDir = path.join(root, `gc-${k}`)
  const floorDir = path.join(root, `gc-floor-${k}`)
  const listFile = path.join(root, `gc-floor-${k}.txt`)
  log(`gc ${k + 1}/${GC_REPS}: building 2 × ${GC_N} exited pods, interleaved`)
  // Pod by pod in turn, so that both populations are equally fresh in the
  // page cache when timed (idle pages may be paged out meanwhile).
  const [, exited] = await buildExitedPopulations([gcDir, floorDir], GC_N, { label: `gc ${k + 1}/${GC_REPS}` })
  writeList(listFile, exited.map((u) => podDirPath(floorDir, 'run', u)))

  const runFloor = () => {
    syncFs()
    const r = mustSucceed('xargs rm -rf', timeXargs(listFile, ['rm', '-rf']))
    const left = fs.readdirSync(path.join(floorDir, 'pods', 'run')).length
    if (left !== 0) throw new Error(`rm -rf left ${left} pod dirs`)
    samples.add('rm -rf', GC_N, r.ms)
  }
  const runGc = () => {
    syncFs()
    const r = podctl(gcDir, ['gc', '--grace-period', '0s'])
    const deleted = r.stdout.split('\n').filter((l) => l.startsWith('deleted ')).length
    const leftRun = fs.readdirSync(path.join(gcDir, 'pods', 'run')).length
    const leftGarbage = fs.readdirSync(path.join(gcDir, 'pods', 'exited-garbage')).length
    const leftLocks = fs.readdirSync(path.join(gcDir, 'locks')).length
    const check = {
      rep: k + 1,
      ms: round(r.ms),
      exit: r.status ?? r.signal,
      deleted,
      left_in_run: leftRun,
      left_in_exited_garbage: leftGarbage,
      left_in_locks: leftLocks,
      emfile: /EMFILE|too many open files/i.test(r.stderr),
      stderr: r.stderr.slice(0, 2000),
    }
    checks.push(check)
    if (check.exit !== 0 || deleted !== GC_N || leftRun + leftGarbage !== 0 || check.emfile) {
      log(`gc ${k + 1}: exit ${check.exit}, deleted ${deleted}/${GC_N}, left ${leftRun + leftGarbage}, EMFILE ${check.emfile}\n${check.stderr}`)
    }
    samples.add('gc --grace-period 0s', GC_N, r.ms)
  }
  // Alternate which runs first, so that neither always meets the other's aftermath.
  if (k % 2 === 0) {
    runFloor()
    runGc()
  } else {
    runGc()
    runFloor()
  }
  log(`gc ${k + 1}/${GC_REPS}: gc ${round(samples.get('gc --grace-period 0s', GC_N).at(-1))} ms, rm -rf ${round(samples.get('rm -rf', GC_N).at(-1))} ms`)
  fs.rmSync(gcDir, { recursive: true, force: true })
  fs.rmSync(floorDir, { recursive: true, force: true })
  fs.rmSync(listFile, { force: true })
}

// ---- the run ------------------------------------------------------------

const main = async () => {
  const started = Date.now()
  const machine = machineInfo(os.tmpdir())
  log(`data dirs under ${root}; sizes ${SIZES.join(', ')}; ${REPS} rounds, ${PER_ROUND} runs per round of the cheap commands (gc: ${GC_REPS} over ${GC_N} pods)`)

  const pops = []
  for (const n of SIZES) {
    const pop = new Population(n)
    await pop.build()
    pops.push(pop)
  }
  syncFs()

  // One untimed round so that every file the commands touch is in the page cache.
  log('warm-up round')
  mustSucceed('warm-up', timeSpawn(NODE, ['-e', '0']))
  mustSucceed('warm-up', timeSpawn(NODE, [BIN, 'version']))
  for (const pop of pops) {
    mustSucceed('warm-up', timeXargs(pop.listFile, ['cat']))
    mustSucceed('warm-up', podctl(pop.dataDir, ['list', '--format', 'json']))
    mustSucceed('warm-up', podctl(pop.dataDir, ['status', pop.statusUUID]))
  }

  const listBytes = {}
  const load = [{ at: 'start', loadavg: os.loadavg().map((x) => round(x, 2)) }]
  for (let r = 0; r < REPS; r++) {
    log(`round ${r + 1}/${REPS} (load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')})`)
    load.push({ at: `round ${r + 1}`, loadavg: os.loadavg().map((x) => round(x, 2)) })
    for (let j = 0; j < PER_ROUND; j++) {
      measureNode()
      measureVersion(pops[0].dataDir)
    }
    // Rotate the order of the sizes so that none always runs first.
    for (let i = 0; i < pops.length; i++) {
      const pop = pops[(i + r) % pops.length]
      measureCat(pop)
      listBytes[pop.n] = measureList(pop)
      for (let j = 0; j < PER_ROUND; j++) {
        measureStatus(pop)
        await measureRm(pop)
      }
    }
  }

  log(`I/O style: ${IO_REPS} repetitions over the manifests of the N=${N_MAX} population`)
  const ioRows = await measureIoStyles(pops[pops.length - 1].dataDir, IO_REPS)

  for (let k = 0; k < GC_REPS; k++) {
    load.push({ at: `gc ${k + 1}`, loadavg: os.loadavg().map((x) => round(x, 2)) })
    await measureGc(k)
  }
  const removeRows = REMOVE_REPS > 0 ? await measureRemoveStyles(GC_N, REMOVE_REPS, root, log) : undefined
  const streaming = STREAM_REPS > 0 ? measureStreaming(40, STREAM_REPS, log) : undefined
  const controller = CONTROLLER ? await measureController({ pods: GC_N, log }) : undefined
  // The run benchmark: its own data dir, its own table.
  const run = RUN ? await runBenchmarks({ dataDir: path.join(root, 'run'), log }) : undefined
  // Isolated pods: their run against a plain one and a bare runtime run, interleaved.
  const isolation = process.env.BENCH_ISOLATION !== '0' ? await measureIsolation({ log }) : undefined
  // Networks: what a bridge pod pays in the network room's steps.
  const network = process.env.BENCH_NETWORK !== '0' ? await measureNetwork({ log }) : undefined
  // Whole pods on networks: bridge against none, and many at once.
  const networkPods = process.env.BENCH_NETWORK_PODS !== '0' ? await measureNetworkPods({ pods: Number(process.env.BENCH_NETWORK_PODS_N ?? 250), log }) : undefined
  // Images: import against tar -x, memory, renders found again, disk of app roots.
  const images = process.env.BENCH_IMAGES !== '0' ? await measureImages({ reps: Number(process.env.BENCH_IMAGES_REPS ?? 3), log }) : undefined
  load.push({ at: 'end', loadavg: os.loadavg().map((x) => round(x, 2)) })
  const maxLoad = Math.max(...load.map((l) => l.loadavg[0]))

  // ---- the table --------------------------------------------------------
  const node = samples.median('node -e 0', undefined)
  const rows = []
  rows.push({ op: 'node -e 0', median: node, floorName: '(floor)', verdict: '' })
  for (const pop of pops) {
    rows.push({ op: 'xargs cat (1 manifest/pod)', n: pop.n, median: samples.median('xargs cat', pop.n), floorName: '(floor)', verdict: '' })
  }
  for (const pop of pops) {
    const m = samples.median('list --format json', pop.n)
    const floor = node + samples.median('xargs cat', pop.n)
    const judged = pop.n === N_MAX
    const ratio = m / floor
    rows.push({
      op: 'list --format json',
      n: pop.n,
      median: m,
      floorName: 'node -e 0 + xargs cat',
      floor,
      ratio,
      target: judged ? '<= 1.00' : '(info)',
      verdict: judged ? (ratio <= 1.0 ? 'PASS' : 'MISS') : '',
    })
  }
  for (const op of ['status UUID', 'rm UUID']) {
    const base = samples.median(op, N_MIN)
    for (const pop of pops) {
      const m = samples.median(op, pop.n)
      if (pop.n === N_MIN) {
        rows.push({ op, n: pop.n, median: m, floorName: 'node -e 0', floor: node, ratio: m / node, target: '(info)', verdict: '' })
      } else {
        const judged = pop.n === N_MAX
        const ratio = m / base
        rows.push({
          op,
          n: pop.n,
          median: m,
          floorName: `${op.split(' ')[0]} at N=${N_MIN.toLocaleString('en-US')}`,
          floor: base,
          ratio,
          target: judged ? '<= 1.15' : '(info)',
          verdict: judged ? (ratio <= 1.15 ? 'PASS' : 'MISS') : '',
        })
      }
    }
  }
  const version = samples.median('version', undefined)
  rows.push({ op: 'version', median: version, floorName: 'node -e 0', floor: node, ratio: version / node, target: '<= 1.25', verdict: version / node <= 1.25 ? 'PASS' : 'MISS' })
  const versionDir = samples.median('version (--dir D)', undefined)
  rows.push({ op: 'version (--dir D)', median: versionDir, floorName: 'node -e 0', floor: node, ratio: versionDir / node, target: '(info)', verdict: '' })
  const gcMs = samples.median('gc --grace-period 0s', GC_N)
  const rmrf = samples.median('rm -rf', GC_N)
  const emfile = checks.some((c) => c.emfile)
  const gcClean = checks.every((c) => c.exit === 0 && c.deleted === GC_N && c.left_in_run + c.left_in_exited_garbage === 0)
  rows.push({ op: 'rm -rf (xargs, exited pod dirs)', n: GC_N, median: rmrf, floorName: '(floor)', verdict: '' })
  rows.push({
    op: 'gc --grace-period 0s',
    n: GC_N,
    median: gcMs,
    floorName: 'rm -rf of the same pods',
    floor: rmrf,
    ratio: gcMs / rmrf,
    target: '<= 1.30, no EMFILE',
    verdict: gcMs / rmrf <= 1.3 && !emfile && gcClean ? 'PASS' : `MISS${emfile ? ' (EMFILE)' : ''}${gcClean ? '' : ' (incomplete)'}`,
  })

  const header = [
    `podctl bench — ${new Date().toISOString()}`,
    `machine: ${machine.cpus} CPUs (${machine.cpu_model}), ${machine.memory_mib} MiB, node ${machine.node}, ${machine.kernel}, ${machine.tmpdir} on ${machine.filesystem?.type ?? '?'}`,
    `medians of ${REPS} runs for xargs cat and list, ${REPS * PER_ROUND} for node -e 0, version, status and rm, ${GC_REPS} for gc and rm -rf (each gc run on a freshly built population of ${GC_N} exited pods); sync(1) before every timed run`,
    `1-minute load average: ${load[0].loadavg[0]} at the start, ${load.at(-1).loadavg[0]} at the end, ${maxLoad} at most (${machine.cpus} CPUs; anything else running on the machine shows up in the numbers)`,
    `populations: N pods, half prepared and half exited, 2 apps each; list output ${Object.entries(listBytes).map(([n, b]) => `${b} B at N=${n}`).join(', ')}`,
  ].join('\n')
  const table = formatTable(rows)
  process.stdout.write(`\n${header}\n\n${table}\n`)
  process.stdout.write(`gc runs: ${checks.map((c) => `exit ${c.exit}, deleted ${c.deleted}, EMFILE ${c.emfile ? 'yes' : 'no'}, ${c.left_in_locks} entries left in locks/`).join('; ')}\n\n`)
  process.stdout.write(formatIoTable(ioRows))
  process.stdout.write(`(medians of ${IO_REPS}; cold: a fresh node process reads every file once, timed inside the process)\n`)
  if (removeRows) process.stdout.write(`\n${formatRemoveTable(removeRows, GC_N)}(medians of ${REMOVE_REPS})\n`)
  if (streaming) process.stdout.write(`\n${formatStreaming(streaming)}(medians of ${STREAM_REPS})\n`)
  if (controller) process.stdout.write(`\n${formatControllerTable(controller)}(medians of 3 runs each; failover: ${controller.failover.trials} trials)\n`)
  if (run) {
    const g = run.results.git
    process.stdout.write(`\nrun${g ? ` at ${g.commit}${g.lib_dirty ? ' with uncommitted changes in lib/' : ''}` : ''}:\n`)
    printRunTable(process.stdout, run)
  }
  if (isolation) {
    process.stdout.write(`\nisolation: run -- /bin/true ${isolation.host_ms} ms, bare ${isolation.runtime} run ${isolation.runc_ms} ms, run --isolation namespaces --network none -- /bin/true ${isolation.namespaces_none_ms} ms (target ≤ run + 2 × ${isolation.runtime} = ${isolation.budget_ms} ms: ${isolation.pass ? 'PASS' : 'MISS'}), on bridge ${isolation.namespaces_ms} ms; medians of ${isolation.reps}\n`)
  }
  if (network) {
    process.stdout.write(`\nnetwork: ADD ${network.add_ms} ms on a bridge pod's way up (target ≤ 60 ms over network none: ${network.pass ? 'PASS' : 'MISS'}), ${network.netns_add_ms} ms with a namespace of podctl's own; DEL ${network.del_ms} ms; CPU of the programs run per pod ${network.netns_cpu_ms} + ${network.add_cpu_ms} ms; medians of ${network.reps}\n`)
  }
  if (networkPods) {
    process.stdout.write(`\nnetwork pods: run --isolation namespaces -- /bin/true on bridge ${networkPods.bridge_ms} ms, network none ${networkPods.none_ms} ms (target bridge ≤ none + 60 ms: ${networkPods.pass ? 'PASS' : 'MISS'}; medians of ${networkPods.reps}); ${networkPods.pods_running} of ${networkPods.pods_asked} bridge pods running at once, ${networkPods.pods_with_address} with an address, started in ${networkPods.start_s} s, stopped in ${networkPods.stop_s} s, removed in ${networkPods.rm_s} s (${networkPods.pass_many ? 'PASS' : 'MISS'})\n`)
  }

  if (images) {
    const pass = (ok) => (ok ? 'PASS' : 'MISS')
    process.stdout.write(`\nimages: import of a ${images.import_image_mb} MB image ${images.import_ms} ms, tar -xzf of its layers ${images.tar_ms} ms: ${images.import_ratio}× (target ≤ 1.5: ${pass(images.import_ratio <= 1.5)})\n`)
    process.stdout.write(`images: peak memory importing and rendering a ${images.big_image_mb} MB image: ${images.peak_rss_mb} MB (target < 150: ${pass(images.peak_rss_mb < 150)})\n`)
    process.stdout.write(`images: a render found again: ${images.render_found_small_ms} ms (10 MB image), ${images.render_found_big_ms} ms (${images.big_image_mb} MB image)\n`)
    if (images.disk_100_ratio !== undefined) process.stdout.write(`images: 100 overlay app roots of one image: ${images.disk_100_ratio}× one render plus their uppers (target ≤ 1.1: ${pass(images.disk_100_ratio <= 1.1)})\n`)
    if (images.run_ratio !== undefined) process.stdout.write(`images: run --image X -- /bin/true once rendered: ${images.run_small_ms} ms (${images.small_image_mb} MB image), ${images.run_big_ms} ms (${images.big_image_mb} MB image): ${images.run_ratio}× (target within 10 %: ${pass(Math.abs(images.run_ratio - 1) <= 0.1)}; medians of ${images.run_reps}, interleaved)\n`)
    if (images.pods_100_ratio !== undefined) process.stdout.write(`images: 100 pods of one image, run to their end: ${images.pods_100_disk_mb} MB, ${images.pods_100_ratio}× one render plus their uppers (target ≤ 1.1: ${pass(images.pods_100_ratio <= 1.1)})\n`)
  }

  fs.mkdirSync(WORK, { recursive: true })
  const results = {
    date: new Date().toISOString(),
    duration_s: round((Date.now() - started) / 1000),
    machine,
    isolation,
    network,
    network_pods: networkPods,
    images,
    config: { sizes: SIZES, reps: REPS, per_round: PER_ROUND, gc_reps: GC_REPS, gc_n: GC_N, io_reps: IO_REPS },
    table: rows.map((r) => ({ ...r, median: round(r.median), floor: round(r.floor), ratio: round(r.ratio, 3) })),
    table_markdown: formatMarkdown(rows),
    samples: samples.toJSON(),
    gc_runs: checks,
    io_style: ioRows,
    ...(removeRows ? { remove_styles: removeRows } : {}),
    ...(streaming ? { streaming } : {}),
    ...(controller ? { controller: { ...controller, rows: controllerRows(controller) } } : {}),
    load,
    list_output_bytes: listBytes,
    ...(run ? { run: run.results } : {}),
  }
  fs.writeFileSync(path.join(WORK, 'results.json'), `${JSON.stringify(results, null, 2)}\n`)
  log(`results in ${path.relative(process.cwd(), path.join(WORK, 'results.json')) || path.join(WORK, 'results.json')}; took ${((Date.now() - started) / 1000).toFixed(0)} s`)
}

try {
  await main()
  // The fleet on its own 3-member etcd; it says so and skips where etcd is missing.
  if (process.env.BENCH_FLEET !== '0') {
    console.log('\n## The fleet (bench/fleet.js)\n')
    const r = spawnSync(process.execPath, [path.join(here, 'fleet.js')], { stdio: 'inherit' })
    if (r.status !== 0) process.exitCode = 1
    console.log("\n## The fleet's claims and leader (bench/fleet-claims.js)\n")
    const c = spawnSync(process.execPath, [path.join(here, 'fleet-claims.js')], { stdio: 'inherit' })
    if (c.status !== 0) process.exitCode = 1
  }
} catch (er) {
  console.error(`bench: crashed: ${er instanceof Error ? er.stack : er}`)
  process.exitCode = 1
} finally {
  cleanup()
}
