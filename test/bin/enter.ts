// CONTRACT §12, into a running pod: `podctl enter UUID [--app NAME] [-t]
// -- CMD` runs CMD in one app's container (its namespaces, root, user,
// capabilities, seccomp and cgroup), with the caller's stdin, stdout and
// stderr and CMD's exit code (126/127 as a shell gives them). Which app
// must be clear; a pod that is not running, or has no namespaces, is
// refused (4). Run as root, and the basics again rootless.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { noTerminalHere, podctl, podctlOnTerminal, startPodctl, type RunOptions } from '../helpers/cli-util.js'
import { containersMissing } from '../helpers/containers.js'
import { ROOT, STACK_RE, manifestFile, pollUntil, type Test } from '../helpers/common.js'
import { PODMAN_DEFAULT, appOf, capsOfMask, isolatedManifest, procStatus, statusJson, unprivileged, userDataDir } from '../helpers/oci-util.js'
import { allPids, dataDir } from '../helpers/run-util.js'

const missing = containersMissing()
const skip = missing !== undefined ? `this machine cannot isolate pods: ${missing}` : false

/** `run --detach` of `args`, then `status --wait-ready`: the UUID of a pod whose apps run. */
const up = (t: Test, dir: string, args: string[], opts: RunOptions = {}): string => {
  const r = podctl(dir, ['run', '--detach', ...args], opts)
  t.equal(r.status, 0, `run --detach ${args.join(' ')}`, { stderr: r.stderr })
  const uuid = r.stdout.trim()
  t.equal(podctl(dir, ['status', uuid, '--wait-ready'], opts).status, 0, 'its apps run')
  return uuid
}

/** Polls until app `app` of pod `uuid` has exited. */
const waitAppExited = (dir: string, uuid: string, app: string): Promise<boolean> =>
  pollUntil(`app ${app} to exit`, () => appOf(statusJson(dir, uuid), app).state === 'exited')

/** The pids a process sees in its /proc, one per line. */
const LIST_PIDS = 'for p in /proc/[0-9]*; do echo ${p#/proc/}; done'

t.test('as root', { skip }, async (t) => {
  t.test('enter -- ps: the pod’s processes only, which the host has many more than', async (t) => {
    const dir = dataDir(t)
    const uuid = up(t, dir, ['--isolation', 'namespaces', '--', 'sleep', '300'])
    const ps = podctl(dir, ['enter', uuid, '--', 'ps', '-e', '-o', 'pid=,comm='])
    t.equal(ps.status, 0, ps.stderr)
    const seen = ps.stdout.trim().split('\n').map((l) => l.trim().split(/\s+/))
    const comms = seen.map((f) => f[1])
    t.ok(comms.includes('sleep'), 'the app is there', { comms })
    t.ok(comms.includes('ps'), 'and the command itself')
    t.notOk(comms.some((c) => c === 'node' || c === 'systemd' || c === 'init' || c === 'runc'), 'no podctl, runtime or init of the host', { comms })
    t.ok(seen.length <= 6, `a handful: infra, app, ps (${seen.length})`)
    t.ok(seen.every((f) => Number(f[0]) < 100), 'pids of the pod’s own namespace', { seen })
    t.ok(allPids().length > seen.length + 10, `the host has many more (${allPids().length})`)
    const proc = podctl(dir, ['enter', uuid, '--', 'sh', '-c', LIST_PIDS])
    t.ok(proc.stdout.trim().split('\n').length <= 6, "its /proc shows the pod's pids too")
  })

  t.test('exit codes pass through: 7, 137 for a signal, 127 for a missing program, 126 for a file that is not a program', async (t) => {
    const dir = dataDir(t)
    const uuid = up(t, dir, ['--isolation', 'namespaces', '--', 'sleep', '300'])
    t.equal(podctl(dir, ['enter', uuid, '--', 'sh', '-c', 'exit 7']).status, 7)
    t.equal(podctl(dir, ['enter', uuid, '--', 'sh', '-c', 'kill -9 $$']).status, 137, '128 + SIGKILL')
    t.equal(podctl(dir, ['enter', uuid, '--', 'true']).status, 0)
    const notFound = podctl(dir, ['enter', uuid, '--', 'no-such-program'])
    t.equal(notFound.status, 127, 'not found: 127')
    t.match(notFound.stderr, /no-such-program/, 'naming it')
    t.notMatch(notFound.stderr, STACK_RE)
    t.equal(podctl(dir, ['enter', uuid, '--', '/no/such/file']).status, 127, 'a path that is not there: 127')
    const notExec = podctl(dir, ['enter', uuid, '--', '/etc/passwd'])
    t.equal(notExec.status, 126, 'not executable: 126')
    t.match(notExec.stderr, /\/etc\/passwd/)
    t.equal(podctl(dir, ['enter', uuid, '--', '/etc']).status, 126, 'a directory: 126')
    t.equal(podctl(dir, ['enter', uuid.slice(0, 8), '--', 'true']).status, 0, 'a UUID prefix works')
    const noCmd = podctl(dir, ['enter', uuid])
    t.equal(noCmd.status, 2, 'no command: usage, 2')
  })

  t.test('which app: --app is needed with several (2, listing them); an unknown one is 2; an exited one is 4', async (t) => {
    const dir = dataDir(t)
    const m = manifestFile(path.dirname(dir), isolatedManifest([
      { name: 'web', exec: ['sleep', '300'] },
      { name: 'db', exec: ['sleep', '300'] },
      { name: 'once', exec: ['true'] },
    ]))
    const uuid = up(t, dir, ['--manifest', m])
    await waitAppExited(dir, uuid, 'once')
    const which = podctl(dir, ['enter', uuid, '--', 'true'])
    t.equal(which.status, 2, 'several running apps and no --app: 2')
    t.match(which.stderr, /runs several apps: web, db\n/, 'listing the running ones')
    t.match(which.stderr, /--app web/, 'and saying how to name one')
    for (const app of ['web', 'db']) {
      const r = podctl(dir, ['enter', uuid, '--app', app, '--', 'sh', '-c', 'echo $PODCTL_APP_NAME; cat /proc/self/cgroup'])
      t.equal(r.status, 0, r.stderr)
      t.match(r.stdout, new RegExp(`^${app}\\n`), `--app ${app}: in that app's container (its environment)`)
      t.match(r.stdout, new RegExp(`^\\d+:memory:/app-${app}$`, 'm'), `and in its cgroup (${app}, below the pod's)`)
    }
    const unknown = podctl(dir, ['enter', uuid, '--app', 'nope', '--', 'true'])
    t.equal(unknown.status, 2, 'an unknown app: 2')
    t.match(unknown.stderr, /has no app "nope"\nits apps: web, db, once/)
    const exited = podctl(dir, ['enter', uuid, '--app', 'once', '--', 'true'])
    t.equal(exited.status, 4, 'an app that is not running: 4')
    t.match(exited.stderr, /app once of pod \w+ is exited, not running/)
  })

  t.test('refused: a host pod (4, no namespaces), a pod not running (4), no such pod (3)', async (t) => {
    const dir = dataDir(t)
    const host = up(t, dir, ['--', 'sleep', '300'])
    const r = podctl(dir, ['enter', host, '--', 'true'])
    t.equal(r.status, 4, 'a host pod: 4')
    t.match(r.stderr, /^podctl: pod \w{8} runs its apps as host processes: it has no namespaces to enter\n/)
    t.notMatch(r.stderr, STACK_RE)
    const iso = up(t, dir, ['--isolation', 'namespaces', '--', 'sleep', '300'])
    t.equal(podctl(dir, ['stop', iso]).status, 0)
    const exited = podctl(dir, ['enter', iso, '--', 'true'])
    t.equal(exited.status, 4, 'an exited pod: 4')
    t.match(exited.stderr, /is exited; only a running pod can be entered/)
    const prepared = podctl(dir, ['prepare', '--isolation', 'namespaces', '--', 'true']).stdout.trim()
    const p = podctl(dir, ['enter', prepared, '--', 'true'])
    t.equal(p.status, 4, 'a prepared pod: 4')
    t.match(p.stderr, /is prepared; only a running pod can be entered\nrun it first: podctl run-prepared/)
    t.equal(podctl(dir, ['enter', '00000000-0000-4000-8000-000000000000', '--', 'true']).status, 3, 'no such pod: 3')
  })

  t.test("enter has the app's user, capabilities, no_new_privs, seccomp filter and cgroup", async (t) => {
    const dir = dataDir(t)
    const m = manifestFile(path.dirname(dir), isolatedManifest([
      { name: 'plain', user: 'nobody', exec: ['sleep', '300'] },
      { name: 'bare', exec: ['sleep', '300'], capabilities: { drop: ['ALL'], add: ['NET_ADMIN'] } },
    ]))
    const uuid = up(t, dir, ['--manifest', m])
    const st = statusJson(dir, uuid)
    for (const app of ['plain', 'bare']) {
      const own = procStatus(fs.readFileSync(`/proc/${appOf(st, app).pid}/status`, 'utf8'))
      const r = podctl(dir, ['enter', uuid, '--app', app, '--', 'sh', '-c', 'id -u; cat /proc/self/status'])
      t.equal(r.status, 0, r.stderr)
      const [uid] = r.stdout.split('\n')
      const mine = procStatus(r.stdout)
      t.equal(uid, app === 'plain' ? '65534' : '0', `${app}: the app's user`)
      for (const k of ['CapEff', 'CapPrm', 'CapBnd', 'NoNewPrivs', 'Seccomp']) t.equal(mine.get(k), own.get(k), `${app}: ${k} as the app's own (${own.get(k)})`)
      t.equal(mine.get('NoNewPrivs'), '1', `${app}: no_new_privs`)
      t.equal(mine.get('Seccomp'), '2', `${app}: a seccomp filter`)
    }
    const plainCaps = capsOfMask(procStatus(podctl(dir, ['enter', uuid, '--app', 'plain', '--', 'cat', '/proc/self/status']).stdout).get('CapBnd')!)
    t.strictSame(plainCaps, PODMAN_DEFAULT, "podman's defaults in the bounding set")
    const bare = procStatus(podctl(dir, ['enter', uuid, '--app', 'bare', '--', 'cat', '/proc/self/status']).stdout)
    t.strictSame(capsOfMask(bare.get('CapEff')!), ['NET_ADMIN'], "the app's own capabilities: NET_ADMIN only")
    const chown = podctl(dir, ['enter', uuid, '--app', 'bare', '--', 'chown', '1:1', '/tmp'])
    t.not(chown.status, 0, 'without CHOWN, chown fails in enter as in the app')
    t.match(chown.stderr, /Operation not permitted/)
    const mount = podctl(dir, ['enter', uuid, '--app', 'plain', '--', 'sh', '-c', 'mkdir -p /tmp/m; mount -t tmpfs x /tmp/m'])
    t.not(mount.status, 0, 'mount fails')
    // The command's cgroup, seen from the host: the app's.
    const inside = podctl(dir, ['enter', uuid, '--app', 'bare', '--', 'sh', '-c', 'cat /proc/self/cgroup'])
    t.match(inside.stdout, /^\d+:pids:\/app-bare$/m, 'its cgroup is the app’s (within the pod’s cgroup namespace)')
  })

  t.test("enter joins the app's mount namespace: it sees the app's private /tmp and root", async (t) => {
    const dir = dataDir(t)
    const uuid = up(t, dir, ['--isolation', 'namespaces', '--', 'sh', '-c', 'echo secret > /tmp/mine; echo there > "$PODCTL_APP_ROOT/f"; exec sleep 300'])
    const r = podctl(dir, ['enter', uuid, '--', 'sh', '-c', 'cat /tmp/mine "$PODCTL_APP_ROOT/f"; touch /etc/x 2>&1; ls /root 2>&1'])
    t.match(r.stdout, /^secret\nthere\n/, "the app's /tmp and its root")
    t.match(r.stdout, /touch: cannot touch '\/etc\/x': Read-only file system/, "the host's /etc read-only, as for the app")
    t.match(r.stdout, /ls: cannot access '\/root': No such file or directory/, "the host's /root is not there")
  })

  t.test('stdin, stdout and stderr are the command’s', async (t) => {
    const dir = dataDir(t)
    const uuid = up(t, dir, ['--isolation', 'namespaces', '--', 'sleep', '300'])
    const r = podctl(dir, ['enter', uuid, '--', 'cat'], { input: 'hi\nthere\n' })
    t.equal(r.status, 0)
    t.equal(r.stdout, 'hi\nthere\n', 'what goes in comes out')
    const e = podctl(dir, ['enter', uuid, '--', 'sh', '-c', 'read x; echo "out $x"; echo "err $x" >&2'], { input: 'v\n' })
    t.equal(e.stdout, 'out v\n')
    t.equal(e.stderr, 'err v\n', 'stderr is its own, with nothing of podctl')
    const big = 'x'.repeat(1 << 20)
    t.equal(podctl(dir, ['enter', uuid, '--', 'wc', '-c'], { input: big }).stdout.trim(), String(1 << 20), 'a MiB through stdin, whole')
  })

  t.test('-t gives the command a terminal; without -t it has none', { skip: noTerminalHere }, async (t) => {
    const dir = dataDir(t)
    const uuid = up(t, dir, ['--isolation', 'namespaces', '--', 'sleep', '300'])
    const r = podctlOnTerminal(dir, ['enter', '-t', uuid, '--', 'tty'])
    t.equal(r.status, 0, r.stderr)
    t.match(r.stdout, /\/dev\/pts\/\d+/, 'tty names a pseudo-terminal of the pod')
    const none = podctl(dir, ['enter', uuid, '--', 'tty'])
    t.equal(none.status, 1)
    t.equal(none.stdout, 'not a tty\n')
    // As enter.md says (its exit codes): 2, a usage error, not 126.
    const noTerminal = podctl(dir, ['enter', '-t', uuid, '--', 'tty'])
    t.equal(noTerminal.status, 2, '-t without a terminal: exit 2')
    t.equal(noTerminal.stderr, 'podctl: -t gives the command a terminal, and standard input is not one\nleave -t out in a script or a pipe\n')
    const page = fs.readFileSync(path.join(ROOT, 'Documentation', 'subcommands', 'enter.md'), 'utf8')
    t.match(page, /\| 2 \| [^\n]*`-t` without a terminal/, 'enter.md lists it under exit 2')
    t.notMatch(page, /\| 126 \| [^\n]*-t/, 'and not under 126')
  })

  // A signal sent to podctl enter alone (kill PID, a process manager,
  // timeout --foreground) is passed on to the command, as podctl run
  // forwards them (CONTRACT §4).
  t.test('a SIGTERM sent to podctl enter alone reaches the command', async (t) => {
    const dir = dataDir(t)
    const uuid = up(t, dir, ['--isolation', 'namespaces', '--', 'sleep', '300'])
    const e = startPodctl(t, dir, ['enter', uuid, '--', 'sh', '-c', 'echo started; exec sleep 300'])
    await e.line(/^started$/)
    e.child.kill('SIGTERM')
    let ended: number | null | undefined
    void e.done.then((r) => (ended = r.status))
    await pollUntil('enter to end after SIGTERM', () => ended !== undefined, { polls: 200 }).catch(() => {})
    t.equal(ended, 143, "enter ended, with the command's 128 + SIGTERM")
  })

  t.test('enter right after run --detach waits for the apps to run', async (t) => {
    const dir = dataDir(t)
    // An init app first: when run --detach returns, the regular app is not running yet.
    const m = manifestFile(path.dirname(dir), isolatedManifest([
      { name: 'setup', type: 'init', exec: ['sleep', '2'] },
      { name: 'main', exec: ['sleep', '300'] },
    ]))
    const r = podctl(dir, ['run', '--detach', '--manifest', m])
    t.equal(r.status, 0, r.stderr)
    const uuid = r.stdout.trim()
    t.not(appOf(statusJson(dir, uuid), 'main').state, 'running', 'the regular app is not running yet when run --detach returns')
    const e = podctl(dir, ['enter', uuid, '--', 'sh', '-c', 'echo $PODCTL_APP_NAME'])
    t.equal(e.status, 0, e.stderr)
    t.equal(e.stdout, 'main\n', "it entered the pod's app once it ran")
  })
})

t.test('rootless (an unprivileged user)', { skip }, async (t) => {
  const who = unprivileged()
  if (typeof who === 'string') return t.plan(0, who)
  const dir = userDataDir(t, who)
  const uuid = up(t, dir, ['--isolation', 'namespaces', '--', 'sleep', '300'], who.opts)
  const ps = podctl(dir, ['enter', uuid, '--', 'ps', '-e', '-o', 'comm='], who.opts)
  t.equal(ps.status, 0, ps.stderr)
  const comms = ps.stdout.trim().split('\n')
  t.ok(comms.includes('sleep') && comms.length <= 6, `the pod's processes only (${comms.join(' ')})`)
  t.equal(podctl(dir, ['enter', uuid, '--', 'sh', '-c', 'exit 7'], who.opts).status, 7, 'exit codes pass through')
  t.equal(podctl(dir, ['enter', uuid, '--', 'no-such-program'], who.opts).status, 127)
  t.equal(podctl(dir, ['enter', uuid, '--', '/etc/passwd'], who.opts).status, 126)
  t.equal(podctl(dir, ['enter', uuid, '--', 'cat'], { ...who.opts, input: 'hi\n' }).stdout, 'hi\n', 'stdin passes through')
  const id = podctl(dir, ['enter', uuid, '--', 'sh', '-c', 'id -u; cat /proc/self/uid_map'], who.opts)
  t.match(id.stdout, new RegExp(`^0\\n\\s*0\\s+${who.uid}\\s+1\\n$`), "root in the pod's user namespace, which maps the user alone")
})
