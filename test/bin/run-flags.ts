// podman's flags of prepare and run (CONTRACT §15), black box: -v/--volume
// (and -v before a command, the version), flag errors in the flags' words,
// -e KEY and --env-file, -w, --hostname, --rm, --http-proxy; the network
// flags (CONTRACT §14: --network, -p, --dns*, --add-host); and an
// argument with a NUL byte, which only a caller in this process can pass.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { main } from '../../lib/cli/main.js'
import { BIN, STACK_RE, UUID_RE, pollUntil, type Test } from '../helpers/common.js'
import { podctl, type Result } from '../helpers/cli-util.js'
import { containersMissing } from '../helpers/containers.js'

const VERSION = (JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version

/** The stored manifest of the pod `prepare args` made (asserting exit 0). */
const prepared = (t: Test, dir: string, args: string[], env?: NodeJS.ProcessEnv): Record<string, any> => {
  const r = podctl(dir, ['prepare', ...args], env ? { env } : {})
  t.equal(r.status, 0, `prepare ${args.join(' ')}`, { stderr: r.stderr })
  return JSON.parse(podctl(dir, ['cat-manifest', r.stdout.trim()]).stdout) as Record<string, any>
}

/** A refusal: exit 2, the message and its hint, no stack, nothing on stdout. */
const refused = (t: Test, r: Result, message: RegExp, what: string): void => {
  t.equal(r.status, 2, `${what}: exit 2`)
  t.match(r.stderr, message, `${what}: the message`)
  t.notMatch(r.stderr, STACK_RE, `${what}: no stack trace`)
  t.equal(r.stdout, '', `${what}: nothing on stdout`)
}

t.test('-v and --volume: a host path, a persistent volume or an empty volume, mounted where the pod sees it', async (t) => {
  const base = t.testdir({ src: { f: 'data' } })
  const dir = path.join(base, 'data')
  const src = path.join(base, 'src')
  // What -v was on 8dd362b inside run: the global --version (printed 0.1.0, exit 0, ran nothing).
  const run = podctl(dir, ['run', '-v', `${src}:/host`, '--', 'sh', '-c', 'cat host/f'])
  t.equal(run.status, 0, run.stderr)
  t.equal(run.stdout, 'data', 'a host pod sees the volume at $PODCTL_APP_ROOT/host')
  const m = prepared(t, dir, ['-v', `${src}:/host:ro`, '--volume', '/scratch', '-v', `${src}:/again:rw,Z`, '--', 'true'])
  t.strictSame(m.volumes, [
    { name: 'volume-0', kind: 'host', source: src },
    { name: 'volume-1', kind: 'empty' },
    { name: 'volume-2', kind: 'host', source: src },
  ])
  t.strictSame(m.apps[0].mounts, [
    { volume: 'volume-0', path: '/host', readOnly: true },
    { volume: 'volume-1', path: '/scratch' },
    { volume: 'volume-2', path: '/again' },
  ])
  const rel = podctl(dir, ['prepare', '-v', './src:/x', '--', 'true'], { cwd: base })
  t.equal(rel.status, 0, rel.stderr)
  t.equal(JSON.parse(podctl(dir, ['cat-manifest', rel.stdout.trim()]).stdout).volumes[0].source, src, 'a path starting with "." is taken from the current directory')
  t.equal(podctl(dir, ['volume', 'create', 'db']).status, 0)
  t.strictSame(prepared(t, dir, ['-v', 'db:/db', '--', 'true']).volumes, [{ name: 'volume-0', kind: 'persistent', claim: 'db' }], 'a name is a persistent volume')
  for (const [spec, says] of [
    ['/a:rel', /^podctl: invalid --volume "\/a:rel": the path in the pod, "rel", must be absolute\n/],
    ['/a:/b:bogus', /^podctl: invalid --volume "\/a:\/b:bogus": "bogus" is not an option podctl takes \(ro, rw; z and Z are taken and do nothing\)\n/],
    ['/a:/b:ro,rw', /^podctl: invalid --volume "\/a:\/b:ro,rw": give ro or rw once\n/],
    ['/a:/b:ro:x', /^podctl: invalid --volume "\/a:\/b:ro:x": expected HOST:CTR\[:ro\|rw\], NAME:CTR\[:ro\|rw\] or CTR\n/],
    ['Bad_Name:/b', /^podctl: invalid --volume "Bad_Name:\/b": "Bad_Name" is neither a host path/],
    [`${base}/nope:/b`, /^podctl: invalid --volume: ".*\/nope" does not exist on this host\nsee podctl run --help, or Documentation\/subcommands\/run.md\n$/],
    ['nope:/b', /^podctl: invalid --volume: no volume claim or persistent volume named "nope"/],
  ] as const) {
    refused(t, podctl(dir, ['run', '-v', spec, '--', 'true']), says, `-v ${spec}`)
  }
  refused(t, podctl(dir, ['run', '--manifest', '-', '-v', '/a:/b'], { input: '{}' }), /^podctl: --volume is for a pod made from a command after -- or from --image\nin a manifest, give the pod its "volumes"/, '-v beside --manifest')
  t.equal(fs.readdirSync(path.join(dir, 'pods', 'prepare')).length + fs.readdirSync(path.join(dir, 'pods', 'run')).length, 1, 'no refused pod was made (the one pod is the first run)')
})

t.test('-v before the command word is the version, as podman -v; after it, a command\'s flag', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  for (const args of [['-v'], ['--version'], ['--dir', dir, '-v']]) {
    const r = podctl(undefined, args)
    t.equal(r.status, 0, args.join(' '))
    t.equal(r.stdout, `${VERSION}\n`)
  }
  const r = podctl(dir, ['run', '--', 'true', '-v'])
  t.equal(r.status, 0, '-v after -- is the command\'s')
  refused(t, podctl(dir, ['run', '-v']), /^podctl: option '-v, --volume <HOST:CTR\[:ro\]>' argument missing/, 'run -v without its value')
  refused(t, podctl(dir, ['list', '-v']), /^podctl: unknown option '-v'/, 'list -v')
  refused(t, podctl(dir, ['list', '--version']), /^podctl: unknown option '--version'/, 'list --version (podman: unknown flag)')
  t.notMatch(podctl(undefined, ['run', '--help']).stdout, /--version/, "run --help does not list the program's --version among its global options")
})

t.test('flag errors name the flag and what it takes, and point at the command\'s page (exit 2, nothing made)', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const page = (cmd: string): RegExp => new RegExp(`\\nsee podctl ${cmd} --help, or Documentation/subcommands/${cmd}\\.md\\n$`)
  const cases: [string[], RegExp][] = [
    [['--memory', 'abc'], /^podctl: invalid --memory "abc": expected a size such as 64m or 1g/],
    [['--memory', '1m', '--isolation', 'namespaces'], /^podctl: invalid --memory "1m": the smallest memory limit is 6m/],
    [['--cpus', '-1'], /^podctl: invalid --cpus "-1": expected a number of cores such as 0\.5 or 2/],
    [['--cpus', '0.001'], /^podctl: invalid --cpus "0\.001": the smallest share is 0\.01 of a core/],
    [['--pids-limit', 'abc'], /^podctl: invalid --pids-limit "abc": expected a whole number of at least 8/],
    [['--pids-limit', '7'], /^podctl: invalid --pids-limit "7": expected a whole number of at least 8/],
    [['--image', 'Bad Name!!'], /^podctl: invalid --image "Bad Name!!": expected an image name, NAME\[:TAG\] in lower case/],
    [['--name', 'Web_1'], /^podctl: invalid --name "Web_1": expected 1 to 63 characters/],
    [['--hostname', '-web', '--isolation', 'namespaces'], /^podctl: invalid --hostname "-web": expected a hostname/],
    [['--http-proxy=maybe'], /^podctl: invalid --http-proxy "maybe": expected true or false/],
    [['-e', '1X=y'], /^podctl: invalid --env "1X=y": expected KEY=VALUE, or KEY for its value in podctl's environment/],
    [['--user', 'a:b:c'], /^podctl: invalid --user "a:b:c": expected USER or USER:GROUP/],
  ]
  for (const cmd of ['run', 'prepare']) {
    for (const [flags, says] of cases) {
      const r = podctl(dir, [cmd, ...flags, '--', 'true'])
      refused(t, r, says, `${cmd} ${flags.join(' ')}`)
      t.match(r.stderr, page(cmd), `${cmd} ${flags.join(' ')}: points at ${cmd}.md`)
      t.notMatch(r.stderr, /manifest/, `${cmd} ${flags.join(' ')}: says nothing of a manifest`)
    }
  }
  const host = podctl(dir, ['run', '--memory', '20M', '--cpus', '1', '--', 'true'])
  refused(t, host, /^podctl: --memory and --cpus need --isolation namespaces \(host processes have no cgroups, capabilities or seccomp of their own\)\nadd --isolation namespaces, or run an image \(--image\)\n$/, 'limits of a host pod')
  refused(t, podctl(dir, ['run', '--hostname', 'web', '--', 'true']), /^podctl: --hostname needs --isolation namespaces \(host processes have the host's hostname\)\n/, 'the hostname of a host pod')
  refused(t, podctl(dir, ['run', '--network', 'none', '--', 'true']), /^podctl: --network none needs --isolation namespaces/, '--network none of a host pod')
  refused(t, podctl(dir, ['prepare', '-t', '--', 'true']), /^podctl: -t needs --isolation namespaces \(an app's terminal is the OCI runtime's console\)\nadd --isolation namespaces, or run an image/, 'a terminal for a host pod, in the flag\'s words')
  refused(t, podctl(dir, ['run', '-w', 'tmp', '--', 'true']), /^podctl: invalid --workdir: "tmp" must be an absolute path\n/, 'a relative --workdir')
  refused(t, podctl(dir, ['run', '--', './build.sh']), /^podctl: invalid command after --: "\.\/build\.sh" must be an absolute path or a name to look up on PATH\ngive an absolute path or a program on PATH\n$/, 'a relative program')
  t.equal(fs.existsSync(path.join(dir, 'pods')), false, 'nothing was made')
})

t.test('-e KEY and --env-file, as podman reads them; Node never sees --env-file', async (t) => {
  const base = t.testdir({
    'one.env': '# a comment\n\nA=1\n  C=x=y\nD\nE\nF="kept"\n   # indented comment\nG=from file\nPRE*\r\n',
    'two.env': 'G=second file\nH=\n',
    'bad.env': 'A=1\nBAD NAME=2\n',
  })
  const dir = path.join(base, 'data')
  // Through the executable itself, as a shell runs it: its #! line decides what Node reads.
  const bin = (args: string[], env: NodeJS.ProcessEnv = process.env): Result => {
    const e = { ...env }
    delete e.NODE_OPTIONS
    const r = spawnSync(BIN, ['--dir', dir, ...args], { encoding: 'utf8', cwd: base, env: e, input: '' })
    return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr }
  }
  const env: NodeJS.ProcessEnv = { ...process.env, D: 'from caller', PRE_X: 'px', PRE_Y: 'py', K: 'k of caller' }
  delete env.E
  delete env.UNSET_HERE
  const show = ['--', 'sh', '-c', 'echo "$A|$C|$D|${E-unset}|$F|$G|${H-unset}|$PRE_X|$PRE_Y|$K|${UNSET_HERE-unset}|$I"']
  const r = bin(['run', '--env-file', 'one.env', '--env-file', 'two.env', '-e', 'K', '-e', 'UNSET_HERE', '-e', 'I=flag', '-e', 'A=flag', ...show], env)
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, 'flag|x=y|from caller|unset|"kept"|second file||px|py|k of caller|unset|flag\n', 'files in order, then --env over them; a bare KEY is the caller\'s, or nothing')
  refused(t, bin(['run', '--env-file', 'missing.env', '--', 'true']), /^podctl: cannot read env file missing\.env: no such file\n/, 'a missing file (Node answered "node: missing.env: not found", exit 9)')
  refused(t, bin(['run', '--env-file', 'bad.env', '--', 'true']), /^podctl: invalid --env-file bad\.env: line 2: "BAD NAME" is not a variable name/, 'a line that is not a variable')
  // A host pod's apps have podctl's environment besides: what the flags added is in the manifest.
  const m = prepared(t, dir, ['--env-file', path.join(base, 'one.env'), '-e', 'K', '-e', 'UNSET_HERE', '--', 'true'], env)
  t.strictSame(m.apps[0].env, { A: '1', C: 'x=y', D: 'from caller', F: '"kept"', G: 'from file', PRE_X: 'px', PRE_Y: 'py', K: 'k of caller' })
})

t.test('-w, --hostname, --http-proxy: fields of the manifest the runtime reads', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  t.equal(prepared(t, dir, ['-w', '/work', '--', 'true']).apps[0].workingDirectory, '/work', '-w: the app\'s workingDirectory')
  t.equal(prepared(t, dir, ['--workdir', '/w', '--isolation', 'namespaces', '--hostname', 'web-1.example', '--', 'true']).hostname, 'web-1.example', '--hostname: the pod\'s hostname')
  t.equal(prepared(t, dir, ['--http-proxy=false', '--', 'true']).httpProxy, false, '--http-proxy=false')
  t.equal(prepared(t, dir, ['--http-proxy', '--', 'true']).httpProxy, undefined, '--http-proxy alone: the default')
  t.equal(prepared(t, dir, ['-n', 'web', '--', 'true']).name, 'web', '-n, --name')
  const r = podctl(dir, ['run', '-w', '/sub', '--', 'sh', '-c', 'pwd'])
  t.equal(r.status, 0, r.stderr)
  t.match(r.stdout, /\/apps\/sh\/sub\n$/, 'a host pod\'s working directory is inside its app root')
})

t.test("-u, --read-only, --cap-add and --cap-drop: podman's flags for the app's user, root and capabilities", async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const iso = ['--isolation', 'namespaces', '--network', 'none']
  const app = prepared(t, dir, [...iso, '-u', 'nobody', '--read-only', '--cap-add', 'NET_ADMIN,SYS_TIME', '--cap-add', 'net_raw', '--cap-drop', 'CHOWN', '--', 'true']).apps[0]
  t.match(app, { user: 'nobody', readOnlyRootFilesystem: true, capabilities: { add: ['NET_ADMIN', 'SYS_TIME', 'net_raw'], drop: ['CHOWN'] } }, 'the fields of the app, lists split at commas')
  refused(t, podctl(dir, ['prepare', '--cap-add', 'NET_ADMIN', '--', 'true']), /^podctl: --cap-add needs --isolation namespaces \(/, '--cap-add of a host pod')
  refused(t, podctl(dir, ['prepare', '--read-only', '--', 'true']), /^podctl: --read-only needs --isolation namespaces \(/, '--read-only of a host pod')
  refused(t, podctl(dir, ['prepare', ...iso, '--cap-drop', 'BOGUS', '--', 'true']), /^podctl: invalid --cap-drop: "BOGUS" is not a capability/, 'an unknown capability, in the flag\'s words')
  if (containersMissing() !== undefined) return
  const r = podctl(dir, ['run', ...iso, '-u', 'nobody', '--read-only', '--cap-add', 'NET_BIND_SERVICE', '--', 'sh', '-c', 'id -u; grep CapEff /proc/self/status; touch /x 2>/dev/null || echo read-only'])
  t.equal(r.stdout, '65534\nCapEff:\t0000000000000400\nread-only\n', 'run: the user, the capability it was given, a read-only root', { stderr: r.stderr })
})

t.test('--rm: the pod is removed once it has exited, in the foreground and detached', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const fg = podctl(dir, ['run', '--rm', '--', 'sh', '-c', 'echo hi; exit 3'])
  t.equal(fg.status, 3, "run exits with the pod's code")
  t.equal(fg.stdout, 'hi\n')
  t.equal(podctl(dir, ['list', '-q']).stdout, '', 'and the pod is gone when it has')
  const detached = podctl(dir, ['run', '--rm', '-d', '--', 'sleep', '60'])
  t.equal(detached.status, 0, detached.stderr)
  const uuid = detached.stdout.trim()
  t.match(uuid, UUID_RE)
  const stop = podctl(dir, ['stop', uuid])
  t.equal(stop.status, 0, `stop of a --rm pod is done when the pod is gone: ${stop.stderr}`)
  t.equal(stop.stdout, `${uuid}\n`)
  await pollUntil('the detached pod to be removed', () => podctl(dir, ['list', '-q']).stdout === '' || undefined)
  const p = podctl(dir, ['prepare', '--rm', '--', 'sh', '-c', 'exit 4'])
  t.equal(p.status, 0, p.stderr)
  t.equal(podctl(dir, ['run-prepared', p.stdout.trim()]).status, 4, 'prepare --rm, then run-prepared')
  t.equal(podctl(dir, ['list', '-q']).stdout, '', 'removes it too')
  const kept = podctl(dir, ['run', '--', 'true'])
  t.equal(kept.status, 0)
  t.equal(podctl(dir, ['list', '-q']).stdout.split('\n').filter(Boolean).length, 1, 'without --rm, the pod stays')
})

t.test('--network, -p, --dns, --dns-search, --dns-option, --add-host: the manifest\'s network fields', { skip: containersMissing() }, async (t) => {
  const base = t.testdir({ 'net.d': { '10-front.conflist': '{"cniVersion": "1.0.0", "name": "front", "plugins": [{"type": "bridge", "bridge": "podctltest0"}]}' } })
  const dir = path.join(base, 'data')
  // front is an operator's network: prepare may check that a network exists.
  const env = { ...process.env, PODCTL_CNI_CONFIG_DIR: path.join(base, 'net.d') }
  const iso = (...args: string[]): Record<string, any> => prepared(t, dir, ['--isolation', 'namespaces', ...args, '--', 'true'], env)
  t.equal(iso().network, undefined, 'no --network: the manifest says nothing, and the pod is on the default network')
  t.equal(iso('--network', 'bridge').network, 'bridge', 'one network is "network"')
  t.equal(iso('--network', 'none').network, 'none')
  t.strictSame(iso('--network', 'bridge,front').networks, ['bridge', 'front'], 'several, joined by ",", are "networks"')
  t.strictSame(iso('--network', 'front', '--network', 'bridge').networks, ['front', 'bridge'], 'or --network given again, in order')
  const m = iso('-p', '8080:80', '--publish', '127.0.0.1:5353:53/udp', '-p', '[::1]:9000-9001:90-91', '--dns', '1.1.1.1', '--dns', '2606:4700::1111', '--dns-search', 'example.com', '--dns-option', 'ndots:2', '--dns-option', 'edns0', '--add-host', 'db:10.0.0.5', '--add-host', 'db6:fd00::5')
  t.strictSame(m.ports, [
    { hostPort: 8080, containerPort: 80, protocol: 'tcp' },
    { hostPort: 5353, containerPort: 53, protocol: 'udp', hostIP: '127.0.0.1' },
    { hostPort: 9000, containerPort: 90, protocol: 'tcp', hostIP: '::1' },
    { hostPort: 9001, containerPort: 91, protocol: 'tcp', hostIP: '::1' },
  ])
  t.strictSame([m.dns, m.dnsSearch, m.dnsOptions, m.addHosts], [['1.1.1.1', '2606:4700::1111'], ['example.com'], ['ndots:2', 'edns0'], ['db:10.0.0.5', 'db6:fd00::5']])
})

t.test('the network flags refuse what the manifest would, in the flags\' words (exit 2, nothing made)', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const page = (cmd: string): RegExp => new RegExp(`\\nsee podctl ${cmd} --help, or Documentation/subcommands/${cmd}\\.md\\n$`)
  const cases: [string[], RegExp][] = [
    [['--network', 'a b'], /^podctl: invalid --network "a b": expected host, none, bridge or the name of a network/],
    [['--network', 'front,,back'], /^podctl: invalid --network "front,,back": expected host, none, bridge or the name of a network/],
    [['--network', 'front,front'], /^podctl: invalid --network "front,front": front is named twice\n/],
    [['--network', 'front', '--network', 'front'], /^podctl: invalid --network "front": front is named twice\n/],
    [['--network', 'bridge,none'], /^podctl: invalid --network "bridge,none": none is a mode of its own: give --network none alone/],
    [['--network', 'host', '--network', 'front'], /^podctl: invalid --network "front": host is a mode of its own/],
    [['-p', '80'], /^podctl: invalid --publish "80": it names no host port: give HOSTPORT:PORT\n/],
    [['-p', '8080:80/sctp'], /^podctl: invalid --publish "8080:80\/sctp": the protocol must be tcp or udp, not "sctp"\n/],
    [['--publish', '1.2.3:80:80'], /^podctl: invalid --publish "1\.2\.3:80:80": "1\.2\.3" is not an IP address/],
    [['-p', '70000:80'], /^podctl: invalid --publish "70000:80": "70000" is not a port \(1 to 65535\)\n/],
    [['--dns', 'dns.example'], /^podctl: invalid --dns "dns\.example": expected the IP address of a name server/],
    [['--dns-search', 'a_b'], /^podctl: invalid --dns-search "a_b": expected a domain/],
    [['--dns-option', 'a b'], /^podctl: invalid --dns-option "a b": expected one resolver option/],
    [['--add-host', 'db'], /^podctl: invalid --add-host "db": expected NAME:IP \(db:10\.0\.0\.5, db:fd00::5\)\n/],
    [['--add-host', 'db:[::1]'], /^podctl: invalid --add-host "db:\[::1\]": "\[::1\]" is not an IP address\n/],
    [['--add-host', 'a b:10.0.0.5'], /^podctl: invalid --add-host "a b:10\.0\.0\.5": "a b" is not a host name/],
    [['--isolation', 'namespaces', '-p', '8080:80', '-p', '8080:81'], /^podctl: invalid --publish: host port 8080\/tcp is published twice\n/],
  ]
  for (const cmd of ['run', 'prepare']) {
    for (const [flags, says] of cases) {
      const r = podctl(dir, [cmd, ...flags, '--', 'true'])
      refused(t, r, says, `${cmd} ${flags.join(' ')}`)
      t.match(r.stderr, page(cmd), `${cmd} ${flags.join(' ')}: points at ${cmd}.md`)
      t.notMatch(r.stderr, /manifest|"network"/, `${cmd} ${flags.join(' ')}: says nothing of a manifest`)
    }
  }
  // What needs a network of the pod's own: not the host's (host processes, or --network host), nor none.
  refused(t, podctl(dir, ['run', '-p', '8080:80', '--dns', '1.1.1.1', '--', 'true']), /^podctl: --publish needs --isolation namespaces \(host processes have the host's network\); --dns needs --isolation namespaces \(host processes have the host's network\)\nadd --isolation namespaces, or run an image \(--image\)\n$/, '-p and --dns of a host pod')
  refused(t, podctl(dir, ['run', '--network', 'front', '--', 'true']), /^podctl: --network front needs --isolation namespaces \(host processes have the host's network\)\n/, 'a network of a host pod')
  refused(t, podctl(dir, ['run', '--network', 'bridge,front', '--', 'true']), /^podctl: --network bridge,front needs --isolation namespaces/, 'networks of a host pod')
  for (const mode of ['host', 'none']) {
    const flags = ['--isolation', 'namespaces', '--network', mode, '-p', '8080:80', '--dns-search', 'example.com', '--dns-option', 'ndots:1', '--add-host', 'db:10.0.0.5']
    refused(
      t,
      podctl(dir, ['prepare', ...flags, '--', 'true']),
      new RegExp(`^podctl: --publish needs a network of the pod's own, not --network ${mode}; --dns-search needs [^;]*; --dns-option needs [^;]*; --add-host needs a network of the pod's own, not --network ${mode}\\nleave --network out for the default network \\(bridge\\), or name one: --network NAME\\n$`),
      `--network ${mode}`,
    )
  }
  // Beside --manifest, the manifest says it.
  for (const [flag, value, field] of [
    ['--network', 'bridge', '"network" \\(or "networks"\\)'],
    ['-p', '8080:80', '"ports"'],
    ['--dns', '1.1.1.1', '"dns"'],
    ['--dns-search', 'example.com', '"dnsSearch"'],
    ['--dns-option', 'ndots:2', '"dnsOptions"'],
    ['--add-host', 'db:10.0.0.5', '"addHosts"'],
  ] as const) {
    const long = flag === '-p' ? '--publish' : flag
    refused(t, podctl(dir, ['prepare', '--manifest', '-', flag, value], { input: '{}' }), new RegExp(`^podctl: ${long} is for a pod made from a command after -- or from --image\\nin a manifest, give the pod its ${field}\\n$`), `${flag} beside --manifest`)
  }
  t.equal(fs.existsSync(path.join(dir, 'pods')), false, 'nothing was made')
})

t.test('an argument with a NUL byte is a usage error (2), whichever it is', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  for (const argv of [
    ['--dir', `${dir}\0x`, 'list'],
    ['--dir', dir, 'prepare', '--manifest', `${dir}\0x`],
    ['--dir', dir, 'prepare', '--', 'echo', 'a\0b'],
    ['--dir', dir, 'prepare', '--env-file', 'a\0b', '--', 'true'],
    ['--dir', dir, 'prepare', '-v', '/tmp\0:/x', '--', 'true'],
  ]) {
    let stderr = ''
    const code = await main(argv, { out: () => {}, err: (s) => void (stderr += s), errIsTTY: false })
    t.equal(code, 2, JSON.stringify(argv))
    t.notMatch(stderr, STACK_RE)
  }
})
