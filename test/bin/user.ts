// CONTRACT §10, apps as another user: root runs an app unprivileged
// (manifest user/group, --user), its root and its volumes are its own and
// nothing else of the pod is; whatever it can write is hostile to root's
// rm, gc and supervisor, which never reach outside the pod through it.
import t from 'tap'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import readline from 'node:readline'
import { spawn, spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { STACK_RE, trialsOf } from '../helpers/common.js'
import { podctl } from '../helpers/cli-util.js'

const root = process.getuid?.() === 0
const SWAPPER = fileURLToPath(new URL('../helpers/swapper.py', import.meta.url))
const NOBODY = 65534
const skip = root ? false : 'needs root, to run an app as another user'

/** A data dir under a directory others may pass through (as an app's user must, to reach its root). */
const dataDir = (t: { teardown(fn: () => void): void }): string => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-user-'))
  fs.chmodSync(base, 0o755)
  t.teardown(() => fs.rmSync(base, { recursive: true, force: true }))
  return path.join(base, 'data')
}

const write = (dir: string, m: unknown): string => {
  const file = path.join(path.dirname(dir), 'm.json')
  fs.writeFileSync(file, JSON.stringify(m))
  return file
}

t.test('--user runs the app as that user, in a root of its own', { skip }, async (t) => {
  const dir = dataDir(t)
  const r = podctl(dir, ['run', '--user', 'nobody', '--', 'sh', '-c', 'id -u; id -g; id -G; touch "$PODCTL_APP_ROOT/mine" && echo root-ok; touch "$PODCTL_APP_ROOT/../../x" 2>/dev/null || echo pod-refused; echo "$HOME $USER"'])
  t.equal(r.status, 0, r.stderr)
  const [uid, gid, groups, rootOk, podRefused, env] = r.stdout.trim().split('\n')
  t.equal(uid, String(NOBODY))
  t.equal(gid, groups, 'no supplementary group beyond its own')
  t.equal(rootOk, 'root-ok', 'it writes its own root')
  t.equal(podRefused, 'pod-refused', 'and nothing else of the pod')
  t.match(env, /^\S+ nobody$/, 'HOME and USER are its own')
})

t.test('a manifest names user and group per app; working dir and volumes are theirs', { skip }, async (t) => {
  const dir = dataDir(t)
  const m = {
    apiVersion: 'podctl/v1',
    volumes: [{ name: 'data', kind: 'empty' }],
    apps: [
      { name: 'worker', exec: ['sh', '-c', 'id -u; pwd; touch here && echo cwd-ok; echo hi > "$PODCTL_APP_ROOT/data/f" && echo volume-ok'], user: 'nobody', group: 'nogroup', workingDirectory: '/work/dir', mounts: [{ volume: 'data', path: '/data' }] },
      { name: 'boss', exec: ['sh', '-c', 'id -u'] },
    ],
  }
  const r = podctl(dir, ['run', '--manifest', write(dir, m)])
  t.equal(r.status, 0, r.stderr)
  t.match(r.stdout, /^\[worker\] 65534$/m)
  t.match(r.stdout, /^\[worker\] \/.*\/apps\/worker\/work\/dir$/m)
  t.match(r.stdout, /^\[worker\] cwd-ok$/m, 'its working directory is its own')
  t.match(r.stdout, /^\[worker\] volume-ok$/m, 'its volume is writable by it')
  t.match(r.stdout, /^\[boss\] 0$/m, 'an app without a user runs as podctl does')
})

t.test('an app of another user reads a files volume, as host processes and isolated', { skip }, async (t) => {
  const dir = dataDir(t)
  for (const isolation of ['host', 'namespaces']) {
    const m = {
      apiVersion: 'podctl/v1',
      isolation,
      volumes: [{ name: 'cfg', kind: 'files', files: { 'conf/a.conf': { content: 'hello\n' } } }],
      apps: [{ name: 'reader', user: 'nobody', exec: ['sh', '-c', isolation === 'host' ? 'cat "$PODCTL_APP_ROOT/cfg/conf/a.conf"' : 'cat /cfg/conf/a.conf'], mounts: [{ volume: 'cfg', path: '/cfg', readOnly: true }] }],
    }
    const r = podctl(dir, ['run', '--manifest', write(dir, m)])
    t.equal(r.status, 0, `${isolation}: ${r.stderr}`)
    t.equal(r.stdout, 'hello\n', `${isolation}: nobody reads the projected file`)
  }
})

t.test('an unknown user or group, or --user with a manifest: exit 2 at prepare', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  for (const [args, msg] of [
    [['prepare', '--user', 'no-such-user-here', '--', 'true'], /^podctl: invalid --user: no user named "no-such-user-here" on this system\nname a user and group of this host/],
    [['prepare', '--user', `${root ? 'nobody' : process.getuid?.()}:no-such-group-here`, '--', 'true'], /^podctl: invalid --user: no group named "no-such-group-here"/],
    [['prepare', '--user', 'a:b:c', '--', 'true'], /invalid --user "a:b:c"/],
    [['prepare', '--user', 'bad name', '--', 'true'], /is not a user name or number/],
  ] as const) {
    const r = podctl(dir, [...args])
    t.equal(r.status, 2, args.join(' '))
    t.match(r.stderr, msg)
    t.notMatch(r.stderr, STACK_RE)
  }
  const file = path.join(path.dirname(dir), 'm.json')
  fs.writeFileSync(file, JSON.stringify({ apiVersion: 'podctl/v1', apps: [{ name: 'a', exec: ['true'] }] }))
  const both = podctl(dir, ['prepare', '--manifest', file, '--user', 'nobody'])
  t.equal(both.status, 2)
  t.match(both.stderr, /--user is for a pod made from a command/)
})

t.test('only root runs an app as another user', { skip }, async (t) => {
  const dir = dataDir(t)
  fs.mkdirSync(dir, { mode: 0o750 })
  fs.chownSync(dir, NOBODY, NOBODY)
  const r = podctl(dir, ['prepare', '--user', 'root', '--', 'true'], { uid: NOBODY, gid: NOBODY })
  t.equal(r.status, 2)
  t.match(r.stderr, /only root can run an app as another user or group/)
})

t.test("root's rm of a pod never follows what its app (another user) swaps in its root", { skip }, async (t) => {
  const dir = dataDir(t)
  const outside = path.join(path.dirname(dir), 'outside')
  fs.mkdirSync(path.join(outside, 'sub'), { recursive: true })
  for (let i = 0; i < 50; i++) fs.writeFileSync(path.join(outside, `precious-${i}`), `${i}\n`)
  fs.chmodSync(outside, 0o755)
  const before = fs.readdirSync(outside).sort()
  // The app builds the tree in its own root: directories, and links to outside.
  const build = `for i in $(seq 0 299); do mkdir -p "$PODCTL_APP_ROOT/d$i/n" && echo x > "$PODCTL_APP_ROOT/d$i/n/f" && ln -s ${outside} "$PODCTL_APP_ROOT/l$i"; done`
  for (let trial = 0; trial < trialsOf(5); trial++) {
    const uuidFile = path.join(path.dirname(dir), `u${trial}`)
    const run = podctl(dir, ['run', '--uuid-file-save', uuidFile, '--user', 'nobody', '--', 'sh', '-c', build])
    t.equal(run.status, 0, run.stderr)
    const uuid = fs.readFileSync(uuidFile, 'utf8').trim()
    const appRoot = path.join(dir, 'pods', 'run', uuid, 'apps', 'sh')
    // The racer: what an app (or anything it left running) can do as that user.
    const racer = spawn('python3', [SWAPPER, appRoot, '300'], { uid: NOBODY, gid: NOBODY, stdio: ['ignore', 'pipe', 'ignore'] })
    const gone = new Promise((r) => racer.once('exit', r))
    await new Promise<void>((resolve) => {
      readline.createInterface({ input: racer.stdout! }).once('line', () => resolve())
      racer.once('exit', () => resolve())
    })
    const rm = podctl(dir, ['rm', uuid])
    racer.kill('SIGKILL')
    await gone
    t.notMatch(rm.stderr, STACK_RE)
    if (rm.status !== 0) t.equal(podctl(dir, ['rm', uuid]).status, 0, `trial ${trial}: a second rm finishes what a swap left`)
    t.strictSame(fs.readdirSync(outside).sort(), before, `trial ${trial}: nothing outside the pod was deleted`)
  }
  t.equal(spawnSync('ls', [path.join(dir, 'pods', 'exited-garbage')], { encoding: 'utf8' }).stdout, '', 'every pod is gone')
})
