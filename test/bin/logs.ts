// Black-box tests of `podctl logs` (CONTRACT §4): spawns bin/podctl.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { manifestFile, pollUntil, type Test } from '../helpers/common.js'
import { podctl, runDetached, startPodctl } from '../helpers/cli-util.js'
import { dataDir } from '../helpers/run-util.js'

const sh = (script: string): string[] => ['/bin/sh', '-c', script]

/** Runs a pod of these apps in the foreground to its end; its UUID. */
const runApps = async (t: Test, dir: string, apps: { name: string; exec: string[] }[]): Promise<string> => {
  const m = manifestFile(dir, { apiVersion: 'podctl/v1', apps })
  const uuidFile = path.join(dir, 'uuid')
  t.equal(podctl(dir, ['run', '--manifest', m, '--uuid-file-save', uuidFile]).status, 0, 'the pod ran')
  return fs.readFileSync(uuidFile, 'utf8').trim()
}

t.test('logs of a one-app pod: stdout and stderr, unprefixed', async (t) => {
  const dir = dataDir(t)
  const uuidFile = path.join(dir, 'uuid')
  const run = podctl(dir, ['run', '--uuid-file-save', uuidFile, '--', 'sh', '-c', 'echo out1; echo err1 >&2; echo out2'])
  t.equal(run.status, 0)
  const uuid = fs.readFileSync(uuidFile, 'utf8').trim()
  const r = podctl(dir, ['logs', uuid.slice(0, 8)])
  t.equal(r.status, 0, r.stderr)
  const lines = r.stdout.split('\n')
  t.equal(lines.pop(), '')
  t.same([...lines].sort(), ['err1', 'out1', 'out2'], 'both streams, nothing else')
  t.ok(lines.indexOf('out1') < lines.indexOf('out2'), 'in order')
  t.equal(r.stderr, '')
})

t.test('logs of several apps: prefixes, --app, --tail, unknown app', async (t) => {
  const dir = dataDir(t)
  const uuid = await runApps(t, dir, [
    { name: 'web', exec: sh('for i in 1 2 3 4; do echo web-$i; done') },
    { name: 'db', exec: sh('echo db-1; echo db-2 >&2; echo db-3') },
  ])

  const all = podctl(dir, ['logs', uuid])
  t.equal(all.status, 0, all.stderr)
  const lines = all.stdout.trim().split('\n')
  t.same(lines.filter((l) => l.startsWith('[web] ')), ['[web] web-1', '[web] web-2', '[web] web-3', '[web] web-4'])
  t.same(lines.filter((l) => l.startsWith('[db] ')).sort(), ['[db] db-1', '[db] db-2', '[db] db-3'])
  t.equal(lines.length, 7, 'every line is prefixed with its app')

  const web = podctl(dir, ['logs', uuid, '--app', 'web'])
  t.equal(web.status, 0)
  t.equal(web.stdout, 'web-1\nweb-2\nweb-3\nweb-4\n', 'one app shown: no prefix')

  const tail = podctl(dir, ['logs', uuid, '--tail', '2'])
  t.equal(tail.status, 0)
  const tl = tail.stdout.trim().split('\n')
  t.same(tl.filter((l) => l.startsWith('[web] ')), ['[web] web-3', '[web] web-4'], 'the last 2 lines of web')
  t.equal(tl.filter((l) => l.startsWith('[db] ')).length, 2, 'the last 2 lines of db')
  t.equal(tl.length, 4)

  const tail1 = podctl(dir, ['logs', uuid, '--app', 'web', '--tail', '1'])
  t.equal(tail1.stdout, 'web-4\n')

  const nope = podctl(dir, ['logs', uuid, '--app', 'nope'])
  t.equal(nope.status, 3, 'an unknown app: 3')
  t.match(nope.stderr, /no app named "nope"/)
  t.match(nope.stderr, /web/, 'the hint lists the apps')
  t.equal(nope.stdout, '')

  const bad = podctl(dir, ['logs', uuid, '--tail', 'many'])
  t.equal(bad.status, 2, 'a bad --tail is a usage error')

  const nopod = podctl(dir, ['logs', 'abcdef12'])
  t.equal(nopod.status, 3)
})

t.test('logs of several apps: an app\'s unfinished last line does not run into the next app\'s', async (t) => {
  const dir = dataDir(t)
  const uuid = await runApps(t, dir, [
    { name: 'a', exec: sh('printf "a-1\\na-partial"') },
    { name: 'b', exec: sh('printf "b-partial"') },
  ])
  const r = podctl(dir, ['logs', uuid])
  t.equal(r.status, 0, r.stderr)
  t.same(r.stdout.split('\n').filter(Boolean).sort(), ['[a] a-1', '[a] a-partial', '[b] b-partial'], 'each app\'s lines apart, every one prefixed')
  t.ok(r.stdout.endsWith('\n'), 'the output ends with a newline')
})

t.test('logs --follow prints new lines as they come and returns when the pod exits', async (t) => {
  const dir = dataDir(t)
  const go = path.join(dir, 'go')
  const go2 = path.join(dir, 'go2')
  const uuid = await runDetached(t, dir, [
    '--env', `GO=${go}`, '--env', `GO2=${go2}`,
    '--', 'sh', '-c',
    'echo first; while [ ! -e "$GO" ]; do sleep 0.02; done; echo second; while [ ! -e "$GO2" ]; do sleep 0.02; done; echo third; printf unfinished',
  ])
  const logPath = path.join(dir, 'pods', 'run', uuid, 'logs', 'sh.log')
  // "first" is in the log before --follow starts: it must be printed once.
  await pollUntil('"first" in the log', () => fs.existsSync(logPath) && fs.readFileSync(logPath, 'utf8').includes('first'))
  const follow = startPodctl(t, dir, ['logs', '--follow', uuid])
  await follow.line(/^first$/)
  fs.writeFileSync(go, '')
  await follow.line(/^second$/)
  t.equal(podFromUUIDString(dir, uuid).state, 'running', 'a line written while the pod runs is followed')
  t.equal(follow.child.exitCode, null, '--follow keeps going while the pod runs')
  fs.writeFileSync(go2, '')
  const r = await follow.done
  t.equal(r.status, 0, 'returns once the pod has exited')
  t.equal(r.stdout, 'first\nsecond\nthird\nunfinished\n', 'every line once, the unfinished last one completed')
  t.equal(podFromUUIDString(dir, uuid).state, 'exited')
})

t.test('logs --follow of several apps prefixes each line', async (t) => {
  const dir = dataDir(t)
  const go = path.join(dir, 'go')
  const m = manifestFile(dir, {
    apiVersion: 'podctl/v1',
    apps: [
      { name: 'a', exec: sh('echo a-ready; while [ ! -e "$GO" ]; do sleep 0.02; done; echo a-done'), env: { GO: go } },
      { name: 'b', exec: sh('while [ ! -e "$GO" ]; do sleep 0.02; done; echo b-done'), env: { GO: go } },
    ],
  })
  const uuid = await runDetached(t, dir, ['--manifest', m])
  const follow = startPodctl(t, dir, ['logs', uuid, '--follow'])
  await follow.line(/^\[a\] a-ready$/)
  fs.writeFileSync(go, '')
  const r = await follow.done
  t.equal(r.status, 0)
  t.same(r.stdout.trim().split('\n').sort(), ['[a] a-done', '[a] a-ready', '[b] b-done'])
})

t.test('an app started again after a run that ended mid-line: its output starts on a line of its own', async (t) => {
  const dir = dataDir(t)
  const sandbox = podctl(dir, ['app', 'sandbox', '--detach'])
  t.equal(sandbox.status, 0, sandbox.stderr)
  const uuid = sandbox.stdout.trim()
  t.equal(podctl(dir, ['app', 'add', uuid, '--name', 'p', '--', 'sh', '-c', 'printf partial']).status, 0)
  const runOnce = async (n: number): Promise<void> => {
    t.equal(podctl(dir, ['app', 'start', uuid, 'p']).status, 0, `start ${n}`)
    await pollUntil(`run ${n} of p exited`, async () => {
      const apps = JSON.parse(podctl(dir, ['app', 'list', uuid, '--format', 'json']).stdout) as { name: string; state: string }[]
      return apps.find((a) => a.name === 'p')?.state === 'exited'
    })
  }
  await runOnce(1)
  await runOnce(2)
  const r = podctl(dir, ['logs', uuid, '--app', 'p'])
  t.equal(r.stdout, 'partial\npartial', 'two lines, not "partialpartial"; the last one as the app left it')
  t.equal(podctl(dir, ['rm', '-f', uuid]).status, 0)
})

const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

t.test('--timestamps: each line with the time it arrived; --since: the lines from then on', async (t) => {
  const dir = dataDir(t)
  // "early" lines, a pause of 2 s, then "late" lines. Times are when the supervisor read a line, which on a loaded machine may be some hundred ms after the app wrote it: the pause is asserted with that much room.
  const uuid = await runApps(t, dir, [
    { name: 'web', exec: sh('echo early-1; echo early-2; sleep 2; echo late-1; printf late-2') },
    { name: 'db', exec: sh('echo db-1') },
  ])
  const r = podctl(dir, ['logs', uuid, '--app', 'web', '-t'])
  t.equal(r.status, 0, r.stderr)
  const lines = r.stdout.split('\n')
  t.equal(lines.length, 4, 'four lines; the last has no newline, as the app wrote it')
  const parsed = lines.map((l) => {
    const [time, ...rest] = l.split(' ')
    return { time: time!, text: rest.join(' ') }
  })
  t.same(
    parsed.map((p) => p.text),
    ['early-1', 'early-2', 'late-1', 'late-2'],
  )
  t.ok(
    parsed.every((p) => RFC3339_MS.test(p.time)),
    'every line starts with an RFC 3339 time in UTC, with milliseconds',
  )
  const ms = parsed.map((p) => Date.parse(p.time))
  t.ok(ms[2]! - ms[1]! >= 1000, `the pause shows: ${parsed[1]!.time} then ${parsed[2]!.time}`)
  t.ok(ms[0]! <= ms[1]! && ms[2]! <= ms[3]!, 'in order')

  // --since a time between the two groups: only the late lines.
  const between = new Date(ms[1]! + 700).toISOString()
  const since = podctl(dir, ['logs', uuid, '--app', 'web', `--since=${between}`])
  t.equal(since.stdout, 'late-1\nlate-2', `--since ${between}`)
  // The same time with an offset.
  const d = new Date(ms[1]! + 700 + 3_600_000)
  const offset = `${d.toISOString().slice(0, 19)}.${String(d.getUTCMilliseconds()).padStart(3, '0')}+01:00`
  t.equal(podctl(dir, ['logs', uuid, '--app', 'web', '--since', offset]).stdout, 'late-1\nlate-2', `--since ${offset}`)
  // A duration back from now: everything (the pod ran seconds ago), or nothing that old.
  t.equal(podctl(dir, ['logs', uuid, '--app', 'web', '--since', '1h']).stdout, 'early-1\nearly-2\nlate-1\nlate-2')
  t.equal(podctl(dir, ['logs', uuid, '--app', 'web', '--since', '0s']).stdout, '', '--since 0s: nothing has arrived since now')
  // With several apps: [app] first, then the time; --since and --tail together.
  const both = podctl(dir, ['logs', uuid, '--timestamps', '--since', between, '--tail', '1'])
  t.match(both.stdout, /^\[web\] \d{4}-\S+Z late-2\n$/, 'several apps: "[app] TIME line"; db\'s line is older than --since')
})

t.test('--since that is neither a duration nor a time is exit 2', async (t) => {
  const dir = dataDir(t)
  const uuid = await runApps(t, dir, [{ name: 'a', exec: sh('echo x') }])
  for (const bad of ['yesterday', '-5m', '2026-11-25', '2026-13-45T99:00:00Z', '']) {
    const r = podctl(dir, ['logs', uuid, `--since=${bad}`])
    t.equal(r.status, 2, `--since=${JSON.stringify(bad)}: exit 2`)
    t.match(r.stderr, /^podctl: invalid --since .*: expected a duration \(10m, 1h30m\) or a time/)
    t.equal(r.stdout, '')
  }
})
