// The error contract of CONTRACT §4 across commands: exit codes, the
// "podctl: ..." message, the JSON error object with --format json, and no
// stack trace without --debug. Spawns bin/podctl.
import t from 'tap'
import path from 'node:path'
import { listTree, STACK_RE } from '../helpers/common.js'
import { exitedPod, jsonErrors, podctl, preparedPod } from '../helpers/cli-util.js'
import { holdRunning } from '../helpers/pod-util.js'

const MISSING = '0f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f0f'

t.test('usage errors: unknown flags, commands and arguments are exit 2', async (t) => {
  const dir = t.testdir({})
  const cases: string[][] = [
    ['--bogus', 'list'],
    ['list', '--bogus'],
    ['list', '-z'],
    ['prepare', '--bogus', '--', 'true'],
    ['status', MISSING, '--bogus'],
    ['rm', MISSING, '--force-it'],
    ['gc', '--grace', '0s'],
    ['cat-manifest', MISSING, '--indent'],
    ['version', '--bogus'],
    ['frobnicate'],
    ['lsit'],
    ['status'],
    ['status', MISSING, MISSING],
    ['list', 'extra'],
    ['list', '--format'],
    ['--dir'],
  ]
  for (const args of cases) {
    const r = podctl(dir, args)
    t.equal(r.status, 2, `${args.join(' ')}: exit 2`)
    t.equal(r.stdout, '', 'nothing on stdout')
    t.match(r.stderr, /^podctl: \S/, 'stderr starts with "podctl: "')
    t.notMatch(r.stderr, STACK_RE, 'no stack trace')
  }
  t.match(podctl(dir, ['lsit']).stderr, /list/, 'a typo gets a suggestion')
  t.match(podctl(dir, ['list', '--bogus']).stderr, /--bogus/, 'the unknown flag is named')
  t.strictSame(listTree(dir), [], 'nothing was written')
})

t.test('bad UUIDs are exit 2 for every command that takes one', async (t) => {
  const dir = t.testdir({})
  await preparedPod(dir)
  const bad = ['xyz', 'g0000000', '../../etc', '12345678-1234-4234-8234-12345678901234', '12345678-1234-1234-1234-123456789012', ' ', '--']
  for (const cmd of ['status', 'rm', 'cat-manifest']) {
    for (const arg of bad) {
      const args = arg === '--' ? [cmd, '--', arg] : [cmd, arg]
      const r = podctl(dir, args)
      t.equal(r.status, 2, `${cmd} ${JSON.stringify(arg)}: exit 2`)
      t.equal(r.stdout, '')
      t.match(r.stderr, /^podctl: /)
      t.notMatch(r.stderr, STACK_RE)
    }
  }
})

t.test('exit codes: 3 no such pod, 4 wrong state, 5 timed out', async (t) => {
  const dir = t.testdir({})
  const running = await preparedPod(dir)
  await holdRunning(t, dir, running)
  const cases: [string[], number][] = [
    [['status', MISSING], 3],
    [['rm', MISSING], 3],
    [['cat-manifest', MISSING], 3],
    [['rm', running], 4],
    [['status', running, '--wait=10ms'], 5],
  ]
  for (const [args, code] of cases) {
    const r = podctl(dir, args)
    t.equal(r.status, code, `${args[0]}: exit ${code}`)
    t.equal(r.stdout, '')
    t.match(r.stderr, /^podctl: \S/)
    t.notMatch(r.stderr, STACK_RE)
  }
})

t.test('with --format json an error is also one JSON object on stderr', async (t) => {
  const dir = t.testdir({})
  const running = await preparedPod(dir)
  await holdRunning(t, dir, running)
  const cases: { args: string[]; status: number; code: string }[] = [
    { args: ['status', MISSING, '--format', 'json'], status: 3, code: 'ENOPOD' },
    { args: ['status', 'zz', '--format', 'json'], status: 2, code: 'EUSAGE' },
    { args: ['status', running, '--wait=10ms', '--format', 'json'], status: 5, code: 'ETIMEOUT' },
    { args: ['status', MISSING, '--format=json-pretty'], status: 3, code: 'ENOPOD' },
    { args: ['list', '--format', 'json', '--state', 'nope'], status: 2, code: 'EUSAGE' },
    { args: ['list', '--format', 'json', '--bogus'], status: 2, code: 'EUSAGE' },
    { args: ['gc', '--format', 'json', '--grace-period', 'x'], status: 2, code: 'EUSAGE' },
    { args: ['version', '--format', 'json', '--bogus'], status: 2, code: 'EUSAGE' },
  ]
  for (const c of cases) {
    const r = podctl(dir, c.args)
    t.equal(r.status, c.status, `${c.args.join(' ')}: exit ${c.status}`)
    t.equal(r.stdout, '', 'nothing on stdout')
    t.match(r.stderr, /^podctl: \S/, 'the human message comes first')
    const objs = jsonErrors(r.stderr)
    t.equal(objs.length, 1, 'exactly one JSON object')
    const o = objs[0] as { error: Record<string, unknown> }
    t.strictSame(Object.keys(o), ['error'])
    t.strictSame(Object.keys(o.error).sort(), ['code', 'message'])
    t.equal(o.error.code, c.code)
    t.type(o.error.message, 'string')
    t.ok((o.error.message as string).length > 0 && r.stderr.includes(`podctl: ${(o.error.message as string).split('\n')[0]}`), 'the same message as the text line')
    t.notMatch(r.stderr, STACK_RE)
  }
  // Without --format json there is no JSON on stderr.
  const plain = podctl(dir, ['status', MISSING])
  t.equal(jsonErrors(plain.stderr).length, 0)
  const table = podctl(dir, ['list', '--format', 'table', '--state', 'nope'])
  t.equal(jsonErrors(table.stderr).length, 0)
})

t.test('no stack trace without --debug; --debug shows one', async (t) => {
  const dir = t.testdir({})
  const uuid = await exitedPod(dir)
  const failing: string[][] = [['status', MISSING], ['rm', 'zz'], ['gc', '--grace-period', 'soon']]
  for (const args of failing) {
    const quiet = podctl(dir, args)
    t.not(quiet.status, 0)
    t.notMatch(quiet.stderr, STACK_RE, `${args.join(' ')}: no stack`)
    const loud = podctl(dir, ['--debug', ...args])
    t.equal(loud.status, quiet.status, '--debug does not change the exit code')
    t.match(loud.stderr, STACK_RE, `${args.join(' ')} --debug: a stack trace`, )
    // The CLI runs bundled (dist/bundle/); its source maps lead back to lib/.
    t.match(loud.stderr, /^ +at .*\/lib\/[\w/-]+\.ts:\d+:\d+\)?$/m, `${args.join(' ')} --debug: the trace names lib/*.ts`)
    t.match(loud.stderr, /^podctl: .*\d+(\.\d+)? ?ms/m, '--debug: timings')
  }
  const ok = podctl(dir, ['--debug', 'status', uuid])
  t.equal(ok.status, 0)
  t.match(ok.stdout, /^state=exited$/m, 'stdout is unchanged by --debug')
  t.notMatch(ok.stdout, /took/, 'timings go to stderr')
})

t.test('PODCTL_DIR is used when --dir is not given', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const env = { ...process.env, PODCTL_DIR: dir }
  const p = podctl(undefined, ['prepare', '--', 'true'], { env })
  t.equal(p.status, 0)
  const list = JSON.parse(podctl(undefined, ['list', '--format', 'json'], { env }).stdout) as { uuid: string }[]
  t.strictSame(list.map((x) => x.uuid), [p.stdout.trim()])
  const other = path.join(path.dirname(dir), 'other')
  t.equal(podctl(other, ['list', '--format', 'json'], { env }).stdout, '[]\n', '--dir wins over PODCTL_DIR')
})
