// One parser for every command line (commander, lib/cli/program.ts): the
// three ways in which hand-written argv scans had drifted from it, and the
// forms of --wait that rkt users type.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { podsIn, STACK_RE } from '../helpers/common.js'
import { exitedPod, podctl } from '../helpers/cli-util.js'

t.test('a global option with its value missing is a usage error, wherever it is', async (t) => {
  const dir = t.testdir({})
  const home = t.testdir({})
  // Without --dir, list would read $PODCTL_DIR: point it at a data dir with a pod.
  await exitedPod(dir)
  const env = { ...process.env, PODCTL_DIR: dir, HOME: home }
  for (const args of [['list', '--dir'], ['--dir'], ['status', '--dir'], ['run', '--dir']]) {
    const r = podctl(undefined, args, { env })
    t.equal(r.status, 2, `${args.join(' ')}: exit 2`)
    t.equal(r.stdout, '', 'nothing listed')
    t.match(r.stderr, /^podctl: option '--dir <path>' argument missing/, 'says which value is missing')
  }
})

t.test("--debug after -- is the app's argument, not podctl's flag", async (t) => {
  const dir = t.testdir({})
  const r = podctl(dir, ['run', '--name', 'x', '--', '/bin/echo', '--debug'])
  t.equal(r.status, 0)
  t.equal(r.stdout, '--debug\n', 'the app got it')
  t.equal(r.stderr, '', 'and podctl printed no timings')
  const failing = podctl(dir, ['run', '--', '/nonexistent/prog', '--debug'])
  t.equal(failing.status, 2)
  t.notMatch(failing.stderr, STACK_RE, 'no stack trace for a usage error either')
  t.notMatch(failing.stderr, /took .* ms/)
  const prepared = podctl(dir, ['prepare', '--', '/bin/echo', '--dir', '/elsewhere', '--debug'])
  t.equal(prepared.status, 0)
  t.strictSame(JSON.parse(podctl(dir, ['cat-manifest', prepared.stdout.trim()]).stdout).apps[0].exec, ['/bin/echo', '--dir', '/elsewhere', '--debug'], 'every word after -- is the command')
})

t.test('--dir and --debug are taken before or after the command word, by every command', async (t) => {
  const dir = t.testdir({})
  const run = podctl(undefined, ['run', '--dir', dir, '--', '/bin/true'])
  t.equal(run.status, 0, 'run --dir D -- CMD')
  t.equal(podsIn(dir, 'run').length, 1, 'the pod is in D')
  for (const args of [
    ['list', '--dir', dir, '--format', 'json'],
    ['--dir', dir, 'list', '--format', 'json'],
    ['list', '--format', 'json', `--dir=${dir}`],
  ]) {
    const r = podctl(undefined, args)
    t.equal(r.status, 0, args.join(' '))
    t.equal((JSON.parse(r.stdout) as unknown[]).length, 1, 'the pod of D')
  }
  const debug = podctl(undefined, ['list', '--dir', dir, '--debug'])
  t.equal(debug.status, 0)
  t.match(debug.stderr, /^podctl: took \d+(\.\d+)? ms$/m, 'list --debug: timings')
})

t.test('status --wait takes its duration after "=" or as the next word, and the pod either way', async (t) => {
  const dir = t.testdir({})
  const uuid = await exitedPod(dir)
  const forms = [
    ['status', uuid, '--wait=30s'],
    ['status', uuid, '--wait', '30s'],
    ['status', '--wait', '30s', uuid],
    ['status', '--wait', uuid],
    ['status', '--wait=1s', uuid],
    ['status', uuid, '--wait'],
  ]
  for (const args of forms) {
    const r = podctl(dir, args)
    t.equal(r.status, 0, args.join(' '))
    t.match(r.stdout, /^state=exited$/m)
  }
  const bad = podctl(dir, ['status', uuid, '--wait', 'soon'])
  t.equal(bad.status, 2, 'a bad duration in the space form: exit 2')
  t.match(bad.stderr, /^podctl: invalid --wait "soon"/)
  const none = podctl(dir, ['status', '--wait', '30s'])
  t.equal(none.status, 2, 'a duration and no pod: the word is taken as the pod, exit 2')
  t.match(none.stderr, /^podctl: "30s" is not a pod UUID/)
  const neither = podctl(dir, ['status', '--wait', '30s', '--wait-ready', '1s'])
  t.equal(neither.status, 2, 'two durations and no pod: exit 2')
  t.match(neither.stderr, /missing required argument 'uuid'/)
})

t.test('durations are checked once the whole line is parsed, so a later --format json still applies', async (t) => {
  const dir = t.testdir({})
  const r = podctl(dir, ['gc', '--grace-period', 'soon', '--format', 'json'])
  t.equal(r.status, 2)
  t.match(r.stderr, /^podctl: invalid --grace-period "soon"/)
  t.match(r.stderr, /^\{"error":\{"code":"EUSAGE","message":"invalid --grace-period \\"soon\\"/m)
  t.equal(fs.existsSync(path.join(dir, 'pods')), false, 'nothing was written')
})
