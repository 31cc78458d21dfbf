// The habits rkt and podman users bring: ps and ls for
// list, --no-legend, -q, --filter and --sort, rm --all and rm -f, stop
// --uuid-file, inspect, the short options, --flag=value; and status --wait
// racing rm (part 1): a pod removed while waited for is exit 3, never a
// status that says "deleting" with exit 0.
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { BIN, UUID_RE, pollUntil, type Test } from '../helpers/common.js'
import { podctl, podctlAsync, runDetached } from '../helpers/cli-util.js'
import { nodeCommand } from '../helpers/launcher.js'
import { dataDir } from '../helpers/run-util.js'

const lines = (s: string): string[] => s.split('\n').filter(Boolean)

/** Three pods: web (exited), srv (running), prep (prepared). */
const threePods = async (t: Test) => {
  const dir = dataDir(t)
  const web = podctl(dir, ['run', '-n', 'web', '-e', 'A=1', '--', '/bin/true'])
  t.equal(web.status, 0, web.stderr)
  const srv = await runDetached(t, dir, ['-n', 'srv', '--', 'sleep', '300'])
  const prep = podctl(dir, ['prepare', '-q', '--name=prep', '--', '/bin/true']).stdout.trim()
  t.match(prep, UUID_RE, 'prepare -q prints the UUID')
  const all = JSON.parse(podctl(dir, ['list', '--format', 'json']).stdout) as { uuid: string; name: string }[]
  const uuidOf = (name: string) => all.find((p) => p.name === name)!.uuid
  return { dir, web: uuidOf('web'), srv, prep }
}

t.test('ps and ls are list; --no-legend drops the header (--no-legacy still does, unlisted); -q prints full UUIDs', async (t) => {
  const { dir, web, srv, prep } = await threePods(t)
  const list = podctl(dir, ['list', '--full']).stdout
  t.equal(podctl(dir, ['ps', '--full']).stdout, list, 'ps')
  t.equal(podctl(dir, ['ls', '--full']).stdout, list, 'ls')
  t.match(lines(list)[0], /^UUID\s+NAME/)
  t.same(podctl(dir, ['list', '--no-legend', '--full']).stdout, lines(list).slice(1).join('\n') + '\n')
  t.same(podctl(dir, ['list', '--no-legacy', '--full']).stdout, lines(list).slice(1).join('\n') + '\n')
  const help = podctl(dir, ['list', '--help']).stdout
  t.match(help, /--no-legend/)
  t.notMatch(help, /--no-legacy/, 'the old spelling is not advertised')
  t.match(podctl(dir, ['help']).stdout + podctl(dir, ['--help']).stdout, /list\|ps\|ls|list \[options\]|ps, ls|list\|ps/, '--help names the aliases')
  t.same(lines(podctl(dir, ['list', '-q']).stdout).sort(), [web, srv, prep].sort(), '-q: full UUIDs, one a line, nothing else')
  const both = podctl(dir, ['list', '-q', '--format', 'json'])
  t.equal(both.status, 2, '-q with --format json is refused')
  t.match(podctl(dir, ['volume', 'ls', '--no-legend']).stdout, '', 'volume ls --no-legend: no header')
  t.equal(podctl(dir, ['app', 'list', srv, '--no-legend']).stdout.split('\n')[0]!.split(/\s+/)[0], 'sleep', 'app list --no-legend')
})

t.test('--filter state=, name=, app= (repeatable, comma-separated; a key twice is either), --sort', async (t) => {
  const { dir, web, srv, prep } = await threePods(t)
  const q = (...args: string[]) => {
    const r = podctl(dir, ['list', '-q', ...args])
    t.equal(r.status, 0, `list -q ${args.join(' ')}`, { stderr: r.stderr })
    return lines(r.stdout)
  }
  t.same(q('--filter', 'state=running'), [srv])
  t.same(q('--filter=state=exited'), [web], '--filter=VALUE')
  t.same(q('--filter', 'name=web,name=prep', '--sort', 'name'), [prep, web], 'one key twice: either; sorted by name')
  t.same(q('--filter', 'app=sleep'), [srv], 'app= matches an app name')
  t.same(q('--filter', 'app=true', '--filter', 'state=prepared'), [prep], 'two keys: both')
  t.same(q('--filter', 'name=nope'), [], 'no match: nothing, exit 0')
  t.same(q('--sort', 'state'), [prep, srv, web], 'by state: lifecycle order')
  t.same(q('--state', 'exited'), [web], '--state is --filter state=')
  const json = JSON.parse(podctl(dir, ['list', '--format', 'json', '--filter', 'app=sleep']).stdout) as { uuid: string }[]
  t.same(json.map((p) => p.uuid), [srv], 'filters apply to JSON too')
  for (const [args, msg] of [
    [['--filter', 'color=red'], /invalid --filter "color=red": expected KEY=VALUE with KEY one of state, name, app/],
    [['--filter', 'state'], /invalid --filter "state"/],
    [['--filter', 'state=happy'], /unknown state "happy"/],
    [['--sort', 'size'], /--sort.*size.*choices|Allowed choices/i],
  ] as const) {
    const r = podctl(dir, ['list', ...args])
    t.equal(r.status, 2, `${args.join(' ')}: exit 2`)
    t.match(r.stderr, msg)
  }
})

t.test('rm --all removes every pod no process works on; rm -f stops a running pod first; rm -af takes running ones too', async (t) => {
  const { dir, web, srv, prep } = await threePods(t)
  const r = podctl(dir, ['rm', '--all'])
  t.equal(r.status, 0, r.stderr)
  t.same(lines(r.stdout).sort(), [web, prep].sort(), 'the exited and the prepared pod')
  t.same(lines(podctl(dir, ['list', '-q']).stdout), [srv], 'the running pod is left')
  t.equal(podctl(dir, ['rm', srv]).status, 4, 'rm of a running pod is refused')
  const f = podctl(dir, ['rm', '-f', srv])
  t.equal(f.status, 0, f.stderr)
  t.equal(f.stdout, `${srv}\n`)
  t.same(podctl(dir, ['list', '-q']).stdout, '', 'gone')
  const again = podctl(dir, ['rm', '-a'])
  t.equal(again.status, 0, 'rm -a with nothing to remove: exit 0')
  t.equal(again.stdout, '')
  const two = [await runDetached(t, dir, ['--', 'sleep', '300']), await runDetached(t, dir, ['--', 'sleep', '300'])]
  const af = podctl(dir, ['rm', '-af'])
  t.equal(af.status, 0, af.stderr)
  t.same(lines(af.stdout).sort(), two.sort(), 'rm -af: running pods too')
  t.equal(podctl(dir, ['rm']).status, 2, 'rm with nothing named: exit 2')
})

t.test('stop --uuid-file and -f; run -d; -v; inspect is the JSON of status', async (t) => {
  const dir = dataDir(t)
  const base = t.testdir({})
  const uuidFile = `${base}/u`
  const d = podctl(dir, ['run', '-d', '--uuid-file-save', uuidFile, '--', 'sleep', '300'])
  t.equal(d.status, 0, d.stderr)
  const uuid = d.stdout.trim()
  t.match(uuid, UUID_RE, 'run -d prints the UUID')
  // run -d returns once the pod runs, maybe before its app has a pid: the two reads below must see one state.
  t.equal(podctl(dir, ['status', uuid, '--wait-ready=10s']).status, 0, 'ready')
  const inspect = podctl(dir, ['inspect', uuid.slice(0, 8)])
  t.equal(inspect.status, 0, inspect.stderr)
  t.equal(inspect.stdout, podctl(dir, ['status', uuid, '--format', 'json-pretty']).stdout, 'inspect = status --format json-pretty')
  t.equal(lines(podctl(dir, ['inspect', uuid, '--format', 'json']).stdout).length, 1, '--format json: one line')
  t.equal(podctl(dir, ['inspect', 'ffffffff']).status, 3, 'inspect of no such pod: exit 3')
  const s = podctl(dir, ['stop', '-f', '--uuid-file', uuidFile])
  t.equal(s.status, 0, s.stderr)
  t.equal(s.stdout, `${uuid}\n`)
  t.equal(JSON.parse(podctl(dir, ['inspect', uuid, '--format', 'json']).stdout).state, 'exited')
  t.equal(podctl(dir, ['stop']).status, 2, 'stop with nothing named: exit 2')
  const v = podctl(dir, ['-v'])
  t.equal(v.status, 0)
  t.equal(v.stdout, podctl(dir, ['--version']).stdout, '-v is --version')
})

t.test("status --wait of a finished pod whose lock a remover keeps taking and letting go: exited, never running", async (t) => {
  const dir = dataDir(t)
  const uuid = await runDetached(t, dir, ['--', 'true'])
  t.equal(podctl(dir, ['status', uuid, '--wait']).status, 0)
  // As rm and gc do, a process takes the finished pod's lock in run/ (where it reads "running") and lets it go, again and again.
  const dist = new URL('../../dist/lib/pod/locks.js', import.meta.url).href
  const [node, argv] = nodeCommand(['--input-type=module', '-e', `
    const { tryLock } = await import(${JSON.stringify(dist)})
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
    console.log('toggling')
    for (const end = Date.now() + 60000; Date.now() < end; ) {
      const lock = tryLock(${JSON.stringify(dir)}, ${JSON.stringify(uuid)})
      await sleep(20)
      lock?.release()
      await sleep(2)
    }`])
  const toggler = spawn(node, argv, { stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(() => void toggler.kill('SIGKILL'))
  await new Promise((resolve) => toggler.stdout!.once('data', resolve))
  const states: string[] = []
  for (let i = 0; i < 12; i++) {
    const w = await podctlAsync(t, dir, ['status', uuid, '--wait'])
    t.equal(w.status, 0, w.stderr)
    states.push(/^state=(.*)$/m.exec(w.stdout)?.[1] ?? w.stdout)
  }
  t.same(states, Array(12).fill('exited'), 'every status --wait printed the pod as exited')
})

t.test('status --wait racing rm: the pod finished (exit 0, an exited state) or it was removed (exit 3); never "deleting" with 0', async (t) => {
  const dir = dataDir(t)
  const outcomes: string[] = []
  for (let i = 0; i < 6; i++) {
    const uuid = await runDetached(t, dir, ['--', 'sleep', '300'])
    const waiting = podctlAsync(t, dir, ['status', uuid, '--wait'])
    await new Promise((r) => setTimeout(r, 150))
    const rm = podctl(dir, ['rm', '-f', uuid])
    t.equal(rm.status, 0, rm.stderr)
    const w = await waiting
    outcomes.push(`${w.status}`)
    if (w.status === 0) t.match(w.stdout, /^state=exited( garbage)?\n/, `trial ${i}: finished before it was removed`)
    else {
      t.equal(w.status, 3, `trial ${i}: removed while waited for: exit 3`)
      // Under load the waiter's Node may start only after rm has ended: then it finds no pod at all.
      t.match(w.stderr, /was removed while status waited for it|no longer exists|no such pod/)
    }
  }
  t.comment(`exit codes: ${outcomes.join(' ')}`)
  // The removal side, every time: a prepared pod never finishes, so the waiter can only see it go.
  for (let i = 0; i < 3; i++) {
    const uuid = podctl(dir, ['prepare', '--', '/bin/true']).stdout.trim()
    const waiting = podctlAsync(t, dir, ['status', uuid, '--wait'])
    await new Promise((r) => setTimeout(r, 300))
    t.equal(podctl(dir, ['rm', uuid]).status, 0)
    const w = await waiting
    t.equal(w.status, 3, `prepared pod ${i}: removed while waited for: exit 3`)
    t.equal(w.stdout, '', 'no status printed')
    // On a busy machine the waiter's Node may start after the removal: then it finds no such pod.
    t.match(w.stderr, /no longer exists|was removed while status waited for it|no such pod/)
  }
})

t.test('every command\'s --help lists the global options and its short forms', async (t) => {
  const shortForms: Record<string, string[]> = {
    list: ['-q, --quiet', '--no-legend', '--filter', '--sort'],
    run: ['-d, --detach', '-e, --env', '-n, --name'],
    prepare: ['-q, --quiet', '-e, --env', '-n, --name'],
    'run-prepared': ['-d, --detach'],
    rm: ['-a, --all', '-f, --force'],
    stop: ['-f, --force', '--uuid-file'],
    logs: ['-f, --follow'],
    inspect: ['--format'],
    status: ['--wait'],
    'volume create': ['--size-limit'],
    controller: ['--workers'],
  }
  for (const [cmd, flags] of Object.entries(shortForms)) {
    const r = podctl(undefined, [...cmd.split(' '), '--help'])
    t.equal(r.status, 0, `${cmd} --help`)
    for (const f of [...flags, '--dir <path>', '--debug']) t.ok(r.stdout.includes(f), `${cmd} --help lists ${f}`)
  }
  // A parent's own options are not its subcommand's: status takes no --workers (commander would say "unknown option").
  const status = podctl(undefined, ['controller', 'status', '--help'])
  t.equal(status.status, 0)
  for (const f of ['--dir <path>', '--format']) t.ok(status.stdout.includes(f), `controller status --help lists ${f}`)
  for (const f of ['--workers', '--lease-duration', '--once']) t.notOk(status.stdout.includes(f), `controller status --help does not list controller's ${f}`)
})

t.test('colour for states in list and status: on a terminal, with FORCE_COLOR; never with NO_COLOR or into a pipe', async (t) => {
  const dir = dataDir(t)
  t.equal(podctl(dir, ['run', '--', '/bin/true']).status, 0)
  const uuid = podctl(dir, ['list', '-q']).stdout.trim()
  const env = (extra: Record<string, string>): NodeJS.ProcessEnv => {
    const e: NodeJS.ProcessEnv = { ...process.env, ...extra }
    if (!('FORCE_COLOR' in extra)) delete e.FORCE_COLOR
    if (!('NO_COLOR' in extra)) delete e.NO_COLOR
    return e
  }
  const blue = '\u001b[34mexited\u001b[39m'
  t.notMatch(podctl(dir, ['list'], { env: env({}) }).stdout, '\u001b[', 'a pipe: no escape sequences')
  t.match(podctl(dir, ['list'], { env: env({ FORCE_COLOR: '1' }) }).stdout, blue, 'FORCE_COLOR: the state is coloured')
  t.match(podctl(dir, ['status', uuid], { env: env({ FORCE_COLOR: '1' }) }).stdout, `state=${blue}\n`, 'in status too')
  t.notMatch(podctl(dir, ['list'], { env: env({ FORCE_COLOR: '1', NO_COLOR: '1' }) }).stdout, '\u001b[', 'NO_COLOR wins')
  t.notMatch(podctl(dir, ['list'], { env: env({ FORCE_COLOR: '0' }) }).stdout, '\u001b[', 'FORCE_COLOR=0: none')
  t.notMatch(podctl(dir, ['list', '--format', 'json'], { env: env({ FORCE_COLOR: '1' }) }).stdout, '\u001b[', 'never in JSON')
  // --full: absolute times, so that the two runs print the same text ("just now" can turn into "1 second ago" in between).
  const lines = podctl(dir, ['list', '--full'], { env: env({ FORCE_COLOR: '1' }) }).stdout.replace(/\u001b\[\d+m/g, '')
  t.equal(lines, podctl(dir, ['list', '--full'], { env: env({}) }).stdout, 'columns line up as without colour')
  // A real terminal (util-linux script gives podctl a pseudo-terminal).
  const hasScript = spawnSync('script', ['-qec', 'true', '/dev/null']).status === 0
  if (!hasScript) return t.comment('skipped the pseudo-terminal check: no util-linux script here')
  const cmd = `/usr/bin/env -u NODE_OPTIONS -u FORCE_COLOR -u NO_COLOR ${process.execPath} ${BIN} --dir ${dir} list`
  const tty = spawnSync('script', ['-qec', cmd, '/dev/null'], { encoding: 'utf8' })
  t.match(tty.stdout, blue, 'on a terminal: coloured')
  const ttyNo = spawnSync('script', ['-qec', `/usr/bin/env NO_COLOR=1 ${cmd.slice('/usr/bin/env '.length)}`, '/dev/null'], { encoding: 'utf8' })
  t.notMatch(ttyNo.stdout, '\u001b[3', 'on a terminal with NO_COLOR: none')
})

t.test('rm of many pods on a terminal: the progress line never runs into stdout and is gone at the end', async (t) => {
  const hasScript = spawnSync('script', ['-qec', 'true', '/dev/null']).status === 0
  if (!hasScript) return t.plan(0, 'skipped: no util-linux script here to give podctl a terminal')
  const dir = dataDir(t)
  const { preparePod } = await import('../../lib/pod/prepare.js')
  const uuids: string[] = []
  for (let i = 0; i < 60; i++) uuids.push((await preparePod(dir, { apiVersion: 'podctl/v1', apps: [{ name: 'a', exec: ['/bin/true'] }] }, { sync: false })).uuid)
  // stdout and stderr on one pseudo-terminal, as a person sees them.
  const cmd = `/usr/bin/env -u NODE_OPTIONS ${process.execPath} ${BIN} --dir ${dir} rm --all`
  const r = spawnSync('script', ['-qec', cmd, '/dev/null'], { encoding: 'utf8' })
  t.equal(r.status, 0, r.stderr)
  t.match(r.stdout, /rm: \d+\/60 pods/, 'progress was shown')
  const erased = /\r\u001b\[K(rm: \d+\/\d+ pods)?/g
  const lines = r.stdout.replace(erased, '').split('\r\n')
  t.equal(lines.pop(), '', 'nothing is left on the last line: the progress is gone')
  t.same(lines.sort(), uuids.sort(), 'every other line is one UUID, whole')
})

t.test('long waits on a terminal: a status line on stderr that is gone at the end; none into a pipe', async (t) => {
  const hasScript = spawnSync('script', ['-qec', 'true', '/dev/null']).status === 0
  if (!hasScript) return t.plan(0, 'skipped: no util-linux script here to give podctl a terminal')
  const dir = dataDir(t)
  const onTerminal = (args: string): { status: number | null; stdout: string } =>
    spawnSync('script', ['-qec', `/usr/bin/env -u NODE_OPTIONS ${process.execPath} ${BIN} --dir ${dir} ${args}`, '/dev/null'], { encoding: 'utf8' })
  // The status line: erase, a spinner, what is awaited, the seconds so far.
  const statusLine = /\r\u001b\[K([|/\\-] [^\r\n]* \(\d+s\))?/g

  // status --wait on a pod that ends 1.5 s later.
  const a = podctl(dir, ['run', '-d', '--', 'sleep', '1.5']).stdout.trim()
  const w = onTerminal(`status ${a} --wait 30s`)
  t.equal(w.status, 0)
  t.match(w.stdout, new RegExp(`\\| waiting for pod ${a.slice(0, 8)} to finish \\(at most 30s\\) \\(\\ds\\)`), 'it says what it waits for')
  const after = w.stdout.replace(statusLine, '')
  t.match(after, /^state=exited\r\n/, 'then the status, from the start of a clean line')
  t.notMatch(after, /waiting/, 'nothing of the status line is left')

  // stop of a pod whose app ignores SIGTERM: each step is said.
  const b = podctl(dir, ['run', '-d', '--', 'sh', '-c', 'trap "" TERM; echo trapped; while :; do sleep 0.1; done']).stdout.trim()
  // Running is not yet ignoring SIGTERM: one before the trap would end it at once.
  await pollUntil('the app to set its trap', () => podctl(dir, ['logs', b]).stdout.includes('trapped'))
  const s = onTerminal(`stop ${b} --timeout 1s`)
  t.equal(s.status, 0)
  t.match(s.stdout, `stopping pod ${b.slice(0, 8)}: SIGTERM sent, SIGKILL after 1s`)
  t.match(s.stdout, `stopping pod ${b.slice(0, 8)}: SIGKILL sent to its apps`)
  t.equal(s.stdout.replace(statusLine, ''), `${b}\r\n`, 'what is left is the UUID, on a line of its own')

  // Into a pipe: no status line at all.
  const c = podctl(dir, ['run', '-d', '--', 'sh', '-c', 'trap "" TERM; echo trapped; while :; do sleep 0.1; done']).stdout.trim()
  await pollUntil('the app to set its trap', () => podctl(dir, ['logs', c]).stdout.includes('trapped'))
  const p = podctl(dir, ['stop', c, '--timeout', '1s'])
  t.equal(p.status, 0)
  t.equal(p.stderr, '', 'stderr is not a terminal: nothing on it')
  t.equal(p.stdout, `${c}\n`)
})

t.test('cat-manifest: compact as rkt prints it; --pretty-print and --pretty indent it', async (t) => {
  const dir = dataDir(t)
  const uuid = podctl(dir, ['prepare', '--', '/bin/true']).stdout.trim()
  const compact = podctl(dir, ['cat-manifest', uuid]).stdout
  t.equal(compact.split('\n').length, 2, 'one line')
  const pretty = podctl(dir, ['cat-manifest', uuid, '--pretty-print']).stdout
  t.equal(pretty, `${JSON.stringify(JSON.parse(compact), null, 2)}\n`)
  t.equal(podctl(dir, ['cat-manifest', uuid, '--pretty']).stdout, pretty, '--pretty is --pretty-print')
})

t.test('app add without its UUID says the UUID is missing (not that "-c" is no program)', async (t) => {
  const dir = dataDir(t)
  const r = podctl(dir, ['app', 'add', '--name', 'p', '--', 'sh', '-c', 'echo hi'])
  t.equal(r.status, 2)
  t.match(r.stderr, /^podctl: missing pod UUID: "sh" is not one\nusage: podctl app add UUID --name NAME -- CMD/)
})

t.test('a manifest spells access modes as --access-mode does: RWO and RWX too', async (t) => {
  const dir = dataDir(t)
  t.equal(podctl(dir, ['volume', 'create', 'shared', '--access-mode', 'RWX']).status, 0)
  const m = (mode: string) =>
    JSON.stringify({ apiVersion: 'podctl/v1', apps: [{ name: 'a', exec: ['/bin/sh', '-c', 'sleep 300'], mounts: [{ volume: 'd', path: '/d' }] }], volumes: [{ name: 'd', kind: 'persistent', claim: 'shared', accessMode: mode }] })
  const one = podctl(dir, ['run', '-d', '--manifest', '-'], { input: m('RWX') })
  t.equal(one.status, 0, one.stderr)
  const two = podctl(dir, ['run', '-d', '--manifest', '-'], { input: m('ReadWriteMany') })
  t.equal(two.status, 0, `RWX and ReadWriteMany are one mode: both pods hold the volume (${two.stderr})`)
  const v = JSON.parse(podctl(dir, ['volume', 'inspect', 'shared', '--format', 'json']).stdout) as { claims: { mode: string }[] }
  t.same(v.claims.map((c) => c.mode), ['ReadWriteMany', 'ReadWriteMany'], 'recorded by its name')
  t.equal(podctl(dir, ['rm', '-af']).status, 0)
})
