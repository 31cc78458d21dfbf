// Crash consistency of provisioning: claims are made while three
// controllers work them and are SIGKILLed and restarted at random moments,
// often in the middle of a provisioner's call. After every trial:
//   - every claim is bound, to a volume of its own (volumes = claims),
//   - every volume is the one provisioned for its claim (pvc-<uid>, naming it),
//   - the provisioner was called only for those names, and its storage is
//     exactly those volumes: nothing provisioned without its claim;
//   - then every claim is removed under the same kind of kills, and every
//     volume and its storage are deleted once: nothing is left.
// Seeded and reproducible: CONTROLLER_CRASH_SEED picks the schedule,
// CONTROLLER_CRASH_TRIALS the number of trials (default 12),
// CONTROLLER_CRASH_CLAIMS the claims per trial (default 100).
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { removeClaim } from '../../lib/storage/binder.js'
import { CLAIM } from '../../lib/storage/claims.js'
import { LocalStore } from '../../lib/storage/local/store.js'
import { listVolumes } from '../../lib/storage/local/volumes.js'
import { listObjects } from '../../lib/storage/objects.js'
import { BIN, pollUntil, seededRandom } from '../helpers/common.js'

const seed = Number(process.env.CONTROLLER_CRASH_SEED ?? 20261125)
const trials = Number(process.env.CONTROLLER_CRASH_TRIALS ?? 12)
const claimsPerTrial = Number(process.env.CONTROLLER_CRASH_CLAIMS ?? 100)

// A failing schedule can be replayed from its seed.
const rng = seededRandom(seed)
const pick = (lo: number, hi: number): number => lo + Math.floor(rng() * (hi - lo))
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Short timings: a killed leader's lease runs out in well under a second. */
const FAST = ['--retry-period', '50ms', '--lease-duration', '600ms', '--renew-deadline', '400ms', '--gc-interval', '0s']

/**
 * An exec provisioner that logs every call and takes 10 ms, so that kills
 * land inside calls; its storage is one directory per volume in `store`.
 */
const countingProvisioner = (dir: string): { program: string; store: string; log: string } => {
  const store = path.join(dir, 'store')
  const log = path.join(dir, 'calls.log')
  fs.mkdirSync(store, { recursive: true })
  const program = path.join(dir, 'provisioner')
  fs.writeFileSync(
    program,
    `#!/bin/sh
input=$(cat)
name=$(printf '%s' "$input" | sed -n 's/.*"\\(volume_\\)\\{0,1\\}name":"\\(pvc-[^"]*\\)".*/\\2/p')
[ -n "$name" ] || { echo "no volume name in $input" >&2; exit 1; }
echo "$1 $name" >> ${JSON.stringify(log)}
sleep 0.01
case "$1" in
provision) mkdir -p ${JSON.stringify(store)}/"$name" && printf '{"path":"%s/%s"}\\n' ${JSON.stringify(store)} "$name" ;;
delete) rm -rf ${JSON.stringify(store)}/"$name" && printf '{}\\n' ;;
esac
`,
    { mode: 0o755 },
  )
  return { program, store, log }
}

interface Running {
  proc: ChildProcess
  exited: Promise<void>
}

const startController = (dir: string, id: string): Running => {
  const proc = spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', process.execPath, BIN, '--dir', dir, 'controller', '--identity', id, ...FAST], { stdio: 'ignore' })
  return { proc, exited: new Promise((r) => proc.on('exit', () => r())) }
}

/** Three controllers, one of them SIGKILLed and replaced every 30-300 ms (seeded) until `stop` resolves. */
const killLoop = async (dir: string, trial: number, stop: Promise<void>): Promise<{ kills: number; running: Running[] }> => {
  let seq = 0
  const running = [0, 1, 2].map(() => startController(dir, `t${trial}-${seq++}`))
  let done = false
  void stop.then(() => (done = true))
  let kills = 0
  while (!done) {
    await delay(pick(30, 300))
    if (done) break
    const victim = running.splice(pick(0, running.length), 1)[0]!
    victim.proc.kill('SIGKILL')
    await victim.exited
    kills++
    running.push(startController(dir, `t${trial}-${seq++}`))
  }
  return { kills, running }
}

const stopAll = async (running: Running[]): Promise<void> => {
  for (const r of running) r.proc.kill('SIGKILL')
  await Promise.all(running.map((r) => r.exited))
}

const callsIn = (log: string): string[] => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean) : [])

t.test(`${trials} trials of ${claimsPerTrial} claims under three controllers killed at random (seed ${seed})`, async (t) => {
  const root = t.testdir({})
  let totalKills = 0
  let repeatedCalls = 0
  for (let trial = 0; trial < trials; trial++) {
    const dir = path.join(root, `trial-${trial}`)
    fs.mkdirSync(dir)
    const data = path.join(dir, 'data')
    const { program, store, log } = countingProvisioner(dir)
    fs.mkdirSync(data)
    const claimStore = new LocalStore(data)
    const listClaims = (d: string) => listObjects(d, CLAIM)
    await claimStore.createClass('counted', { provisioner: `exec:${program}`, reclaim: 'delete' })
    const label = `trial ${trial}`

    // Make the claims while the controllers are killed around them.
    let made!: () => void
    const creating = new Promise<void>((r) => (made = r))
    const killing = killLoop(data, trial, creating)
    for (let i = 0; i < claimsPerTrial; i++) {
      await claimStore.createClaim(`c${i}`, { class: 'counted', sizeBytes: 1024 })
      if (i % 10 === 9) await delay(pick(0, 40))
    }
    await pollUntil(`${label}: every claim bound`, () => listClaims(data).every((c) => c.phase === 'bound'), { polls: 1200, intervalMs: 25 })
    made()
    const { kills, running } = await killing
    totalKills += kills
    await stopAll(running)

    const claims = listClaims(data)
    const volumes = listVolumes(data)
    const calls = callsIn(log)
    const provisioned = calls.filter((c) => c.startsWith('provision ')).map((c) => c.slice('provision '.length))
    const wanted = new Set(claims.map((c) => `pvc-${c.uid}`))
    const problems: string[] = []
    if (claims.length !== claimsPerTrial) problems.push(`${claims.length} claims, not ${claimsPerTrial}`)
    if (volumes.length !== claims.length) problems.push(`${volumes.length} volumes for ${claims.length} claims`)
    if (new Set(claims.map((c) => c.volume)).size !== claims.length) problems.push('two claims share a volume')
    for (const c of claims) {
      const v = volumes.find((x) => x.name === c.volume)
      if (c.volume !== `pvc-${c.uid}`) problems.push(`claim ${c.name} is bound to ${c.volume}, not pvc-${c.uid}`)
      if (!v || v.claim_ref?.uid !== c.uid) problems.push(`volume ${c.volume} does not name claim ${c.name}`)
    }
    const strays = provisioned.filter((n) => !wanted.has(n))
    if (strays.length > 0) problems.push(`provision called for names of no claim: ${[...new Set(strays)].slice(0, 3).join(', ')}`)
    const stored = fs.readdirSync(store).sort()
    if (stored.join() !== [...wanted].sort().join()) problems.push(`the provisioner's storage holds ${stored.length} volumes for ${wanted.size} claims`)
    repeatedCalls += provisioned.length - new Set(provisioned).size
    t.same(problems, [], `${label}: ${claims.length} claims bound, ${volumes.length} volumes, ${provisioned.length} provision calls, ${kills} kills`)

    // Now remove every claim (inline, as `volume claim rm` does with no
    // controller), while controllers are killed around the deletes.
    let removed!: () => void
    const removing = new Promise<void>((r) => (removed = r))
    const killing2 = killLoop(data, trial + 1000, removing)
    for (const c of claims) await removeClaim(claimStore, c.name, { reclaim: false })
    await pollUntil(`${label}: every volume deleted`, () => listVolumes(data).length === 0, { polls: 1200, intervalMs: 25 })
    removed()
    const second = await killing2
    totalKills += second.kills
    await stopAll(second.running)
    const deletes = callsIn(log).filter((c) => c.startsWith('delete ')).map((c) => c.slice('delete '.length))
    const after: string[] = []
    if (fs.readdirSync(store).length > 0) after.push(`${fs.readdirSync(store).length} volumes left in the provisioner's storage`)
    if (deletes.some((n) => !wanted.has(n))) after.push('delete called for a name of no claim')
    if (new Set(deletes).size !== wanted.size) after.push(`delete called for ${new Set(deletes).size} of ${wanted.size} volumes`)
    t.same(after, [], `${label}: every volume deleted (${deletes.length} delete calls, ${second.kills} kills)`)
    fs.rmSync(dir, { recursive: true, force: true })
  }
  t.comment(`${totalKills} controllers killed; ${repeatedCalls} provision calls repeated for a name already called (a call cut short, picked up again)`)
  t.ok(totalKills >= trials, `controllers were killed throughout (${totalKills} kills in ${trials} trials)`)
})
