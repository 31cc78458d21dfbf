// Isolated pods under SIGKILL (issue 11): start a pod with its own
// namespaces whose apps fork, escape their group (setsid) and ignore
// SIGTERM, SIGKILL its supervisor at a seeded random moment after it is
// running, and check from the host that within a second the pod reads
// exited and no process of it is left. Seeded and reproducible:
// ISO_CRASH_SEED picks the schedule, ISO_CRASH_TRIALS the number (default 50).
import t from 'tap'
import fs from 'node:fs'
import { namespaceSupport } from '../../lib/proc/namespaces.js'
import { podctl } from '../helpers/cli-util.js'
import { pollUntil, seededRandom } from '../helpers/common.js'
import { alive, allPids, dataDir } from '../helpers/run-util.js'

const seed = Number(process.env.ISO_CRASH_SEED ?? 20261125)
const trials = Number(process.env.ISO_CRASH_TRIALS ?? 50)
const rng = seededRandom(seed)

/** Live processes of pod `uuid`: its apps (their environment) and its holder (its arguments name the pod dir). */
const processesOf = (uuid: string): number[] =>
  allPids().filter((p) => {
    try {
      const cmd = fs.readFileSync(`/proc/${p}/cmdline`, 'latin1')
      if (cmd.includes('supervisor-main')) return false
      return (cmd.includes(uuid) || fs.readFileSync(`/proc/${p}/environ`, 'latin1').includes(`PODCTL_POD_UUID=${uuid}`)) && alive(p)
    } catch {
      return false
    }
  })

const APP = 'sleep 300 & setsid sleep 301 & (trap "" TERM HUP INT; sleep 302) & i=0; while :; do i=$((i+1)); echo $i > /tmp/n; done'

t.test(`SIGKILL of an isolated pod's supervisor leaves nothing of the pod (${trials} trials, seed ${seed})`, async (t) => {
  const support = namespaceSupport('host')
  if (Array.isArray(support)) {
    t.plan(0, `this machine cannot isolate pods: missing ${support.join(', ')}`)
    return
  }
  const dir = dataDir(t)
  for (let i = 0; i < trials; i++) {
    const apps = 1 + Math.floor(rng() * 3)
    const network = rng() < 0.5 ? 'host' : 'none'
    const m = { apiVersion: 'podctl/v1', isolation: 'namespaces', network, apps: Array.from({ length: apps }, (_, k) => ({ name: `a${k}`, exec: ['sh', '-c', APP] })) }
    const up = podctl(dir, ['run', '--detach', '--manifest', '-'], { input: JSON.stringify(m) })
    if (up.status !== 0) {
      t.fail(`trial ${i}: run --detach exited ${up.status}: ${up.stderr}`)
      continue
    }
    const uuid = up.stdout.trim()
    const pid = JSON.parse(podctl(dir, ['status', uuid, '--format', 'json']).stdout).pid as number
    await new Promise((r) => setTimeout(r, Math.floor(rng() * 300)))
    process.kill(pid, 'SIGKILL')
    const killedAt = Date.now()
    await pollUntil(`trial ${i}: pod ${uuid} to read exited`, () => podctl(dir, ['status', uuid]).stdout.startsWith('state=exited'), { polls: 100, intervalMs: 10 })
    const exitedIn = Date.now() - killedAt
    if (exitedIn > 1_000) t.fail(`trial ${i}: the pod read exited only after ${exitedIn} ms`)
    try {
      await pollUntil(`trial ${i}: no process of pod ${uuid}`, () => processesOf(uuid).length === 0, { polls: 100, intervalMs: 10 })
    } catch {
      t.fail(`trial ${i} (${apps} apps, network ${network}): processes of the pod left: ${processesOf(uuid).join(' ')}`)
    }
  }
  t.pass(`${trials} trials done`)
})
