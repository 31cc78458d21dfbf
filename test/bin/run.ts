// Black-box tests of `podctl run` (CONTRACT §3-5): spawns bin/podctl.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { processesWithEnv } from '../../lib/proc/escaped.js'
import { manifestFile, podRecord, pollUntil, TIME_RE, UUID_RE } from '../helpers/common.js'
import { podctl, podctlJson, runDetached, startPodctl } from '../helpers/cli-util.js'
import { alive, appMembers, dataDir, fdTarget, guardianOf, procStat } from '../helpers/run-util.js'

const sh = (script: string): string[] => ['/bin/sh', '-c', script]

/** The UUID of the only pod in a data dir. */
const onlyPod = (dir: string): string => {
  const all = fs.readdirSync(path.join(dir, 'pods', 'run'))
  if (all.length !== 1) throw new Error(`expected one pod in run/, found ${all.length}`)
  return all[0]!
}

t.test('run -- sh -c "echo hi; exit 3" prints hi and exits 3', async (t) => {
  const dir = dataDir(t)
  const r = podctl(dir, ['run', '--', 'sh', '-c', 'echo hi; exit 3'])
  t.equal(r.status, 3, 'the pod exit code')
  t.equal(r.stdout, 'hi\n', 'the output of a one-app pod is not prefixed')
  t.equal(r.stderr, '')
  const st = podctl(dir, ['status', onlyPod(dir)])
  t.equal(st.status, 0)
  t.match(st.stdout, /^state=exited$/m)
  t.match(st.stdout, /^exited=true$/m)
  t.match(st.stdout, /^app-sh=3$/m)
})

t.test('app stderr goes to stderr, stdout to stdout, unprefixed for one app', async (t) => {
  const dir = dataDir(t)
  const r = podctl(dir, ['run', '--', 'sh', '-c', 'echo out; echo err >&2; printf tail'])
  t.equal(r.status, 0)
  t.equal(r.stdout, 'out\ntail')
  t.equal(r.stderr, 'err\n')
})

t.test('several apps: each line is prefixed with "[name] "', async (t) => {
  const dir = dataDir(t)
  const m = manifestFile(dir, {
    apiVersion: 'podctl/v1',
    apps: [
      { name: 'alpha', exec: sh('echo a1; echo a2; printf a-partial') },
      { name: 'beta', exec: sh('echo b1; echo b-err >&2') },
    ],
  })
  const r = podctl(dir, ['run', '--manifest', m])
  t.equal(r.status, 0, r.stderr)
  const out = r.stdout.split('\n')
  t.equal(out.pop(), '', 'stdout ends with a newline: a partial last line is completed')
  t.same(out.filter((l) => l.startsWith('[alpha] ')), ['[alpha] a1', '[alpha] a2', '[alpha] a-partial'], "alpha's lines, in order")
  t.same(out.filter((l) => !l.startsWith('[alpha] ')), ['[beta] b1'], "beta's stdout line, and nothing unprefixed")
  t.equal(r.stderr, '[beta] b-err\n', "beta's stderr line, prefixed, on stderr")
})

t.test('init apps run one after another, to completion, before the regular apps', async (t) => {
  const dir = dataDir(t)
  const order = path.join(dir, 'order')
  const m = manifestFile(dir, {
    apiVersion: 'podctl/v1',
    apps: [
      // A regular app listed first must still wait for every init app.
      { name: 'web', exec: sh('echo web >> "$ORDER"'), env: { ORDER: order } },
      // The first init app is slow: a runner that does not wait for it fails here.
      { name: 'init-one', type: 'init', exec: sh('echo init-one-start >> "$ORDER"; sleep 0.3; echo init-one-end >> "$ORDER"'), env: { ORDER: order } },
      { name: 'init-two', type: 'init', exec: sh('echo init-two >> "$ORDER"'), env: { ORDER: order } },
      { name: 'worker', exec: sh('echo worker >> "$ORDER"'), env: { ORDER: order } },
    ],
  })
  const r = podctl(dir, ['run', '--manifest', m])
  t.equal(r.status, 0, r.stderr)
  const lines = fs.readFileSync(order, 'utf8').trim().split('\n')
  t.same(lines.slice(0, 3), ['init-one-start', 'init-one-end', 'init-two'], 'init apps in manifest order, each to its end')
  t.same(lines.slice(3).sort(), ['web', 'worker'], 'then the regular apps')
  const v = await podctlJson(t, dir, ['status', onlyPod(dir), '--format', 'json'])
  const app = (n: string) => v.apps.find((a: any) => a.name === n)
  t.same(v.apps.map((a: any) => [a.name, a.type, a.state, a.exit_code]), [
    ['web', 'regular', 'exited', 0],
    ['init-one', 'init', 'exited', 0],
    ['init-two', 'init', 'exited', 0],
    ['worker', 'regular', 'exited', 0],
  ])
  t.ok(app('init-one').finished_at <= app('init-two').started_at, 'init-two started after init-one finished')
  for (const n of ['web', 'worker']) t.ok(app('init-two').finished_at <= app(n).started_at, `${n} started after the last init app finished`)
})

t.test('a failing init app ends the pod with its code; no later app starts', async (t) => {
  const dir = dataDir(t)
  const order = path.join(dir, 'order')
  const m = manifestFile(dir, {
    apiVersion: 'podctl/v1',
    apps: [
      { name: 'setup', type: 'init', exec: sh('echo setup >> "$ORDER"; exit 4'), env: { ORDER: order } },
      { name: 'migrate', type: 'init', exec: sh('echo migrate >> "$ORDER"'), env: { ORDER: order } },
      { name: 'web', exec: sh('echo web >> "$ORDER"'), env: { ORDER: order } },
    ],
  })
  const r = podctl(dir, ['run', '--manifest', m])
  t.equal(r.status, 4, "the failing init app's exit code")
  t.equal(fs.readFileSync(order, 'utf8'), 'setup\n', 'nothing ran after the failing init app')
  const v = await podctlJson(t, dir, ['status', onlyPod(dir), '--format', 'json'])
  t.equal(v.state, 'exited')
  t.equal(v.exit_code, 4)
  t.match(v.apps[0], { name: 'setup', state: 'exited', exit_code: 4 })
  for (const a of v.apps.slice(1)) {
    t.match(a, { state: 'created', pid: null, started_at: null, finished_at: null, exit_code: null }, `${a.name} never started`)
  }
})

t.test('the exit code is the first non-zero one in manifest order, not in time order', async (t) => {
  const dir = dataDir(t)
  const m = manifestFile(dir, {
    apiVersion: 'podctl/v1',
    apps: [
      { name: 'ok', exec: sh('exit 0') },
      // exits 5 only once the supervisor has recorded that "late" exited 7
      { name: 'first', exec: sh('while ! grep -q \'"exit_code":7\' "$PODCTL_APP_ROOT/../../pod.json"; do sleep 0.01; done; exit 5') },
      { name: 'late', exec: sh('exit 7') },
    ],
  })
  const r = podctl(dir, ['run', '--manifest', m])
  t.equal(r.status, 5)
  const v = await podctlJson(t, dir, ['status', onlyPod(dir), '--format', 'json'])
  t.equal(v.exit_code, 5)
  t.same(v.apps.map((a: any) => a.exit_code), [0, 5, 7])
  t.ok(v.apps[2].finished_at <= v.apps[1].finished_at, 'the app later in the manifest finished first')
})

t.test('an app killed by a signal gives 128+N', async (t) => {
  const dir = dataDir(t)
  const r = podctl(dir, ['run', '--', 'sh', '-c', 'kill -TERM $$'])
  t.equal(r.status, 143, 'SIGTERM: 128+15')
  const m = manifestFile(dir, {
    apiVersion: 'podctl/v1',
    apps: [
      { name: 'fine', exec: sh('exit 0') },
      { name: 'killed', exec: sh('kill -KILL $$') },
    ],
  })
  const r2 = podctl(dir, ['run', '--manifest', m])
  t.equal(r2.status, 137, 'SIGKILL: 128+9')
  const pods = await podctlJson(t, dir, ['list', '--format', 'json'])
  t.same(pods.map((p: any) => p.exit_code).sort(), [137, 143])
  const killed = pods.find((p: any) => p.exit_code === 137)
  t.same(killed.apps.map((a: any) => a.exit_code), [0, 137])
})

t.test('status and list show per-app pid, start, finish and exit code', async (t) => {
  const dir = dataDir(t)
  const m = manifestFile(dir, {
    apiVersion: 'podctl/v1',
    name: 'timed',
    apps: [
      { name: 'one', exec: sh('echo $$ > "$PODCTL_APP_ROOT/pid"; exit 0') },
      { name: 'two', exec: sh('echo $$ > "$PODCTL_APP_ROOT/pid"; exit 2') },
    ],
  })
  const r = podctl(dir, ['run', '--manifest', m, '--uuid-file-save', path.join(dir, 'uuid')])
  t.equal(r.status, 2)
  const uuid = fs.readFileSync(path.join(dir, 'uuid'), 'utf8').trim()
  t.match(uuid, UUID_RE)
  const v = await podctlJson(t, dir, ['status', uuid, '--format', 'json'])
  const [list] = (await podctlJson(t, dir, ['list', '--format', 'json'])) as any[]
  t.same(list, v, 'list shows the same object as status')
  t.match(v, { uuid, name: 'timed', state: 'exited', exit_code: 2, mutable: false })
  t.match(v.started_at, TIME_RE)
  t.ok(Number.isInteger(v.pid), 'the pid of the (last) supervisor')
  for (const [i, a] of v.apps.entries()) {
    const root = path.join(dir, 'pods', 'run', uuid, 'apps', a.name)
    t.equal(a.pid, Number(fs.readFileSync(path.join(root, 'pid'), 'utf8')), `${a.name}: the recorded pid is the app's`)
    t.match(a.started_at, TIME_RE)
    t.match(a.finished_at, TIME_RE)
    t.ok(v.started_at <= a.started_at && a.started_at <= a.finished_at, `${a.name}: pod start <= app start <= app finish`)
    t.equal(a.state, 'exited')
    t.equal(a.exit_code, i === 0 ? 0 : 2)
  }
  const st = podctl(dir, ['status', uuid])
  t.match(st.stdout, /^app-one=0$/m)
  t.match(st.stdout, /^app-two=2$/m)
})

t.test('apps get PODCTL_* variables, the manifest env, --env, and their root as cwd', async (t) => {
  const dir = dataDir(t)
  const script = 'printf "%s|%s|%s|%s|%s|%s\\n" "$PODCTL_POD_UUID" "$PODCTL_APP_NAME" "$PODCTL_APP_ROOT" "$FROM_MANIFEST" "$FROM_FLAG" "$(pwd -P)"'
  const m = manifestFile(dir, {
    apiVersion: 'podctl/v1',
    apps: [
      { name: 'envy', exec: sh(script), env: { FROM_MANIFEST: 'm value' } },
      { name: 'inner', exec: sh(script), workingDirectory: '/work/sub' },
    ],
  })
  const r = podctl(dir, ['run', '--manifest', m, '--env', 'FROM_FLAG=f=v'])
  t.equal(r.status, 0, r.stderr)
  const uuid = onlyPod(dir)
  const root = (n: string) => path.join(dir, 'pods', 'run', uuid, 'apps', n)
  const lines = r.stdout.trim().split('\n').sort()
  t.same(lines, [
    `[envy] ${uuid}|envy|${root('envy')}|m value|f=v|${fs.realpathSync(root('envy'))}`,
    `[inner] ${uuid}|inner|${root('inner')}||f=v|${fs.realpathSync(path.join(root('inner'), 'work', 'sub'))}`,
  ])
})

t.test('SIGINT and SIGTERM to a foreground run reach the app; podctl exits with its code', async (t) => {
  const dir = dataDir(t)
  for (const [sig, code] of [['SIGINT', 8], ['SIGTERM', 9]] as const) {
    const run = startPodctl(t, dir, [
      'run',
      '--',
      'sh',
      '-c',
      'trap "echo got INT; exit 8" INT; trap "echo got TERM; exit 9" TERM; echo ready; while :; do sleep 0.05; done',
    ])
    await run.line(/^ready$/)
    run.child.kill(sig)
    const r = await run.done
    t.equal(r.status, code, `${sig}: the app's trap decided the exit code`)
    t.equal(r.stdout, `ready\ngot ${sig.slice(3)}\n`, `${sig}: the app saw the signal`)
  }
})

t.test('SIGUSR1, SIGUSR2 and SIGQUIT to a foreground run are passed on to the app (as podman\'s --sig-proxy); SIGUSR1 opens no Node inspector', async (t) => {
  const dir = dataDir(t)
  const run = startPodctl(t, dir, ['run', '--', 'sh', '-c', 'trap "echo got USR1" USR1; trap "echo got USR2" USR2; trap "echo got QUIT; exit 7" QUIT; echo ready; while :; do sleep 0.05; done'])
  await run.line(/^ready$/)
  run.child.kill('SIGUSR1')
  await run.line(/^got USR1$/)
  run.child.kill('SIGUSR2')
  await run.line(/^got USR2$/)
  run.child.kill('SIGQUIT')
  const r = await run.done
  t.equal(r.status, 7, "podctl lived through all three, and exits with the app's code")
  t.equal(r.stdout, 'ready\ngot USR1\ngot USR2\ngot QUIT\n', 'the app saw each, in order')
  t.notMatch(r.stderr, /Debugger listening/, 'no inspector: it would run any local user\'s code as podctl\'s user')
})

t.test('run --detach: prints the UUID, the pod runs, the supervisor has no terminal', async (t) => {
  const dir = dataDir(t)
  const go = path.join(dir, 'go')
  const uuid = await runDetached(t, dir, ['--env', `GO=${go}`, '--', 'sh', '-c', 'while [ ! -e "$GO" ]; do sleep 0.05; done; exit 6'])
  t.match(uuid, UUID_RE)
  // No polling: the pod is running as soon as run --detach has returned.
  t.equal(podFromUUIDString(dir, uuid).state, 'running', 'running at once (library view)')
  const v = await podctlJson(t, dir, ['status', uuid, '--format', 'json'])
  t.equal(v.state, 'running')
  const sup = v.pid as number
  t.ok(alive(sup), 'the supervisor lives on')
  for (const fd of [0, 1, 2]) t.equal(fdTarget(sup, fd), '/dev/null', `supervisor fd ${fd} is /dev/null`)
  const st = procStat(sup)!
  t.equal(st.session, sup, 'the supervisor leads its own session')
  t.equal(st.ttyNr, 0, 'no controlling terminal')

  const ready = podctl(dir, ['status', uuid, '--wait-ready'])
  t.equal(ready.status, 0, '--wait-ready returns 0 once the apps have started')
  t.match(ready.stdout, /^state=running$/m)
  // Started before the timed-out wait below, so it has looked at the running pod by the time that one gives up.
  const waiting = startPodctl(t, dir, ['status', uuid, '--wait'])
  const timeout = podctl(dir, ['status', uuid, '--wait=200ms'])
  t.equal(timeout.status, 5, '--wait=200ms times out with 5 while the pod runs')
  t.match(timeout.stderr, /timed out/)
  t.equal(waiting.child.exitCode, null, 'status --wait is still waiting while the pod runs')
  t.equal(podFromUUIDString(dir, uuid).state, 'running')
  fs.writeFileSync(go, '')
  const done = await waiting.done
  t.equal(done.status, 0, 'status --wait returns 0 once the pod has ended')
  t.match(done.stdout, /^state=exited$/m)
  t.match(done.stdout, /^app-sh=6$/m)
})

t.test('SIGKILL of a detached supervisor: the pod reads exited, the guardian kills every app process', async (t) => {
  const dir = dataDir(t)
  const uuid = await runDetached(t, dir, ['--', 'sh', '-c', 'sleep 1000 & sleep 1000'])
  t.equal(podctl(dir, ['status', uuid, '--wait-ready']).status, 0)
  const rec = await pollUntil('the app pid', () => {
    const r = podRecord(dir, uuid)
    return r.apps[0].pid !== null && r.apps[0].state === 'running' ? r : undefined
  })
  const appPid = rec.apps[0].pid as number
  // sh, its background sleep and its foreground sleep
  const members = await pollUntil('the app and its two children', () => {
    const g = appMembers(appPid)
    return g.length >= 3 ? g : undefined
  })
  const guardian = guardianOf(appPid)
  t.ok(guardian, 'a guardian runs in the app group')
  t.not(procStat(guardian!)?.ppid, appPid, 'it is not a child of the app')
  members.push(guardian!)
  process.kill(rec.pid, 'SIGKILL')
  let polls = 0
  await pollUntil('the supervisor to die', () => {
    polls++
    return !alive(rec.pid)
  })
  // Right after the supervisor died: no waiting for a stale lock.
  t.equal(podFromUUIDString(dir, uuid).state, 'exited', 'the pod reads exited at once')
  // The guardian (no podctl command has run since) kills the app, its child and its grandchild, and itself.
  await pollUntil('the app processes to die', () => members.every((p) => !alive(p)))
  t.pass(`every app process is gone (${members.length} of them)`)
  t.comment(`supervisor death seen after ${polls} polls`)
  const v = await podctlJson(t, dir, ['status', uuid, '--format', 'json'])
  t.equal(v.state, 'exited')
  t.equal(v.apps[0].state, 'unknown', 'the app end was not recorded: unknown, not running')
})

t.test('supervisor and guardian both killed: the next status reaps the orphaned app', async (t) => {
  const dir = dataDir(t)
  const uuid = await runDetached(t, dir, ['--', 'sh', '-c', 'sleep 1000 & sleep 1000'])
  const rec = await pollUntil('the app pid', () => {
    const r = podRecord(dir, uuid)
    return r.apps[0].pid !== null && r.apps[0].state === 'running' ? r : undefined
  })
  const appPid = rec.apps[0].pid as number
  const members = await pollUntil('the app and its two children', () => {
    const g = appMembers(appPid)
    return g.length >= 3 ? g : undefined
  })
  const guardian = guardianOf(appPid)!
  process.kill(guardian, 'SIGKILL')
  await pollUntil('the guardian to die', () => !alive(guardian))
  process.kill(rec.pid, 'SIGKILL')
  await pollUntil('the supervisor to die', () => !alive(rec.pid))
  t.ok(members.every(alive), 'with no guardian the app processes outlive the supervisor (precondition)')
  const st = podctl(dir, ['status', uuid])
  t.equal(st.status, 0)
  t.match(st.stdout, /^state=exited$/m)
  await pollUntil('the orphaned app processes to die', () => members.every((p) => !alive(p)))
  t.pass('status killed the orphaned app and its children')
})

t.test('SIGKILL of a foreground podctl run: its guardian kills the app', async (t) => {
  const dir = dataDir(t)
  const uuidFile = path.join(dir, 'uuid')
  const run = startPodctl(t, dir, ['run', '--uuid-file-save', uuidFile, '--', 'sh', '-c', 'sleep 1000 & echo ready; wait'])
  await run.line(/^ready$/)
  const uuid = fs.readFileSync(uuidFile, 'utf8').trim()
  const rec = await pollUntil('the app pid', () => {
    const r = podRecord(dir, uuid)
    return r.apps[0].pid !== null ? r : undefined
  })
  const members = await pollUntil('the app and its child', () => (appMembers(rec.apps[0].pid).length >= 2 ? appMembers(rec.apps[0].pid) : undefined))
  // (env execs node: the child we spawned is podctl itself)
  t.equal(rec.pid, run.child.pid, 'the foreground podctl is the supervisor')
  run.child.kill('SIGKILL')
  const r = await run.done
  t.equal(r.signal, 'SIGKILL', 'podctl died')
  await pollUntil('the app processes to die', () => members.every((p) => !alive(p)))
  t.equal(podFromUUIDString(dir, uuid).state, 'exited')
})

t.test('status --wait-ready of a pod whose init app fails: 4, it will never be ready', async (t) => {
  const dir = dataDir(t)
  const m = manifestFile(dir, {
    apiVersion: 'podctl/v1',
    apps: [
      { name: 'init', type: 'init', exec: sh('exit 3') },
      { name: 'web', exec: ['sleep', '1000'] },
    ],
  })
  const uuid = await runDetached(t, dir, ['--manifest', m])
  const r = podctl(dir, ['status', uuid, '--wait-ready'])
  t.equal(r.status, 4)
  t.match(r.stderr, /never be ready/)
  t.equal(podRecord(dir, uuid).apps[1].state, 'created', 'the regular app never started')
})

t.test('status --wait UUID (flag first, as rkt users type it)', async (t) => {
  const dir = dataDir(t)
  const uuid = await runDetached(t, dir, ['--', 'sh', '-c', 'exit 0'])
  for (const flag of ['--wait', '--wait-ready']) {
    const r = podctl(dir, ['status', flag, uuid])
    t.not(r.status, 2, `status ${flag} UUID is not a usage error`, { stderr: r.stderr })
  }
})

t.test('an app whose escaped (setsid) child keeps its stdout open: the pod still ends', async (t) => {
  const dir = dataDir(t)
  const uuidFile = path.join(dir, 'uuid')
  // The child leaves the app's process group (so no group kill reaches it) but inherits its stdout.
  // It says so (from inside its new session) before the app exits, so the app's end cannot catch it still in the group.
  const run = startPodctl(t, dir, [
    'run', '--uuid-file-save', uuidFile, '--', 'sh', '-c',
    'setsid sh -c \'echo > "$PODCTL_APP_ROOT/escaped"; exec sleep 1000\' & while [ ! -e "$PODCTL_APP_ROOT/escaped" ]; do sleep 0.01; done; echo bye; exit 0',
  ])
  await run.line(/^bye$/)
  const uuid = fs.readFileSync(uuidFile, 'utf8').trim()
  await pollUntil('the app to be recorded as exited', () => podRecord(dir, uuid).apps[0].state === 'exited')
  t.equal(podRecord(dir, uuid).apps[0].exit_code, 0)
  let ended = false
  try {
    // Counted polls (about 50 × 25 ms): the supervisor has nothing left to do once the app has exited.
    await pollUntil('the pod to end', () => podFromUUIDString(dir, uuid).state === 'exited', { polls: 50 })
    ended = true
  } catch {
    // still running
  }
  t.ok(ended, 'the pod ends once its app has exited')
  t.strictSame(processesWithEnv([`PODCTL_POD_UUID=${uuid}`]), [], 'and the escaped child was killed with its app')
})
