// The pod supervisor (lib/run/supervisor.ts), in process: apps, records, exit codes, signals, logs.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { API_VERSION, type PodManifest } from '../../lib/pod/manifest.js'
import { podFromUUIDString, type Pod } from '../../lib/pod/pod.js'
import { createPod } from '../../lib/pod/prepare.js'
import { readRecord } from '../../lib/pod/record.js'
import { addApp, removeApp, startApp, stopApp } from '../../lib/run/apps.js'
import { logFiles } from '../../lib/run/log-writer.js'
import { killGroup } from '../../lib/proc/signal.js'
import { Supervisor, signalExitCode, type OutputSink } from '../../lib/run/supervisor.js'
import { pollUntil, type Test } from '../helpers/common.js'
import { alive, dataDir, processesOfPods } from '../helpers/run-util.js'

const sh = (script: string): string[] => ['/bin/sh', '-c', script]

/** A pod made running by this process: created, moved to run/, locked. */
const runningPod = async (t: Test, m: Omit<PodManifest, 'apiVersion'>): Promise<{ dir: string; pod: Pod; manifest: PodManifest }> => {
  const dir = dataDir(t)
  const manifest = { apiVersion: API_VERSION, ...m } as PodManifest
  const pod = await createPod(dir, manifest, { sync: false })
  pod.toRun({ sync: false })
  t.teardown(() => pod.close())
  return { dir, pod, manifest }
}

/** An output sink that keeps everything, and can wait for a line of an app. */
const capture = () => {
  const chunks: { app: string; stream: string; text: string }[] = []
  const notices: string[] = []
  const waiters: { app: string; re: RegExp; resolve: () => void }[] = []
  const text = (app: string, stream?: string): string =>
    chunks.filter((c) => c.app === app && (stream === undefined || c.stream === stream)).map((c) => c.text).join('')
  const sink: OutputSink = {
    write(app, stream, chunk) {
      chunks.push({ app, stream, text: chunk.toString('utf8') })
      for (const w of [...waiters]) {
        if (w.app === app && w.re.test(text(app))) {
          waiters.splice(waiters.indexOf(w), 1)
          w.resolve()
        }
      }
    },
    notice(message) {
      notices.push(message)
    },
  }
  const waitFor = (app: string, re: RegExp): Promise<void> =>
    re.test(text(app)) ? Promise.resolve() : new Promise((resolve) => waiters.push({ app, re, resolve }))
  return { sink, text, notices, waitFor }
}

t.test('signalExitCode is 128 + the signal number', async (t) => {
  t.equal(signalExitCode('SIGTERM'), 143)
  t.equal(signalExitCode('SIGKILL'), 137)
  t.equal(signalExitCode('SIGINT'), 130)
  t.equal(signalExitCode('SIGHUP'), 129)
})

t.test('killGroup ignores pids that are not groups of ours', async (t) => {
  t.doesNotThrow(() => killGroup(undefined, 'SIGKILL'))
  t.doesNotThrow(() => killGroup(1, 'SIGKILL'), 'never signals init (or -1: everything)')
  t.doesNotThrow(() => killGroup(0, 'SIGKILL'), 'never signals its own group')
  t.doesNotThrow(() => killGroup(2 ** 22 + 12345, 'SIGKILL'), 'a group that does not exist')
  t.ok(alive(process.pid), 'still here')
})

t.test('runs the apps, streams their output, records them, releases the lock', async (t) => {
  const { dir, pod, manifest } = await runningPod(t, {
    apps: [
      { name: 'one', exec: sh('echo out-one; echo err-one >&2; exit 0') },
      { name: 'two', exec: sh('echo out-two; exit 3') },
    ],
  })
  const out = capture()
  const sup = new Supervisor(pod, manifest, { output: out.sink, forwardSignals: false })
  const code = await sup.run()
  t.equal(code, 3, 'the first non-zero exit code')
  t.equal(out.text('one', 'stdout'), 'out-one\n')
  t.equal(out.text('one', 'stderr'), 'err-one\n')
  t.equal(out.text('two', 'stdout'), 'out-two\n')
  t.same(out.notices, [])
  const rec = readRecord(path.join(dir, 'pods', 'run', pod.uuid))!
  t.match(rec, { pid: process.pid, exit_code: 3, started_at: String })
  t.match(rec.apps, [
    { name: 'one', state: 'exited', exit_code: 0, pid: Number, started_at: String, finished_at: String },
    { name: 'two', state: 'exited', exit_code: 3, pid: Number },
  ])
  // Readiness and the guardians are checked while pods run (test/bin/run.ts,
  // test/bin/status.ts); an ended pod's record keeps only its §5 fields.
  t.notOk(rec.ready_at, 'ended: no readiness left in the record')
  t.notOk(rec.apps.some((a: { pid_start?: string | null }) => a.pid_start), 'ended: no app start times left')
  await pollUntil('the apps, their children and guardians to be gone', () => processesOfPods(new Set([pod.uuid])).size === 0)
  t.notOk(pod.holdsLock, 'the lock is released')
  t.equal(podFromUUIDString(dir, pod.uuid).state, 'exited', 'others see the pod exited')
  t.equal(fs.readFileSync(path.join(dir, 'pods', 'run', pod.uuid, 'logs', 'one.log'), 'utf8').split('\n').sort().join('\n'), '\nerr-one\nout-one', 'the log has both streams')
})

t.test('init apps: in order, each to completion; a failing one stops everything after it', async (t) => {
  const order = path.resolve(t.testdirName, 'order') // inside the data dir runningPod makes
  const { pod, manifest } = await runningPod(t, {
    apps: [
      { name: 'web', exec: sh('echo web >> "$ORDER"'), env: { ORDER: order } },
      { name: 'a', type: 'init', exec: sh('echo a >> "$ORDER"; sleep 0.2; echo a-end >> "$ORDER"'), env: { ORDER: order } },
      { name: 'b', type: 'init', exec: sh('echo b >> "$ORDER"; exit 2'), env: { ORDER: order } },
      { name: 'c', type: 'init', exec: sh('echo c >> "$ORDER"'), env: { ORDER: order } },
    ],
  })
  const code = await new Supervisor(pod, manifest, { forwardSignals: false }).run()
  t.equal(code, 2)
  t.equal(fs.readFileSync(order, 'utf8'), 'a\na-end\nb\n')
  const rec = pod.record()
  t.match(rec.apps, [{ name: 'web', state: 'created', pid: null }, { name: 'a', exit_code: 0 }, { name: 'b', exit_code: 2 }, { name: 'c', state: 'created' }])
  t.equal(rec.ready_at, null, 'never ready')
})

t.test('signal() forwards to every app group, children included', async (t) => {
  const { pod, manifest } = await runningPod(t, {
    apps: [
      { name: 'trapper', exec: sh('trap "echo got TERM; exit 9" TERM; echo ready; while :; do sleep 0.05; done') },
      // its child ignores nothing: the group signal reaches it too
      { name: 'parent', exec: sh('sleep 1000 & echo "child $!"; wait') },
    ],
  })
  const out = capture()
  const sup = new Supervisor(pod, manifest, { output: out.sink, forwardSignals: false })
  const done = sup.run()
  await out.waitFor('trapper', /ready/)
  await out.waitFor('parent', /child \d+/)
  const child = Number(/child (\d+)/.exec(out.text('parent'))![1])
  sup.signal('SIGTERM')
  t.equal(await done, 9, "the first app's code, from its trap")
  t.match(out.text('trapper'), /got TERM/)
  t.equal(pod.record().apps[1]!.exit_code, 143, 'the shell died of SIGTERM')
  await pollUntil('the grandchild to die', () => !alive(child))
})

t.test('a signal during the init apps: no regular app starts', async (t) => {
  const { pod, manifest } = await runningPod(t, {
    apps: [
      { name: 'init', type: 'init', exec: sh('echo ready; while :; do sleep 0.05; done') },
      { name: 'web', exec: sh('exit 0') },
    ],
  })
  const out = capture()
  const sup = new Supervisor(pod, manifest, { output: out.sink, forwardSignals: false })
  const done = sup.run()
  await out.waitFor('init', /ready/)
  sup.signal('SIGINT')
  t.equal(await done, 130)
  t.match(pod.record().apps, [{ name: 'init', exit_code: 130 }, { name: 'web', state: 'created', exit_code: null }])
})

t.test('what an app leaves behind in its group is killed when it ends', async (t) => {
  const { pod, manifest } = await runningPod(t, { apps: [{ name: 'leaver', exec: sh('sleep 1000 & echo "left $!"') }] })
  const out = capture()
  t.equal(await new Supervisor(pod, manifest, { output: out.sink, forwardSignals: false }).run(), 0)
  const left = Number(/left (\d+)/.exec(out.text('leaver'))![1])
  await pollUntil('the left-behind process to die', () => !alive(left))
  t.pass('killed')
})

t.test('an app that cannot start: 127 for a missing program, 126 for one that cannot run', async (t) => {
  // (the data dir is the test dir: the file goes beside pods/ once it exists)
  const notExec = path.resolve(t.testdirName, 'not-exec')
  const { dir, pod, manifest } = await runningPod(t, {
    apps: [
      { name: 'fine', exec: sh('echo fine') },
      { name: 'missing', exec: ['/nonexistent/program'] },
      { name: 'noexec', exec: [notExec] },
    ],
  })
  fs.writeFileSync(notExec, 'echo no\n', { mode: 0o644 })
  const out = capture()
  const code = await new Supervisor(pod, manifest, { output: out.sink, forwardSignals: false }).run()
  t.equal(code, 127, 'the first failure in manifest order')
  t.match(pod.record().apps, [
    { name: 'fine', exit_code: 0 },
    { name: 'missing', state: 'exited', exit_code: 127, started_at: String, finished_at: String },
    { name: 'noexec', state: 'exited', exit_code: 126 },
  ])
  t.equal(out.notices.length, 2)
  t.match(out.notices.join('\n'), /app missing could not start/)
  t.match(out.notices.join('\n'), /app noexec could not start/)
  t.match(fs.readFileSync(path.join(dir, 'pods', 'run', pod.uuid, 'logs', 'missing.log'), 'utf8'), /could not start/)
  t.equal(podFromUUIDString(dir, pod.uuid).state, 'exited')
})

t.test('apps get their environment and run in their root (or workingDirectory under it)', async (t) => {
  const script = 'printf "%s|%s|%s|%s|%s" "$PODCTL_POD_UUID" "$PODCTL_APP_NAME" "$PODCTL_APP_ROOT" "$K" "$(pwd -P)"'
  const { dir, pod, manifest } = await runningPod(t, {
    apps: [
      { name: 'a', exec: sh(script), env: { K: 'v a' } },
      { name: 'b', exec: sh(script), workingDirectory: '/x/y' },
    ],
  })
  const out = capture()
  t.equal(await new Supervisor(pod, manifest, { output: out.sink, forwardSignals: false }).run(), 0)
  const root = (n: string) => path.join(dir, 'pods', 'run', pod.uuid, 'apps', n)
  t.equal(out.text('a'), `${pod.uuid}|a|${root('a')}|v a|${fs.realpathSync(root('a'))}`)
  t.equal(out.text('b'), `${pod.uuid}|b|${root('b')}||${fs.realpathSync(path.join(root('b'), 'x', 'y'))}`)
})

t.test('logMaxBytes: a chatty app rotates its log and keeps the newest output', async (t) => {
  const { dir, pod, manifest } = await runningPod(t, {
    apps: [{ name: 'chatty', exec: sh('i=0; while [ $i -lt 200 ]; do echo "line $i"; i=$((i+1)); done') }],
  })
  t.equal(await new Supervisor(pod, manifest, { forwardSignals: false, logMaxBytes: 256 }).run(), 0)
  const podPath = path.join(dir, 'pods', 'run', pod.uuid)
  const files = logFiles(podPath, 'chatty')
  t.equal(files.length, 3, 'the log and two rotations')
  for (const f of files) t.ok(fs.statSync(f).size <= 256, `${path.basename(f)} within the cap`)
  const kept = files.map((f) => fs.readFileSync(f, 'utf8')).join('')
  t.ok(kept.endsWith('line 198\nline 199\n'), 'the newest output is kept')
  const all = Array.from({ length: 200 }, (_, i) => `line ${i}\n`).join('')
  t.ok(all.endsWith(kept), 'what is kept is a suffix of the output: nothing lost or reordered within it')
})

t.test('a mutable pod: apps added, started, stopped, removed while the supervisor runs', async (t) => {
  const { dir, pod, manifest } = await runningPod(t, { mutable: true, apps: [] })
  const out = capture()
  const sup = new Supervisor(pod, manifest, { output: out.sink, forwardSignals: false })
  const done = sup.run()
  const other = podFromUUIDString(dir, pod.uuid) // as another podctl process would see it
  t.equal(other.state, 'running')
  await addApp(other, { name: 'svc', exec: sh('echo up; exec sleep 1000') })
  t.match(pod.record().apps, [{ name: 'svc', state: 'created' }], 'the supervisor picked the added app up')
  await startApp(podFromUUIDString(dir, pod.uuid), 'svc')
  await out.waitFor('svc', /up/)
  const pid = pod.record().apps[0]!.pid!
  t.ok(alive(pid))
  await stopApp(podFromUUIDString(dir, pod.uuid), 'svc', 5_000)
  t.match(pod.record().apps, [{ name: 'svc', state: 'exited', exit_code: 143 }])
  await addApp(podFromUUIDString(dir, pod.uuid), { name: 'eph', type: 'ephemeral', exec: sh('exit 5') })
  await startApp(podFromUUIDString(dir, pod.uuid), 'eph')
  await pollUntil('the ephemeral app to end', () => pod.record().apps.find((a) => a.name === 'eph')?.state === 'exited')
  await removeApp(podFromUUIDString(dir, pod.uuid), 'svc')
  t.same(pod.record().apps.map((a) => a.name), ['eph'])
  sup.signal('SIGTERM')
  t.equal(await done, 0, 'neither a stopped-and-removed app nor an ephemeral one decides the exit code')
  t.equal(podFromUUIDString(dir, pod.uuid).state, 'exited')
})

t.test('ready means every regular app is recorded as running, with its pid', async (t) => {
  for (let round = 0; round < 5; round++) await t.test(`round ${round}`, async (t) => {
    const { dir, pod, manifest } = await runningPod(t, {
      apps: [
        { name: 'a', exec: sh('sleep 1000') },
        { name: 'b', exec: sh('sleep 1000') },
      ],
    })
    const sup = new Supervisor(pod, manifest, { forwardSignals: false })
    const ran = sup.run()
    const podDir = path.join(dir, 'pods', 'run', pod.uuid)
    // Polled on every turn of the event loop (the supervisor runs in this
    // process): any record with ready_at must already show the apps' pids.
    let rec = readRecord(podDir)
    while (!rec?.ready_at) {
      await new Promise((r) => setImmediate(r))
      rec = readRecord(podDir)
    }
    t.strictSame(
      rec.apps.map((a) => [a.name, a.state, typeof a.pid]),
      [
        ['a', 'running', 'number'],
        ['b', 'running', 'number'],
      ],
      `round ${round}: ready, and both apps recorded as running`,
    )
    sup.signal('SIGKILL')
    await ran
  })
})
