// Isolated pods (CONTRACT §9), black box: real pods with their
// own namespaces, run once as root and once as an unprivileged user (made
// here with useradd when the machine allows; otherwise that half says why
// it does not run). Every check looks from the host as well as from inside.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

import { containersMissing, dataDirFor, podProcesses, unprivileged, type Who } from '../helpers/containers.js'
import { podctl } from '../helpers/cli-util.js'
import { manifestFile, pollUntil } from '../helpers/common.js'

const READER = fileURLToPath(new URL('../helpers/volume-reader.mjs', import.meta.url))
const missing = containersMissing()
const root: Who = { name: 'as root', uid: 0, gid: 0, opts: {} }
const other = unprivileged()

// The two halves use data dirs of their own: they run at once.
t.jobs = 2

for (const who of [root, other]) {
  t.test(typeof who === 'string' ? 'as an unprivileged user' : who.name, async (t) => {
    if (typeof who === 'string') {
      t.plan(0, who)
      return
    }
    if (missing !== undefined) {
      t.plan(0, `this machine cannot isolate pods: ${missing}`)
      return
    }
    const run = (dir: string, args: string[]) => podctl(dir, args, who.opts)

    t.test('done means: own pid namespace, hostname is the pod name, host files read-only', async (t) => {
      const dir = dataDirFor(t, who)
      const etcX = (): number | undefined => fs.statSync('/etc/x', { throwIfNoEntry: false })?.mtimeMs
      const before = etcX()
      const r = run(dir, ['run', '--isolation', 'namespaces', '--name', 'iso-web', '--', 'sh', '-c', 'echo $$; hostname; touch /etc/x'])
      if (r.stderr.includes('cannot give a pod its own namespaces')) {
        t.plan(0, `this machine gives ${who.name} no namespaces: ${r.stderr.trim()}`)
        return
      }
      const [pid, hostname] = r.stdout.split('\n')
      t.ok(Number(pid) > 0 && Number(pid) < 32, `the app's $$ is a pid of the pod's own namespace (${pid})`)
      t.equal(hostname, 'iso-web', "the hostname is the pod's name")
      t.match(r.stderr, /touch: cannot touch '\/etc\/x': (Read-only file system|Permission denied)/, 'the host file system cannot be written')
      t.not(r.status, 0, "the pod's exit code is touch's failure")
      t.equal(etcX(), before, 'nothing was written on the host (/etc/x neither made nor touched)')
      const st = JSON.parse(run(dir, ['list', '--format', 'json']).stdout)[0]
      t.match(st, { isolation: 'namespaces', network: 'bridge', state: 'exited' }, 'list shows isolation and network (bridge: the default of an isolated pod, CONTRACT §14)')
      t.not(st.apps[0].pid, Number(pid), 'the recorded pid is a host pid, not the one inside')
    })

    t.test('an unnamed pod is called by the first 8 characters of its UUID; /tmp and the app root are writable', async (t) => {
      const dir = dataDirFor(t, who)
      const r = run(dir, ['run', '--isolation', 'namespaces', '--', 'sh', '-c', 'hostname; echo a > /tmp/a && cat /tmp/a; echo b > "$PODCTL_APP_ROOT/b" && cat "$PODCTL_APP_ROOT/b"'])
      t.equal(r.status, 0, r.stderr)
      const uuid = JSON.parse(run(dir, ['list', '--format', 'json']).stdout)[0].uuid as string
      t.equal(r.stdout, `${uuid.slice(0, 8)}\na\nb\n`)
      const st = JSON.parse(run(dir, ['status', uuid, '--format', 'json']).stdout)
      t.match(st, { isolation: 'namespaces', network: 'bridge' }, 'status shows isolation and network')
    })

    t.test('readOnly volumes cannot be written (EROFS); with isolation host the same manifest writes (the honest contrast)', async (t) => {
      const dir = dataDirFor(t, who)
      const src = path.join(path.dirname(dir), 'src')
      fs.mkdirSync(src)
      fs.writeFileSync(path.join(src, 'in'), 'host data\n')
      fs.chownSync(src, who.uid, who.gid)
      const claim = `ro-${who.uid}`
      t.equal(run(dir, ['volume', 'create', claim]).status, 0, 'a persistent volume')
      // The app writes into each read-only mount, by the path the pod's isolation gives it.
      const script = [
        'base=""; [ "$ISO" = host ] && base="$PODCTL_APP_ROOT"',
        'cat "$base/tmp/h/in"',
        'for v in h f p; do if echo x > "$base/tmp/$v/new" 2>/dev/null; then echo "$v wrote"; else echo "$v failed"; fi; done',
        'echo y > "$base/tmp/w/new" && echo "w wrote"',
      ].join('\n')
      const m = (isolation: string) =>
        manifestFile(path.dirname(dir), {
          apiVersion: 'podctl/v1',
          isolation,
          volumes: [
            { name: 'h', kind: 'host', source: src },
            { name: 'f', kind: 'files', files: { conf: { content: 'c' } } },
            { name: 'p', kind: 'persistent', claim },
            { name: 'w', kind: 'empty' },
          ],
          apps: [
            {
              name: 'writer',
              exec: ['sh', '-c', script],
              env: { ISO: isolation },
              mounts: [
                { volume: 'h', path: '/tmp/h', readOnly: true },
                { volume: 'f', path: '/tmp/f', readOnly: true },
                { volume: 'p', path: '/tmp/p', readOnly: true },
                { volume: 'w', path: '/tmp/w' },
              ],
            },
          ],
        }, `${isolation}.json`)
      fs.chmodSync(path.dirname(dir), 0o755)
      const iso = run(dir, ['run', '--manifest', m('namespaces')])
      t.equal(iso.status, 0, iso.stderr)
      t.equal(iso.stdout, 'host data\nh failed\nf failed\np failed\nw wrote\n', 'every read-only mount refuses the write; the writable one takes it')
      t.notOk(fs.existsSync(path.join(src, 'new')), 'the host source is unchanged')
      // The errno itself, from a program that reports it.
      const errno = run(dir, [
        'run',
        '--manifest',
        manifestFile(path.dirname(dir), {
          apiVersion: 'podctl/v1',
          isolation: 'namespaces',
          volumes: [{ name: 'h', kind: 'host', source: src, readOnly: true }],
          apps: [{ name: 'w', exec: [process.execPath, '-e', "try{require('fs').writeFileSync('/tmp/h/n','x')}catch(e){console.log(e.code)}"], mounts: [{ volume: 'h', path: '/tmp/h' }] }],
        }, 'errno.json'),
      ])
      t.equal(errno.stdout, 'EROFS\n', 'a volume read-only in its own definition gives EROFS too')
      const host = run(dir, ['run', '--manifest', m('host')])
      t.equal(host.status, 0, host.stderr)
      t.equal(host.stdout, 'host data\nh wrote\nf wrote\np wrote\nw wrote\n', 'with isolation host, readOnly is not enforced (Documentation/subcommands/volume.md)')
    })

    t.test('the pod sees its own processes only, and its apps see each other', async (t) => {
      const dir = dataDirFor(t, who)
      // comm, one line per process (a holder's cmdline has its script's newlines).
      const listing = 'for p in /proc/[0-9]*; do cat $p/comm; done'
      const m = manifestFile(path.dirname(dir), {
        apiVersion: 'podctl/v1',
        isolation: 'namespaces',
        apps: [
          { name: 'sleeper', exec: ['sleep', '7.5'] },
          { name: 'looker', exec: ['sh', '-c', `sleep 0.5; ${listing}; kill $(pgrep -x sleep) 2>/dev/null; true`] },
        ],
      })
      fs.chmodSync(path.dirname(dir), 0o755)
      const r = run(dir, ['run', '--manifest', m])
      // Several apps: the terminal output says which app each line is from.
      const seen = r.stdout.split('\n').filter((l) => l.startsWith('[looker] ')).map((l) => l.slice('[looker] '.length))
      t.ok(seen.includes('sleep'), 'the other app is seen', { seen })
      t.ok(seen.length <= 6, `only the pod's few processes are seen (${seen.length})`, { seen })
      t.notOk(seen.some((l) => l === 'node' || l === 'init' || l === 'systemd'), 'no host process is seen (no podctl, no init)', { seen })
    })

    t.test('network none: the host loopback is out of reach, the pod has its own', async (t) => {
      const dir = dataDirFor(t, who)
      const server = net.createServer((c) => c.end('host\n'))
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      t.teardown(() => server.close())
      const port = (server.address() as net.AddressInfo).port
      const js = [
        "const net=require('net')",
        `net.connect(${port},'127.0.0.1').on('connect',()=>{console.log('host: connected');done()}).on('error',(e)=>{console.log('host: '+e.code);done()})`,
        'let n=0;const done=()=>{if(++n===2)process.exit(0)}',
        "const s=net.createServer((c)=>c.end('pod')).listen(0,'127.0.0.1',()=>net.connect(s.address().port,'127.0.0.1').on('data',(d)=>{console.log('pod: '+d);done()}))",
      ].join(';')
      const r = run(dir, ['run', '--isolation', 'namespaces', '--network', 'none', '--', process.execPath, '-e', js])
      t.equal(r.status, 0, r.stderr)
      t.match(r.stdout, /host: (ECONNREFUSED|ENETUNREACH)\n/, "connecting to the host's loopback port fails")
      t.match(r.stdout, /pod: pod\n/, "the pod's own loopback works")
      const hostView = podctl(dir, ['run', '--isolation', 'namespaces', '--network', 'host', '--', process.execPath, '-e', js], who.opts)
      t.match(hostView.stdout, /host: connected/, 'with network host, the same app reaches the host port (the check is not vacuous)')
    })

    t.test('mutable: app add and app start join the namespaces; app stop stops that app only', async (t) => {
      const dir = dataDirFor(t, who)
      const m = manifestFile(path.dirname(dir), { apiVersion: 'podctl/v1', name: 'mut', mutable: true, isolation: 'namespaces', apps: [] })
      fs.chmodSync(path.dirname(dir), 0o755)
      const up = run(dir, ['run', '--detach', '--manifest', m])
      t.equal(up.status, 0, up.stderr)
      const uuid = up.stdout.trim()
      t.equal(run(dir, ['app', 'add', uuid, '--name', 'one', '--', 'sleep', '60']).status, 0)
      t.equal(run(dir, ['app', 'add', uuid, '--name', 'two', '--', 'sh', '-c', 'echo $(hostname) $$; exec sleep 60']).status, 0)
      t.equal(run(dir, ['app', 'start', uuid, 'one']).status, 0)
      t.equal(run(dir, ['app', 'start', uuid, 'two']).status, 0)
      await pollUntil('app two to say its name', () => run(dir, ['logs', uuid, '--app', 'two']).stdout.includes('mut'))
      const said = run(dir, ['logs', uuid, '--app', 'two']).stdout
      t.match(said, /^mut \d+\n$/, 'an added app has the pod hostname')
      t.ok(Number(said.split(' ')[1]) < 32, 'and a pid of the pod namespace')
      t.equal(run(dir, ['app', 'stop', uuid, 'one']).status, 0)
      const apps = JSON.parse(run(dir, ['status', uuid, '--format', 'json']).stdout).apps as { name: string; state: string }[]
      t.match(apps, [{ name: 'one', state: 'exited' }, { name: 'two', state: 'running' }], 'only app one stopped')
      t.equal(run(dir, ['stop', uuid]).status, 0)
      await pollUntil('no process of the pod', () => podProcesses(dir, uuid).length === 0, { polls: 200 })
      t.pass('nothing of the pod is left')
    })

    t.test('a files volume updated while an isolated app reads it is always seen whole', async (t) => {
      const dir = dataDirFor(t, who)
      const content = (v: string): string => `v=${v};${`${v} `.repeat(512)};end=${v}`
      const files = (v: string): Record<string, string> => ({ a: content(v), b: content(v), c: content(v), 'd/e': content(v), ...(v !== 'final' && Number(v) % 2 === 1 ? { odd: 'odd' } : {}) })
      const m = manifestFile(path.dirname(dir), {
        apiVersion: 'podctl/v1',
        isolation: 'namespaces',
        // The reader goes in as a files volume: a checkout under /tmp (CI's clone) is hidden by the pod's private /tmp.
        apps: [{ name: 'reader', exec: [process.execPath, '/tmp/prog/reader.mjs'], env: { READER_ROOT: '/tmp' }, mounts: [{ volume: 'prog', path: '/tmp/prog', readOnly: true }, { volume: 'cfg', path: '/tmp/cfg', readOnly: true }, { volume: 'out', path: '/tmp/out' }] }],
        volumes: [
          { name: 'prog', kind: 'files', files: { 'reader.mjs': { content: fs.readFileSync(READER, 'utf8') } } },
          { name: 'cfg', kind: 'files', files: Object.fromEntries(Object.entries(files('0')).map(([k, x]) => [k, { content: x }])) },
          { name: 'out', kind: 'empty' },
        ],
      })
      fs.chmodSync(path.dirname(dir), 0o755)
      const up = run(dir, ['run', '--detach', '--manifest', m])
      t.equal(up.status, 0, up.stderr)
      const uuid = up.stdout.trim()
      const out = path.join(dir, 'pods', 'run', uuid, 'volumes', 'out')
      await pollUntil('the reader to start', () => fs.existsSync(path.join(out, 'started')))
      const src = path.join(path.dirname(dir), 'v')
      const UPDATES = 24
      for (let i = 1; i <= UPDATES; i++) {
        const v = i === UPDATES ? 'final' : String(i)
        fs.rmSync(src, { recursive: true, force: true })
        for (const [k, x] of Object.entries(files(v))) {
          fs.mkdirSync(path.dirname(path.join(src, k)), { recursive: true })
          fs.writeFileSync(path.join(src, k), x, { mode: 0o644 })
        }
        spawnSync('chown', ['-R', `${who.uid}:${who.gid}`, src])
        const r = run(dir, ['volume', 'update', uuid.slice(0, 8), 'cfg', '--from-dir', src])
        if (r.status !== 0) t.fail(`update ${i}: ${r.stderr}`)
      }
      const st = run(dir, ['status', uuid, '--wait=30s', '--format', 'json'])
      t.equal(JSON.parse(st.stdout).apps[0].exit_code, 0, 'the reader saw the final version through its bind mount and exited 0')
      const result = JSON.parse(fs.readFileSync(path.join(out, 'result.json'), 'utf8'))
      t.match(result, { mixed: 0, torn: 0, wrongSet: 0, visibleTorn: 0 }, 'never a mix of two versions, never a torn file')
      t.ok(result.versions > 3, `and it saw versions go by (${result.versions})`)
    })

    t.test('what an app leaves behind goes when it ends, and the pod ends with its other app', async (t) => {
      const dir = dataDirFor(t, who)
      const m = manifestFile(path.dirname(dir), {
        apiVersion: 'podctl/v1',
        isolation: 'namespaces',
        apps: [
          { name: 'leaver', exec: ['sh', '-c', 'sleep 301 & echo left'] },
          { name: 'stayer', exec: ['sh', '-c', 'sleep 2; for p in /proc/[0-9]*; do cat $p/cmdline 2>/dev/null | tr "\\0" " "; echo; done | grep -c "^sleep 301" || true'] },
        ],
      })
      fs.chmodSync(path.dirname(dir), 0o755)
      const r = run(dir, ['run', '--manifest', m])
      t.equal(r.status, 0, r.stderr)
      t.match(r.stdout, /^\[stayer\] 0$/m, "the leaver's sleep was gone once the leaver had ended (the other app looked)")
      const uuid = JSON.parse(run(dir, ['list', '--format', 'json']).stdout)[0].uuid as string
      t.same(podProcesses(dir, uuid), [], 'and nothing of the pod is left on the host')
    })

    t.test('SIGKILL of the supervisor leaves no process of the pod', async (t) => {
      const dir = dataDirFor(t, who)
      const up = run(dir, ['run', '--detach', '--isolation', 'namespaces', '--', 'sh', '-c', 'sleep 300 & setsid sleep 301 & (trap "" TERM HUP; sleep 302) & sleep 303'])
      t.equal(up.status, 0, up.stderr)
      const uuid = up.stdout.trim()
      await pollUntil('the apps to run', () => podProcesses(dir, uuid).length >= 6)
      const pod = JSON.parse(run(dir, ['status', uuid, '--format', 'json']).stdout)
      process.kill(pod.pid, 'SIGKILL')
      await pollUntil('the pod to read exited', () => run(dir, ['status', uuid]).stdout.startsWith('state=exited'), { polls: 40 })
      await pollUntil('no process of the pod', () => podProcesses(dir, uuid).length === 0, { polls: 40 })
      t.pass('the pod is exited and nothing of it is left, escaped processes included')
    })
  })
}
