// A provisioner's answer is untrusted input (CONTRACT §8), tried through the
// real CLI with real programs that misbehave, each written here as a shell
// script: answers that name `/`, a host directory, a path with `..`, a
// newline or a symlink on the way are refused (ProvisioningFailed naming
// them, nothing bound); a volume smaller than asked for is handed to delete
// at once; the timeout kills the program's whole process group and a child
// holding stdout open holds nothing; an exec volume is given to an app's
// user only under a pinned root; podctl never empties an exec volume
// itself; text output stays one line a value; and exec:NAME runs the
// program of this node's provisioners directory, only if root (or the
// invoking user) alone can change it.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { pollUntil, STACK_RE, type Test } from '../helpers/common.js'
import { podctl } from '../helpers/cli-util.js'
import { alive } from '../helpers/run-util.js'

const json = (s: string): any => JSON.parse(s)

interface Prov {
  program: string
  base: string
  calls: () => string[]
}

/**
 * A provisioner script: `answer` is the shell that prints its provision
 * answer (with $name, $base and $store set; $store/$name made); delete
 * removes $store/$name. Every call is logged as "VERB NAME".
 */
const script = (base: string, answer: string, file = 'prov.sh'): Prov => {
  const log = path.join(base, 'calls.log')
  const store = path.join(base, 'store')
  fs.mkdirSync(store, { recursive: true })
  const program = path.join(base, file)
  fs.writeFileSync(
    program,
    `#!/bin/sh
input=$(cat)
name=$(printf '%s' "$input" | sed -n 's/.*"\\(volume_\\)\\{0,1\\}name":"\\(pvc-[^"]*\\)".*/\\2/p')
base=${JSON.stringify(base)}
store=${JSON.stringify(store)}
echo "$1 $name" >> ${JSON.stringify(log)}
case "$1" in
provision) mkdir -p "$store/$name"; ${answer} ;;
delete) rm -rf "$store/$name"; echo '{}' ;;
esac
`,
    { mode: 0o755 },
  )
  return { program, base, calls: () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : []) }
}

const manifest = (claim: string, extra: Record<string, unknown> = {}, app: Record<string, unknown> = {}) =>
  JSON.stringify({
    apiVersion: 'podctl/v1',
    apps: [{ name: 'a', exec: ['/bin/sh', '-c', 'true'], mounts: [{ volume: 'data', path: '/data' }], ...app }],
    volumes: [{ name: 'data', kind: 'persistent', claim, class: 'ext', ...extra }],
  })

const bases = new WeakMap<Test, { dir: string; n: number }>()

/** A fresh directory of the test's own (t.testdir once, a subdirectory a call). */
const freshDir = (t: Test): string => {
  let b = bases.get(t)
  if (b === undefined) bases.set(t, (b = { dir: fs.realpathSync(t.testdir({})), n: 0 }))
  const dir = path.join(b.dir, `case-${b.n++}`)
  fs.mkdirSync(dir)
  return dir
}

/** A data dir with class `ext` of `prov`, and a manifest of a pod that needs a claim of it. */
const setUp = (t: Test, answer: string, classArgs: string[] = [], extra: Record<string, unknown> = {}, app: Record<string, unknown> = {}) => {
  const base = freshDir(t)
  const dir = path.join(base, 'data')
  const prov = script(base, answer)
  const mk = podctl(dir, ['volume', 'class', 'create', 'ext', '--provisioner', `exec:${prov.program}`, ...classArgs])
  if (mk.status !== 0) throw new Error(mk.stderr)
  const m = path.join(base, 'm.json')
  fs.writeFileSync(m, manifest('db', extra, app))
  return { base, dir, prov, m }
}

const volumesOf = (dir: string): string[] => (fs.existsSync(path.join(dir, 'volumes')) ? fs.readdirSync(path.join(dir, 'volumes')).filter((n) => !n.startsWith('.')) : [])

t.test('answered paths that are not a volume of the provisioner: refused, named, nothing bound', async (t) => {
  const cases: [string, string, RegExp][] = [
    ['/', `printf '{"path": "/"}'`, /answered path "\/", which podctl refuses: it is \/ itself/],
    ['/etc', `printf '{"path": "/etc"}'`, /answered path "\/etc", which podctl refuses: it is the host's own \/etc/],
    ['/home', `printf '{"path": "/home"}'`, /it is the host's own \/home/],
    ['/proc/1/root', `printf '{"path": "/proc/1/root"}'`, /it is in \/proc, which holds no storage/],
    ['base/../../precious', `printf '{"path": "%s/../../precious"}' "$store"`, /it is not a normalized path/],
    ['a trailing slash', `printf '{"path": "%s/%s/"}' "$store" "$name"`, /it is not a normalized path/],
    ['a relative path', `printf '{"path": "store/%s"}' "$name"`, /it is not an absolute path/],
    ['a newline', `printf '{"path": "%s/%s\\\\nphase=bound"}' "$store" "$name"`, /answered path ".*\\nphase=bound", which podctl refuses: it holds a control character/],
    ['a symlink on the way', `ln -sfn "$store" "$base/link"; printf '{"path": "%s/link/%s"}' "$base" "$name"`, /\/link is a symlink/],
    ['a file', `: > "$base/file"; printf '{"path": "%s/file"}' "$base"`, /\/file is not a directory/],
    ['a missing directory', `printf '{"path": "%s/nowhere"}' "$base"`, /\/nowhere does not exist/],
    ['the data dir', `printf '{"path": "%s/data"}' "$base"`, /it is podctl's data dir .* or inside it/],
    ['a dir holding the data dir', `printf '{"path": "%s"}' "$base"`, /it holds podctl's data dir/],
    ['a number', `printf '{"path": 7}'`, /answered path 7, which podctl refuses: it is not a string/],
  ]
  for (const [what, answer, msg] of cases) {
    const { dir, m, base } = setUp(t, answer)
    const r = podctl(dir, ['run', '--manifest', m])
    t.equal(r.status, 125, `${what}: the run fails as podctl's own failure`)
    t.match(r.stderr, msg, `${what}: the answer and why are named`)
    t.equal(r.stderr.trimEnd().split('\n').length, 2, `${what}: one line and a hint, whatever the answer holds`)
    t.notMatch(r.stderr, STACK_RE)
    const c = json(podctl(dir, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout)
    t.equal(c.phase, 'pending', `${what}: the claim stays pending`)
    t.match(c.events.at(-1), { type: 'Warning', reason: 'ProvisioningFailed', message: msg })
    t.same(volumesOf(dir), [], `${what}: no volume`)
    if (what === 'a newline') {
      const text = podctl(dir, ['volume', 'claim', 'inspect', 'db']).stdout
      t.same(text.split('\n').filter((l) => l.startsWith('phase=')), ['phase=pending'], 'the text output has one phase= line')
    }
    t.ok(fs.existsSync(path.join(base, 'store')), `${what}: nothing outside was touched`)
  }
})

t.test('--param root pins the answers below a directory; a bad root is exit 2', async (t) => {
  const inside = setUp(t, `printf '{"path": "%s/%s"}' "$store" "$name"`, [], {})
  const root = path.join(inside.base, 'store')
  fs.writeFileSync(inside.m, manifest('db', { class: 'pinned' }))
  t.equal(podctl(inside.dir, ['volume', 'class', 'create', 'pinned', '--provisioner', `exec:${inside.prov.program}`, '--param', `root=${root}`]).status, 0)
  const ok = podctl(inside.dir, ['run', '--manifest', inside.m])
  t.equal(ok.status, 0, ok.stderr)
  t.equal(json(podctl(inside.dir, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout).phase, 'bound', 'an answer below the root is bound')

  const outside = setUp(t, `mkdir -p "$base/elsewhere/$name"; printf '{"path": "%s/elsewhere/%s"}' "$base" "$name"`, ['--param', 'root=/nonexistent-root'])
  const r = podctl(outside.dir, ['run', '--manifest', outside.m])
  t.equal(r.status, 125)
  t.match(r.stderr, /it is not below the class's root \/nonexistent-root \(--param root\)/)
  for (const bad of ['relative', '/', '/a/../b', '/a//b', '/proc/x']) {
    const mk = podctl(outside.dir, ['volume', 'class', 'create', 'bad', '--provisioner', `exec:${outside.prov.program}`, '--param', `root=${bad}`])
    t.equal(mk.status, 2, `root=${bad}: exit 2`)
    t.match(mk.stderr, /invalid parameter root/)
  }
})

t.test('a volume smaller than the claim asks: ProvisioningFailed, and the volume goes to delete at once', async (t) => {
  const { dir, m, prov, base } = setUp(t, `printf '{"path": "%s/%s", "capacity_bytes": 1024}' "$store" "$name"`, [], { size: '100M' })
  const r = podctl(dir, ['run', '--manifest', m])
  t.equal(r.status, 125)
  t.match(r.stderr, /created volume capacity 1024 is less than requested 104857600/)
  const c = json(podctl(dir, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout)
  t.equal(c.phase, 'pending')
  t.match(c.events.at(-1), { type: 'Warning', reason: 'ProvisioningFailed', message: /created volume capacity 1024 is less than requested 104857600/ })
  const name = c.events[0].message.match(/volume (pvc-\S+)/)[1]
  t.same(prov.calls(), [`provision ${name}`, `delete ${name}`], 'the provisioner was asked to delete it at once')
  t.same(fs.readdirSync(path.join(base, 'store')), [], 'and its storage is gone')
  t.same(volumesOf(dir), [], 'no volume')
})

t.test('the timeout kills the whole process group and does not wait for pipes a child holds', async (t) => {
  // The program waits for a child that keeps stdout open: the old code killed the program and waited for the pipe.
  const pidFile = 'sleeper.pid'
  const { dir, m, base } = setUp(t, `sleep 40 & echo $! > "$base/${pidFile}"; wait`, ['--param', 'timeout=1s'])
  const started = Date.now()
  const r = podctl(dir, ['run', '--manifest', m])
  const took = Date.now() - started
  t.equal(r.status, 125)
  t.match(r.stderr, /provision took longer than 1s and was killed/)
  t.ok(took < 20_000, `run ended ${took} ms after it began, not after the child's 40 s`)
  const sleeper = Number(fs.readFileSync(path.join(base, pidFile), 'utf8'))
  t.teardown(() => {
    if (alive(sleeper)) process.kill(sleeper, 'SIGKILL')
  })
  await pollUntil('the child killed with its group', () => !alive(sleeper), { intervalMs: 20, polls: 100 })
  t.pass(`the program's child (${sleeper}) was killed with it`)
})

t.test('a program that exits 0 leaving a process that holds stdout: its answer is taken, the run goes on', async (t) => {
  const pidFile = 'daemon.pid'
  const { dir, m, base } = setUp(t, `sleep 60 & echo $! > "$base/${pidFile}"; printf '{"path": "%s/%s"}' "$store" "$name"`, ['--param', 'timeout=30s'])
  const started = Date.now()
  const r = podctl(dir, ['run', '--manifest', m])
  const took = Date.now() - started
  const daemon = Number(fs.readFileSync(path.join(base, pidFile), 'utf8'))
  t.teardown(() => {
    if (alive(daemon)) process.kill(daemon, 'SIGKILL')
  })
  t.equal(r.status, 0, r.stderr)
  t.ok(took < 15_000, `run ended ${took} ms after it began: not held by the process left behind (60 s), nor by the 30 s timeout`)
  t.equal(json(podctl(dir, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout).phase, 'bound')
})

t.test("an exec volume is given to an app's user only when its class pins a root", { skip: process.getuid?.() === 0 ? false : 'needs root (an app as user nobody)' }, async (t) => {
  const app = { user: 'nobody', exec: ['/bin/sh', '-c', 'ls "$PODCTL_APP_ROOT/data" > /dev/null'] }
  const loose = setUp(t, `printf '{"path": "%s/%s"}' "$store" "$name"`, [], {}, app)
  const r1 = podctl(loose.dir, ['run', '--manifest', loose.m])
  t.equal(r1.status, 0, r1.stderr)
  const v1 = json(podctl(loose.dir, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout).volume
  t.equal(fs.statSync(path.join(loose.base, 'store', v1)).uid, 0, 'without a root: the directory stays root\'s')

  const pinned = setUp(t, `printf '{"path": "%s/%s"}' "$store" "$name"`, [], {}, app)
  fs.writeFileSync(pinned.m, manifest('db', { class: 'pinned' }, app))
  t.equal(podctl(pinned.dir, ['volume', 'class', 'create', 'pinned', '--provisioner', `exec:${pinned.prov.program}`, '--param', `root=${path.join(pinned.base, 'store')}`]).status, 0)
  const r2 = podctl(pinned.dir, ['run', '--manifest', pinned.m])
  t.equal(r2.status, 0, r2.stderr)
  const v2 = json(podctl(pinned.dir, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout).volume
  t.equal(fs.statSync(path.join(pinned.base, 'store', v2)).uid, 65534, 'below a pinned root: given to the app\'s user')
  t.equal(fs.statSync(path.join(pinned.base, 'store')).uid, 0, 'the root itself is not')
})

t.test('podctl never empties an exec volume: no recycle class, and a recycle policy on one is not applied', async (t) => {
  const { dir, m, base } = setUp(t, `printf '{"path": "%s/%s"}' "$store" "$name"`, ['--reclaim', 'retain'])
  const mk = podctl(dir, ['volume', 'class', 'create', 'rec', '--provisioner', `exec:${path.join(base, 'prov.sh')}`, '--reclaim', 'recycle'])
  t.equal(mk.status, 2, 'an exec class with --reclaim recycle: exit 2')
  t.match(mk.stderr, /an exec class cannot recycle: podctl empties only the volumes it made/)
  t.equal(podctl(dir, ['run', '--manifest', m]).status, 0)
  const volume = json(podctl(dir, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout).volume
  fs.writeFileSync(path.join(base, 'store', volume, 'precious'), 'keep me')
  // A record that says recycle all the same (written by hand): the data stays, and the volume says why.
  const rec = path.join(dir, 'volumes', volume, 'volume.json')
  fs.writeFileSync(rec, JSON.stringify({ ...json(fs.readFileSync(rec, 'utf8')), reclaim: 'recycle' }))
  for (const uuid of json(podctl(dir, ['list', '--format', 'json']).stdout).map((p: { uuid: string }) => p.uuid)) podctl(dir, ['rm', uuid])
  const rm = podctl(dir, ['volume', 'claim', 'rm', 'db'])
  t.equal(rm.status, 1)
  t.match(rm.stderr, /podctl empties only the volumes it made, so its reclaim policy recycle is not applied/)
  t.equal(fs.readFileSync(path.join(base, 'store', volume, 'precious'), 'utf8'), 'keep me', 'nothing was deleted')
  t.match(json(podctl(dir, ['volume', 'inspect', volume, '--format', 'json']).stdout).events.at(-1), { type: 'Warning', reason: 'VolumeFailedRecycle' })
})

t.test("a provisioner's message is one line in text output, however it is written", async (t) => {
  const { dir, m } = setUp(t, `printf 'no room\\nphase=bound\\n\\033[2Jcleared' >&2; exit 3`)
  const r = podctl(dir, ['run', '--manifest', m])
  t.equal(r.status, 125)
  t.match(r.stderr, /no room\\nphase=bound\\n\\x1b\[2Jcleared/, 'escaped in the error')
  t.notMatch(r.stderr, /\x1b/, 'no escape sequence reaches the terminal')
  const text = podctl(dir, ['volume', 'claim', 'inspect', 'db']).stdout
  t.same(text.split('\n').filter((l) => l.startsWith('phase=')), ['phase=pending'], 'claim inspect: one phase= line')
  t.match(text, /^event=.*ProvisioningFailed: .*no room\\nphase=bound/m)
  const param = podctl(dir, ['volume', 'class', 'create', 'x', '--provisioner', 'exec:/bin/true', '--param', 'note=a\nphase=bound'])
  t.equal(param.status, 2, 'a parameter of several lines: exit 2')
})

t.test('exec:NAME runs the program of this node\'s provisioners directory, if nobody else can change it', async (t) => {
  const base = freshDir(t)
  const dir = path.join(base, 'data')
  const provDir = path.join(base, 'provisioners')
  fs.mkdirSync(provDir, { mode: 0o755 })
  const real = script(base, `printf '{"path": "%s/%s"}' "$store" "$name"`, 'real.sh')
  fs.symlinkSync(real.program, path.join(provDir, 'dirs'))
  t.equal(podctl(dir, ['volume', 'class', 'create', 'ext', '--provisioner', 'exec:dirs']).status, 0, 'a class names the provisioner')
  const m = path.join(base, 'm.json')
  fs.writeFileSync(m, manifest('db'))

  const missing = podctl(dir, ['run', '--manifest', m, '--provisioners-dir', path.join(base, 'none')])
  t.equal(missing.status, 125)
  t.match(missing.stderr, new RegExp(`provisioner exec:dirs is not configured on this node: there is no ${base}/none/dirs`))
  const dflt = podctl(dir, ['run', '--manifest', m])
  t.equal(dflt.status, 125, 'nor in /etc/podctl/provisioners')
  t.match(dflt.stderr, /there is no \/etc\/podctl\/provisioners\/dirs/)

  fs.chmodSync(provDir, 0o775)
  const groupWritable = podctl(dir, ['run', '--manifest', m, '--provisioners-dir', provDir])
  t.equal(groupWritable.status, 125)
  t.match(groupWritable.stderr, `its program ${provDir}/dirs is not safe to run on this node: ${provDir} can be changed by someone else (it is writable by its group (mode 0775))`)
  t.match(groupWritable.stderr, `fix it: chmod go-w ${provDir}`, 'with the fix')
  fs.chmodSync(provDir, 0o755)
  fs.chmodSync(real.program, 0o757)
  const otherWritable = podctl(dir, ['run', '--manifest', m, '--provisioners-dir', provDir])
  t.equal(otherWritable.status, 125)
  t.match(otherWritable.stderr, `${real.program} can be changed by someone else (it is writable by others (mode 0757))`, 'the program a link leads to is judged too')
  fs.chmodSync(real.program, 0o755)
  t.equal(real.calls().length, 0, 'no untrusted program ran')

  const ok = podctl(dir, ['run', '--manifest', m, '--provisioners-dir', provDir])
  t.equal(ok.status, 0, ok.stderr)
  const c = json(podctl(dir, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout)
  t.equal(c.phase, 'bound')
  t.match(c.events[0].message, /provisioner exec:dirs is provisioning/)
  for (const uuid of json(podctl(dir, ['list', '--format', 'json']).stdout).map((p: { uuid: string }) => p.uuid)) podctl(dir, ['rm', uuid])
  const rm = podctl(dir, ['volume', 'claim', 'rm', 'db', '--provisioners-dir', provDir])
  t.equal(rm.status, 0, rm.stderr)
  t.same(real.calls(), [`provision ${c.volume}`, `delete ${c.volume}`], 'claim rm deleted through the same program')
})
