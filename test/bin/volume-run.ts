// Volumes end to end, as a new user meets them: a
// pod with an empty, a host, a files and a persistent volume runs, its apps
// read and write them at $PODCTL_APP_ROOT/<path>, status shows usage, and
// rm/gc leave exactly what the reclaim policies say. Spawns bin/podctl.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { listTree, manifestFile, podDir, pollUntil, snapshot } from '../helpers/common.js'
import { podctl, podctlJson, runDetached } from '../helpers/cli-util.js'
import { dataDir } from '../helpers/run-util.js'

const sh = (script: string): string[] => ['/bin/sh', '-c', script]
const read = (p: string): string | undefined => {
  try {
    return fs.readFileSync(p, 'utf8')
  } catch {
    return undefined
  }
}

const everyKind = (host: string, script: string) => ({
  apiVersion: 'podctl/v1',
  name: 'web',
  apps: [
    {
      name: 'web',
      exec: sh(script),
      mounts: [
        { volume: 'data', path: '/var/lib/data' },
        { volume: 'cache', path: '/var/lib/data/cache' },
        { volume: 'cfg', path: '/etc/web' },
        { volume: 'db', path: '/srv/db' },
        { volume: 'host', path: '/host', readOnly: true },
      ],
    },
  ],
  volumes: [
    { name: 'data', kind: 'empty' },
    { name: 'cache', kind: 'empty' },
    { name: 'cfg', kind: 'files', files: { 'app.conf': { content: 'v1\n' }, 'tls/key': { content: 'k', mode: 0o600 } } },
    { name: 'db', kind: 'persistent', claim: 'db' },
    { name: 'host', kind: 'host', source: host, readOnly: true },
  ],
})

// The app: reads every volume once, writes into the writable ones, then
// copies the config it sees into the empty volume until it is stopped.
const APP = `
R=$PODCTL_APP_ROOT
cat $R/host/in.txt > $R/var/lib/data/seen-host
echo row >> $R/srv/db/rows
echo cached > $R/var/lib/data/cache/c
ls $R/etc/web > $R/var/lib/data/seen-files
while :; do cat $R/etc/web/app.conf > $R/var/lib/data/.cfg && mv $R/var/lib/data/.cfg $R/var/lib/data/cfg; sleep 0.02; done`

t.test('a pod with every kind of volume: apps use them, status shows them, rm leaves what the policies say', async (t) => {
  const dir = dataDir(t)
  const host = path.join(dir, 'host-src')
  fs.mkdirSync(path.join(host, 'sub'), { recursive: true })
  fs.writeFileSync(path.join(host, 'in.txt'), 'from the host\n')
  fs.writeFileSync(path.join(host, 'sub', 'deep'), 'deep')
  const hostBefore = snapshot(host)
  t.equal(podctl(dir, ['volume', 'create', 'db', '--reclaim', 'retain']).status, 0)
  const uuid = await runDetached(t, dir, ['--manifest', manifestFile(dir, everyKind(host, APP))])
  const pod = podDir(dir, uuid)!
  const data = path.join(pod, 'volumes', 'data')
  await pollUntil('the app to see its config', () => read(path.join(data, 'cfg')) === 'v1\n')
  t.equal(read(path.join(data, 'seen-host')), 'from the host\n', 'the host volume is readable at $PODCTL_APP_ROOT/host')
  t.equal(read(path.join(data, 'seen-files')), 'app.conf\ntls\n', 'the files volume shows only its files')
  t.equal(read(path.join(dir, 'volumes', 'db', 'data', 'rows')), 'row\n', 'the persistent volume got the write')
  t.equal(read(path.join(pod, 'volumes', 'cache', 'c')), 'cached\n', 'the nested mount reaches its own volume')

  // status: key=value lines and the CONTRACT §5 volumes array.
  const st = podctl(dir, ['status', uuid])
  t.match(st.stdout, new RegExp(`^volume-data=kind=empty path=${data} used_bytes=\\d+ used_inodes=\\d+ capacity_bytes=- available_bytes=-$`, 'm'))
  t.match(st.stdout, new RegExp(`^volume-host=kind=host path=${host} used_bytes=\\d+ used_inodes=4 capacity_bytes=\\d+ available_bytes=\\d+$`, 'm'))
  const v = await podctlJson(t, dir, ['status', uuid, '--format', 'json'])
  t.same(v.volumes.map((x: { name: string; kind: string }) => [x.name, x.kind]), [['data', 'empty'], ['cache', 'empty'], ['cfg', 'files'], ['db', 'persistent'], ['host', 'host']])
  for (const x of v.volumes) {
    t.same(Object.keys(x).sort(), ['available_bytes', 'capacity_bytes', 'kind', 'name', 'path', 'used_bytes', 'used_inodes'], `${x.name}: the CONTRACT §5 keys`)
    t.type(x.used_bytes, 'number')
    t.type(x.used_inodes, 'number')
    const own = x.kind === 'host' || x.kind === 'persistent'
    t.equal(typeof x.capacity_bytes, own ? 'number' : 'object', `${x.name}: capacity ${own ? 'from statfs' : 'null'}`)
  }
  t.equal(v.volumes[3].path, path.join(dir, 'volumes', 'db', 'data'))
  const list = await podctlJson(t, dir, ['list', '--format', 'json'])
  t.notOk('volumes' in list[0], 'list does not show volumes')
  const inspect = await podctlJson(t, dir, ['volume', 'inspect', 'db', '--format', 'json'])
  t.same(inspect.in_use_by, [uuid], 'volume inspect names the running pod')

  // An update is seen by the running app.
  fs.writeFileSync(path.join(dir, 'new.conf'), 'v2\n')
  const up = podctl(dir, ['volume', 'update', uuid, 'cfg', '--from-file', `app.conf=${path.join(dir, 'new.conf')}`])
  t.equal(up.status, 0, up.stderr)
  t.equal(up.stdout, 'cfg updated\n')
  await pollUntil('the app to see the update', () => read(path.join(data, 'cfg')) === 'v2\n')
  t.notOk(fs.existsSync(path.join(pod, 'volumes', 'cfg', 'tls')), 'tls/ was not in the update: it is gone')

  t.equal(podctl(dir, ['volume', 'rm', 'db']).status, 4, 'volume rm is refused while the pod runs')
  t.equal(podctl(dir, ['stop', uuid]).status, 0)
  const rm = podctl(dir, ['rm', uuid])
  t.equal(rm.status, 0, rm.stderr)
  t.equal(podDir(dir, uuid), undefined, 'the pod is gone, its empty and files volumes with it')
  t.equal(snapshot(host), hostBefore, 'the host path is exactly as it was')
  t.equal(read(path.join(dir, 'volumes', 'db', 'data', 'rows')), 'row\n', 'retain: the persistent data is kept')
  t.same(fs.readdirSync(path.join(dir, 'volumes', 'db', 'claims')), [], 'the claim is released')
  t.same(listTree(path.join(dir, 'volume-locks')), [], 'no lock is left')
})

t.test('ReadWriteOnce between pods through the CLI: run and run-prepared are refused (exit 4) and leave nothing running', async (t) => {
  const dir = dataDir(t)
  podctl(dir, ['volume', 'create', 'db'])
  const m = manifestFile(dir, {
    apiVersion: 'podctl/v1',
    apps: [{ name: 'a', exec: ['sleep', '300'], mounts: [{ volume: 'db', path: '/db' }] }],
    volumes: [{ name: 'db', kind: 'persistent', claim: 'db' }],
  })
  const first = await runDetached(t, dir, ['--manifest', m])
  for (const args of [['run', '--detach', '--manifest', m], ['run', '--manifest', m]]) {
    const r = podctl(dir, args)
    t.equal(r.status, 4, `${args.join(' ')}: exit 4`)
    t.equal(r.stderr, `podctl: persistent volume db is in use by running pod ${first} (ReadWriteOnce)\nstop that pod first: podctl stop ${first.slice(0, 8)}\n`)
    t.equal(r.stdout, '')
  }
  t.same(fs.readdirSync(path.join(dir, 'pods', 'run')), [first], 'the refused runs left no pod')
  t.same(fs.readdirSync(path.join(dir, 'pods', 'garbage')), [])
  const prep = podctl(dir, ['prepare', '--manifest', m])
  t.equal(prep.status, 0, 'preparing claims nothing')
  const second = prep.stdout.trim()
  const rp = podctl(dir, ['run-prepared', '--detach', second])
  t.equal(rp.status, 4)
  t.match(rp.stderr, /in use by running pod/)
  t.same(fs.readdirSync(path.join(dir, 'pods', 'prepared')), [second], 'the refused pod is still prepared')
  t.equal(fs.existsSync(path.join(dir, 'pods', 'prepared', second, 'volume-state')), false, 'with nothing set up')
  t.equal(podctl(dir, ['stop', first]).status, 0)
  const ok = podctl(dir, ['run-prepared', '--detach', second])
  t.equal(ok.status, 0, 'once the first pod is stopped, the volume is free')
  const inspect = await podctlJson(t, dir, ['volume', 'inspect', 'db', '--format', 'json'])
  t.same(inspect.in_use_by, [second])
  t.same(inspect.claims.map((c: { pod: string }) => c.pod).sort(), [first, second].sort(), 'the exited pod stays bound until it is removed')
})

const usesVolume = (claim: string, script: string) => ({
  apiVersion: 'podctl/v1',
  apps: [{ name: 'a', exec: sh(script), mounts: [{ volume: 'v', path: '/v' }] }],
  volumes: [{ name: 'v', kind: 'persistent', claim }],
})

t.test('reclaim on release: delete removes the volume, recycle scrubs it, once the last bound pod is removed', async (t) => {
  const dir = dataDir(t)
  podctl(dir, ['volume', 'create', 'del', '--reclaim', 'delete', '--access-mode', 'ReadWriteMany'])
  podctl(dir, ['volume', 'create', 'rec', '--reclaim', 'recycle'])
  const write = 'mkdir -p $PODCTL_APP_ROOT/v/d && echo x > $PODCTL_APP_ROOT/v/d/f && ln -sfn / $PODCTL_APP_ROOT/v/root'
  const run = async (claim: string): Promise<string> => {
    const r = podctl(dir, ['run', '--uuid-file-save', path.join(dir, 'u'), '--manifest', manifestFile(dir, usesVolume(claim, write))])
    t.equal(r.status, 0, r.stderr)
    return fs.readFileSync(path.join(dir, 'u'), 'utf8').trim()
  }
  const d1 = await run('del')
  const d2 = await run('del')
  const r1 = await run('rec')
  t.equal(podctl(dir, ['rm', d1]).status, 0)
  t.ok(fs.existsSync(path.join(dir, 'volumes', 'del')), 'delete waits for the last bound pod')
  t.equal(podctl(dir, ['rm', d2]).status, 0)
  t.notOk(fs.existsSync(path.join(dir, 'volumes', 'del')), 'delete: gone with the last pod')
  const gc = podctl(dir, ['gc', '--grace-period', '0s'])
  t.equal(gc.status, 0, gc.stderr)
  t.equal(gc.stdout, `deleted ${r1}\n`, 'gc deleted the exited pod')
  t.same(fs.readdirSync(path.join(dir, 'volumes', 'rec', 'data')), [], 'recycle: scrubbed by gc, links unlinked not followed')
  const v = await podctlJson(t, dir, ['volume', 'inspect', 'rec', '--format', 'json'])
  t.match(v, { phase: 'available', claims: [], used_inodes: 1 })
  t.ok(fs.existsSync('/bin/sh'), 'the link to / was not followed (the system is still here)')
})

t.test('prepare checks the host: a missing host source or persistent volume is exit 2, nothing written', async (t) => {
  const dir = dataDir(t, { layout: false })
  const m = (v: object) => manifestFile(dir, { apiVersion: 'podctl/v1', apps: [{ name: 'a', exec: ['true'], mounts: [{ volume: 'v', path: '/v' }] }], volumes: [{ name: 'v', ...v }] })
  const host = podctl(dir, ['prepare', '--manifest', m({ kind: 'host', source: path.join(dir, 'nope') })])
  t.equal(host.status, 2)
  t.equal(host.stderr, `podctl: invalid manifest: volumes[0].source: ${JSON.stringify(path.join(dir, 'nope'))} does not exist on this host\nsee Documentation/subcommands/volume.md\n`)
  const pv = podctl(dir, ['run', '--manifest', m({ kind: 'persistent', claim: 'nope' })])
  t.equal(pv.status, 2)
  t.match(pv.stderr, /^podctl: invalid manifest: volumes\[0\]\.claim: no volume claim or persistent volume named "nope"; create one: podctl volume claim create nope --class CLASS --size SIZE, or podctl volume create nope\n/)
  const nested = manifestFile(dir, {
    apiVersion: 'podctl/v1',
    apps: [{ name: 'a', exec: ['true'], mounts: [{ volume: 'h', path: '/h' }, { volume: 'e', path: '/h/e' }] }],
    volumes: [{ name: 'h', kind: 'host', source: dir }, { name: 'e', kind: 'empty' }],
  })
  const n = podctl(dir, ['prepare', '--manifest', nested])
  t.equal(n.status, 2)
  t.match(n.stderr, /apps\[0\]\.mounts\[1\]\.path: "\/h\/e" is under apps\[0\]\.mounts\[0\] \("\/h"\), a host volume; mounts can be nested only under empty volumes/)
  t.notOk(fs.existsSync(path.join(dir, 'pods')), 'no pod, not even the data dir layout')
})

t.test('status of a prepared pod: its volumes, unused ones without usage yet', async (t) => {
  const dir = dataDir(t)
  const prep = podctl(dir, ['prepare', '--manifest', manifestFile(dir, { apiVersion: 'podctl/v1', apps: [{ name: 'a', exec: ['true'] }], volumes: [{ name: 'e', kind: 'empty' }] })])
  const v = await podctlJson(t, dir, ['status', prep.stdout.trim(), '--format', 'json'])
  t.same(v.volumes, [{ name: 'e', kind: 'empty', path: path.join(dir, 'pods', 'prepared', prep.stdout.trim(), 'volumes', 'e'), used_bytes: null, used_inodes: null, capacity_bytes: null, available_bytes: null }])
  const noVolumes = podctl(dir, ['prepare', '--', 'true'])
  const plain = await podctlJson(t, dir, ['status', noVolumes.stdout.trim(), '--format', 'json'])
  t.notOk('volumes' in plain, 'a pod without volumes has no volumes key')
})

t.test('volume inspect says bound while a pod holds a claim', async (t) => {
  const dir = dataDir(t)
  t.equal(podctl(dir, ['volume', 'create', 'pv']).status, 0)
  const m = path.join(dir, 'm.json')
  fs.writeFileSync(m, JSON.stringify({ apiVersion: 'podctl/v1', apps: [{ name: 'a', exec: ['sleep', '1000'], mounts: [{ volume: 'd', path: '/d' }] }], volumes: [{ name: 'd', kind: 'persistent', claim: 'pv' }] }))
  const uuid = podctl(dir, ['run', '--detach', '--manifest', m]).stdout.trim()
  t.match(await podctlJson(t, dir, ['volume', 'inspect', 'pv', '--format', 'json']), { phase: 'bound', in_use_by: [uuid] })
  t.equal(podctl(dir, ['stop', uuid]).status, 0)
  t.equal(podctl(dir, ['rm', uuid]).status, 0)
  t.match(await podctlJson(t, dir, ['volume', 'inspect', 'pv', '--format', 'json']), { phase: 'available', claims: [] })
})
