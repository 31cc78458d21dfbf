// CONTRACT §12, resources: memory, cpu and pids limits of isolated pods
// (--memory, --cpus, --pids-limit; "resources" per app and per pod),
// enforced by the runtime's cgroups and seen from the host in those
// cgroups; an app the kernel kills for its memory limit exits 137 with
// reason oom-killed, one killed otherwise has no reason. Limits are for
// isolated pods only, and a user who cannot make cgroups is told so.
// (test/bin/resources.ts is CONTRACT §10's exhausted resources.)
import t from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { cgroupLayout } from '../../lib/proc/cgroups.js'
import { podctl } from '../helpers/cli-util.js'
import { containersMissing } from '../helpers/containers.js'
import { STACK_RE, manifestFile, pollUntil } from '../helpers/common.js'
import { appOf, cgroupDir, cgroupNumber, isolatedManifest, processesOfPod, statusJson, unprivileged, userDataDir } from '../helpers/oci-util.js'
import { dataDir } from '../helpers/run-util.js'

const missing = containersMissing()
const root = process.getuid?.() === 0
const skip = missing !== undefined ? `this machine cannot isolate pods: ${missing}` : root ? false : 'needs root to make cgroups (a rootless pod on cgroup v1 has none)'

/** 100 MB held in a shell variable: far over a 32Mi limit. */
const HOG = 'x=$(head -c 100000000 /dev/zero | tr "\\0" a)'

t.test('--memory 32Mi: the app is OOM-killed, exits 137, and status says oom-killed', { skip }, async (t) => {
  const dir = dataDir(t)
  const r = podctl(dir, ['run', '--isolation', 'namespaces', '--memory', '32Mi', '--uuid-file-save', path.join(dir, '..', 'uuid'), '--', 'sh', '-c', HOG])
  t.equal(r.status, 137, 'the foreground run exits with the killed app’s 137')
  const uuid = fs.readFileSync(path.join(dir, '..', 'uuid'), 'utf8').trim()
  const text = podctl(dir, ['status', uuid]).stdout
  t.match(text, /^app-sh=137$/m)
  t.match(text, /^app-sh-reason=oom-killed$/m, 'status text says why')
  const st = statusJson(dir, uuid)
  t.match(st, { exit_code: 137, runtime: 'runc' })
  t.match(appOf(st, 'sh'), { exit_code: 137, reason: 'oom-killed' }, 'the app JSON says why')
  const free = podctl(dir, ['run', '--isolation', 'namespaces', '--', 'sh', '-c', HOG])
  t.equal(free.status, 0, 'without the limit the same app runs to its end: the limit killed it')
})

t.test('an app killed by SIGKILL from the host (not for memory) has no reason', { skip }, async (t) => {
  const dir = dataDir(t)
  const up = podctl(dir, ['run', '--detach', '--isolation', 'namespaces', '--memory', '64Mi', '--', 'sleep', '300'])
  t.equal(up.status, 0, up.stderr)
  const uuid = up.stdout.trim()
  t.equal(podctl(dir, ['status', uuid, '--wait-ready']).status, 0)
  const pid = appOf(statusJson(dir, uuid), 'sleep').pid as number
  t.ok(pid > 0, 'the app has a host pid')
  process.kill(pid, 'SIGKILL')
  t.equal(podctl(dir, ['status', uuid, '--wait']).status, 0)
  const st = statusJson(dir, uuid)
  t.equal(st.exit_code, 137, 'killed by SIGKILL: 128 + 9')
  t.equal(appOf(st, 'sleep').exit_code, 137)
  t.notOk('reason' in appOf(st, 'sleep'), 'no reason: the kernel did not kill it for its memory', { app: appOf(st, 'sleep') })
  t.notMatch(podctl(dir, ['status', uuid]).stdout, /reason/, 'and no reason line in the text')
})

/** A pod of an app that eats memory and one that sleeps, `resources` where the test puts them. */
const hogAndIdle = (hog: object, top: object): object =>
  isolatedManifest([{ name: 'hog', exec: ['sh', '-c', HOG], ...hog }, { name: 'idle', exec: ['sleep', '300'] }], top)

for (const [what, hog, top, limited] of [
  ['per-app "resources": only that app is limited and killed', { resources: { memory: '32Mi' } }, {}, 'app'],
  ['pod-level "resources": the limit holds for the apps together, and the one that eats is killed', {}, { resources: { memory: '32Mi' } }, 'pod'],
] as const) {
  t.test(what, { skip }, async (t) => {
    const dir = dataDir(t)
    const up = podctl(dir, ['run', '--detach', '--manifest', manifestFile(path.dirname(dir), hogAndIdle(hog, top))])
    t.equal(up.status, 0, up.stderr)
    const uuid = up.stdout.trim()
    const hogDone = await pollUntil('the hog to end', () => {
      const a = appOf(statusJson(dir, uuid), 'hog')
      return a.state === 'exited' ? a : undefined
    })
    t.match(hogDone, { exit_code: 137, reason: 'oom-killed' }, 'the hog was killed for its memory')
    const st = statusJson(dir, uuid)
    t.equal(st.state, 'running', 'the pod lives on')
    t.match(appOf(st, 'idle'), { state: 'running', exit_code: null }, 'and so does the other app')
    t.ok(processesOfPod(uuid).length >= 1, 'its process is there, seen from the host')
    const limit = (app?: string): number => cgroupNumber('memory', uuid, 'memory.limit_in_bytes', app)
    if (limited === 'pod') {
      t.equal(limit(), 32 * 1024 * 1024, "the pod's cgroup holds the limit")
      const memsw = path.join(cgroupDir('memory', uuid), 'memory.memsw.limit_in_bytes')
      if (fs.existsSync(memsw)) t.equal(Number(fs.readFileSync(memsw, 'utf8')), 32 * 1024 * 1024, 'and memory with swap is the same: no swap beyond it')
    }
    else t.ok(limit('idle') > 2 ** 62 && limit() > 2 ** 62, "neither the other app's cgroup nor the pod's has a limit")
    t.match(podctl(dir, ['status', uuid]).stdout, /^app-hog-reason=oom-killed$/m)
    t.equal(podctl(dir, ['stop', uuid]).status, 0)
    const idle = appOf(statusJson(dir, uuid), 'idle')
    t.equal(idle.exit_code, 143, 'the other app ends by stop (SIGTERM)')
    t.notOk('reason' in idle, 'with no reason')
  })
}

t.test('--pids-limit 64 bounds a fork loop: forks fail, and the pod never holds more than 64 tasks', { skip }, async (t) => {
  const dir = dataDir(t)
  // The loop runs in a child shell, which dies when a fork fails; the
  // sleeps it started stay, and the app's own shell sleeps on (exec: no fork).
  const up = podctl(dir, ['run', '--detach', '--isolation', 'namespaces', '--pids-limit', '64', '--', 'sh', '-c', 'sh -c "for i in \\$(seq 200); do sleep 300 & done"; echo "loop=$?"; exec sleep 300'])
  t.equal(up.status, 0, up.stderr)
  const uuid = up.stdout.trim()
  // The app's stdout and stderr are two pipes, read as they come: the shell's error (written in two
  // pieces by dash) and the loop's line may interleave in the log, so each is looked for on its own.
  const logs = await pollUntil('the fork loop to end and its error to be logged', () => {
    const out = podctl(dir, ['logs', uuid]).stdout
    return out.includes('loop=') && /Cannot fork/i.test(out) ? out : undefined
  })
  t.match(logs, /Cannot fork/i, 'the shell could not fork')
  t.match(logs, /loop=2$/m, 'and the loop failed')
  // The pod's cgroup holds its infra too (catatonit, one process), as podman's pids.max reads: the limit asked.
  t.equal(cgroupNumber('pids', uuid, 'pids.max'), 64, "the pod's cgroup has the limit asked, as podman's container has")
  const current = cgroupNumber('pids', uuid, 'pids.current')
  t.ok(current <= 64, `the kernel counts at most 64 tasks in the pod (${current})`)
  const seen = processesOfPod(uuid).length
  t.ok(seen <= 64, `the host sees at most 64 processes of the pod (${seen})`)
  t.ok(seen >= 50, `and the loop did get up to the limit, well past a handful (${seen} of 200 asked)`)
})

t.test('--cpus 0.5 and --memory 64Mi: the cgroup has quota 50000 of 100000 and 64 MiB', { skip }, async (t) => {
  const dir = dataDir(t)
  const up = podctl(dir, ['run', '--detach', '--isolation', 'namespaces', '--cpus', '0.5', '--memory', '64Mi', '--', 'sh', '-c', 'while :; do :; done'])
  t.equal(up.status, 0, up.stderr)
  const uuid = up.stdout.trim()
  t.equal(podctl(dir, ['status', uuid, '--wait-ready']).status, 0)
  t.equal(cgroupNumber('cpu', uuid, 'cpu.cfs_quota_us'), 50000, `cpu.cfs_quota_us under ${cgroupDir('cpu', uuid)}`)
  t.equal(cgroupNumber('cpu', uuid, 'cpu.cfs_period_us'), 100000, 'cpu.cfs_period_us')
  t.equal(cgroupNumber('memory', uuid, 'memory.limit_in_bytes'), 64 * 1024 * 1024, 'memory.limit_in_bytes is 64 MiB')
  // The kernel throttles: over a stretch of busy looping, at most half a core
  // (a bound from above only: a loaded machine gives less, never more).
  const usage = (): number => cgroupNumber('cpuacct', uuid, 'cpuacct.usage')
  const [u0, w0] = [usage(), process.hrtime.bigint()]
  await pollUntil('a second of wall time to pass', () => process.hrtime.bigint() - w0 > 1_000_000_000n)
  const share = (usage() - u0) / Number(process.hrtime.bigint() - w0)
  t.ok(share < 0.6, `the busy loop got at most about half a core (${share.toFixed(2)})`)
  t.equal(podctl(dir, ['stop', '--force', uuid]).status, 0)
})

// podman (go-units RAMInBytes) reads b, k, m, g as powers of 1024: a
// podman user's `--memory 64m` is 64 MiB, and so it is in podctl.
t.test("podman's --memory 64m is 64 MiB", { skip }, async (t) => {
  const dir = dataDir(t)
  const up = podctl(dir, ['run', '--detach', '--isolation', 'namespaces', '--memory', '64m', '--', 'sleep', '300'])
  t.equal(up.status, 0, up.stderr)
  const uuid = up.stdout.trim()
  t.equal(podctl(dir, ['status', uuid, '--wait-ready']).status, 0)
  t.equal(cgroupNumber('memory', uuid, 'memory.limit_in_bytes'), 64 * 1024 * 1024, '64m as podman reads it')
  t.equal(podctl(dir, ['stop', '--force', uuid]).status, 0)
})

t.test('limits are for isolated pods: a host pod with them, or a flag beside --manifest, is exit 2', async (t) => {
  const base = t.testdir({})
  const dir = path.join(base, 'data')
  for (const flags of [['--memory', '32Mi'], ['--cpus', '0.5'], ['--pids-limit', '64']]) {
    const r = podctl(dir, ['prepare', ...flags, '--', 'true'])
    t.equal(r.status, 2, `${flags[0]} on a host pod: exit 2`)
    t.match(r.stderr, new RegExp(`^podctl: ${flags[0]} needs --isolation namespaces`), 'naming the flag and the isolation it needs')
    t.notMatch(r.stderr, STACK_RE)
  }
  const host = manifestFile(base, { apiVersion: 'podctl/v1', apps: [{ name: 'a', exec: ['true'], resources: { memory: '32Mi' } }] }, 'host.json')
  const r = podctl(dir, ['prepare', '--manifest', host])
  t.equal(r.status, 2, 'per-app resources in a host pod: exit 2')
  t.match(r.stderr, /apps\[0\]\.resources: needs "isolation": "namespaces"/)
  const iso = manifestFile(base, isolatedManifest([{ name: 'a', exec: ['true'] }]), 'iso.json')
  for (const flags of [['--memory', '32Mi'], ['--cpus', '1'], ['--pids-limit', '10']]) {
    const m = podctl(dir, ['prepare', '--manifest', iso, ...flags])
    t.equal(m.status, 2, `${flags[0]} with --manifest: exit 2`)
    t.match(m.stderr, new RegExp(`^podctl: ${flags[0]} is for a pod made from a command after -- or from --image\\nin a manifest, give the pod its "resources"`))
  }
  for (const [flags, says] of [
    [['--memory', '1Mi'], /^podctl: invalid --memory "1Mi": the smallest memory limit is 6m\n/],
    [['--memory', 'lots'], /^podctl: invalid --memory "lots": expected a size such as 64m or 1g/],
    [['--cpus', '0'], /^podctl: invalid --cpus "0": expected a number of cores such as 0\.5 or 2/],
    [['--pids-limit', '7'], /^podctl: invalid --pids-limit "7": expected a whole number of at least 8 .*, or 0 for no limit\n/],
  ] as const) {
    const b = podctl(dir, ['prepare', '--isolation', 'namespaces', ...flags, '--', 'true'])
    t.equal(b.status, 2, `${flags.join(' ')}: exit 2`)
    t.match(b.stderr, says)
  }
  t.equal(fs.existsSync(path.join(dir, 'pods')) ? podctl(dir, ['list', '--format', 'json']).stdout : '[]\n', '[]\n', 'nothing was prepared')
})

t.test('rootless: where the user cannot make cgroups (cgroup v1), a pod with limits is refused, exit 1 (125 in a foreground run); where it can, it is OOM-killed as root\'s', async (t) => {
  if (missing !== undefined) return t.plan(0, `this machine cannot isolate pods: ${missing}`)
  const who = unprivileged()
  if (typeof who === 'string') return t.plan(0, who)
  const l = cgroupLayout()
  const top = l.mode === 'v2' ? l.v2?.mountPoint : l.v1.get('memory')?.mountPoint
  const dir = userDataDir(t, who)
  if (top !== undefined && spawnSync('test', ['-w', top], { uid: who.uid, gid: who.gid }).status === 0) {
    // This user may make cgroups (cgroup v2 delegated): its pods have limits, and OOM as root's do.
    const r = podctl(dir, ['run', '--isolation', 'namespaces', '--memory', '32Mi', '--uuid-file-save', path.join(dir, '..', 'uuid'), '--', 'sh', '-c', HOG], who.opts)
    t.equal(r.status, 137, `${who.name} may make cgroups here (${top}): its app is OOM-killed`)
    t.match(appOf(statusJson(dir, fs.readFileSync(path.join(dir, '..', 'uuid'), 'utf8').trim(), who.opts), 'sh'), { exit_code: 137, reason: 'oom-killed' })
    return
  }
  const says = /^podctl: .*has resource limits, and this user cannot make cgroups on this host\nrun it as root, or leave the limits out\n/
  const prepare = podctl(dir, ['prepare', '--isolation', 'namespaces', '--memory', '32Mi', '--', 'true'], who.opts)
  t.equal(prepare.status, 1, 'prepare: exit 1, as for any pod this host cannot isolate (CONTRACT §9)')
  t.match(prepare.stderr, says)
  const detached = podctl(dir, ['run', '--detach', '--isolation', 'namespaces', '--pids-limit', '10', '--', 'true'], who.opts)
  t.equal(detached.status, 1, 'run --detach: exit 1, no UUID')
  t.equal(detached.stdout, '')
  t.match(detached.stderr, says)
  const fg = podctl(dir, ['run', '--isolation', 'namespaces', '--cpus', '0.5', '--', 'true'], who.opts)
  t.equal(fg.status, 125, "a foreground run: podctl's own failure, 125")
  t.match(fg.stderr, /this user cannot make cgroups on this host/)
  const m = manifestFile(path.dirname(dir), isolatedManifest([{ name: 'a', exec: ['true'], resources: { pids: 10 } }]))
  const perApp = podctl(dir, ['prepare', '--manifest', m], who.opts)
  t.equal(perApp.status, 1, 'per-app resources too')
  t.equal(JSON.parse(podctl(dir, ['list', '--format', 'json'], who.opts).stdout).length, 0, 'no pod was left behind')
  const plain = podctl(dir, ['run', '--isolation', 'namespaces', '--', 'true'], who.opts)
  t.equal(plain.status, 0, 'without limits the same user’s isolated pod runs', { stderr: plain.stderr })
})
