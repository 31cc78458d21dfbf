// What an isolated app sees of podman's run flags (CONTRACT §15), from
// inside it: -i (podctl's standard input is the app's), -t (a terminal of
// its own; refused without one, before anything is made), -w, --hostname
// and --http-proxy=false. run-flags.ts checks the manifest these flags
// write; this file runs the pods.
import t from 'tap'
import fs from 'node:fs'
import { STACK_RE } from '../helpers/common.js'
import { noTerminalHere, podctl, podctlOnTerminal } from '../helpers/cli-util.js'
import { containersMissing } from '../helpers/containers.js'
import { dataDir } from '../helpers/run-util.js'

const missing = containersMissing()
const ISOLATED = ['--isolation', 'namespaces', '--network', 'none']

t.test('-i: the app reads podctl\'s standard input; without it, nothing (podman gives /dev/null)', { skip: missing }, async (t) => {
  const dir = dataDir(t)
  const withI = podctl(dir, ['run', '-i', ...ISOLATED, '--', 'cat'], { input: 'hi\nthere\n' })
  t.equal(withI.status, 0, withI.stderr)
  t.equal(withI.stdout, 'hi\nthere\n', 'what goes in comes out')
  const big = 'x'.repeat(1 << 20)
  t.equal(podctl(dir, ['run', '-i', ...ISOLATED, '--', 'wc', '-c'], { input: big }).stdout.trim(), String(1 << 20), 'a MiB through stdin, whole')
  const without = podctl(dir, ['run', ...ISOLATED, '--', 'cat'], { input: 'hi\n' })
  t.equal(without.status, 0, without.stderr)
  t.equal(without.stdout, '', 'without -i the app reads nothing')
})

t.test('-t: the app runs on a terminal of its own; without -t it has none', { skip: missing || noTerminalHere }, async (t) => {
  const dir = dataDir(t)
  const r = podctlOnTerminal(dir, ['run', '-t', ...ISOLATED, '--', 'tty'])
  t.equal(r.status, 0, r.stdout)
  // runc echoes a NUL through the terminal before the app starts (a bare `runc run` does the same).
  t.match(r.stdout, /\/dev\/pts\/\d+\r\n$/, 'tty names a pseudo-terminal of the pod')
  const none = podctl(dir, ['run', ...ISOLATED, '--', 'tty'])
  t.equal(none.status, 1)
  t.equal(none.stdout, 'not a tty\n', 'without -t: not a tty')
})

t.test('-t without a terminal: exit 2 before anything is made, for run and run-prepared', { skip: missing }, async (t) => {
  const dir = dataDir(t)
  const message = 'podctl: app tty runs on a terminal (-t), and standard input is not one\nleave -t out in a script or a pipe, or run the pod with --detach\n'
  const r = podctl(dir, ['run', '-t', ...ISOLATED, '--', 'tty'])
  t.equal(r.status, 2, 'exit 2, a usage error (the runtime failed with 126: "open /dev/tty")')
  t.equal(r.stderr, message)
  t.notMatch(r.stderr, STACK_RE)
  t.equal(podctl(dir, ['list', '-q']).stdout, '', 'no pod was made')
  const uuid = podctl(dir, ['prepare', '-t', ...ISOLATED, '--', 'tty']).stdout.trim()
  const again = podctl(dir, ['run-prepared', uuid])
  t.equal(again.status, 2)
  t.equal(again.stderr, message)
  t.match(podctl(dir, ['status', uuid]).stdout, /^state=prepared\n/, 'the prepared pod is left prepared')
  const detached = podctl(dir, ['run-prepared', '--detach', uuid])
  t.equal(detached.status, 0, `detached, it runs (without the terminal): ${detached.stderr}`)
  t.equal(podctl(dir, ['status', '--wait', uuid]).status, 0)
})

t.test('-w and --hostname: the app\'s working directory (made if missing) and the pod\'s name for itself', { skip: missing }, async (t) => {
  const dir = dataDir(t)
  const r = podctl(dir, ['run', ...ISOLATED, '--hostname', 'web-1.example', '-w', '/srv/new', '--', 'sh', '-c', 'hostname; cat /etc/hostname; pwd; grep -c "web-1.example" /etc/hosts'])
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, 'web-1.example\nweb-1.example/srv/new\n1\n', 'hostname, /etc/hostname (no newline, as podman 4.3 writes it), the working directory, and /etc/hosts names the host')
  const d = podctl(dir, ['run', ...ISOLATED, '--uuid-file-save', `${dir}.uuid`, '--', 'hostname'])
  const uuid = fs.readFileSync(`${dir}.uuid`, 'utf8').trim()
  t.equal(d.stdout, `${uuid.slice(0, 8)}\n`, 'by default the hostname is the pod\'s short id, as podman\'s is the container\'s')
})

t.test('the caller\'s proxy variables reach the app; --http-proxy=false keeps them out', { skip: missing }, async (t) => {
  const dir = dataDir(t)
  const env = { ...process.env, http_proxy: 'http://192.0.2.1:3128', HTTPS_PROXY: 'http://192.0.2.1:3129', no_proxy: 'localhost', FTP_PROXY: 'ftp://192.0.2.1' }
  const show = ['sh', '-c', 'echo "${http_proxy-unset} ${HTTPS_PROXY-unset} ${no_proxy-unset} ${FTP_PROXY-unset}"']
  const on = podctl(dir, ['run', ...ISOLATED, '--', ...show], { env })
  t.equal(on.stdout, 'http://192.0.2.1:3128 http://192.0.2.1:3129 localhost ftp://192.0.2.1\n', 'either case passes')
  const off = podctl(dir, ['run', ...ISOLATED, '--http-proxy=false', '--', ...show], { env })
  t.equal(off.stdout, 'unset unset unset unset\n', '--http-proxy=false: none')
})
