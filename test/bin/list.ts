// Black-box tests of `podctl list` (CONTRACT §4, §5): spawns bin/podctl.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { BIN, listTree, manifest, mkPod, type Test, TIME_RE } from '../helpers/common.js'
import {
  abortedPod,
  deletingPod,
  exitedDeletingPod,
  exitedGarbagePod,
  exitedPod,
  garbagePod,
  parseTable,
  podctl,
  podShapeProblems,
  preparedPod,
  preparingPod,
} from '../helpers/cli-util.js'
import { holdRunning } from '../helpers/pod-util.js'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { readRecord, writeRecord, type NetworkAttachment } from '../../lib/pod/record.js'

/** Records a pod's attachments in its pod.json, as the runtime does once CNI's ADD has answered. */
const attachInRecord = (dir: string, uuid: string, networks: NetworkAttachment[]): void => {
  const pod = podFromUUIDString(dir, uuid)
  writeRecord(pod.path, { ...readRecord(pod.path)!, networks })
}

const HEADER = /^UUID {3}NAME {3}APPS {3}STATE {3}CREATED {3}STARTED {3}NETWORKS\n$/

interface PodJson {
  uuid: string
  name: string | null
  state: string
  created_at: string | null
  started_at: string | null
  apps: { name: string }[]
}

const listJson = (t: Test, dir: string, args: string[] = []): PodJson[] => {
  const r = podctl(dir, ['list', '--format', 'json', ...args])
  t.equal(r.status, 0, 'list exits 0')
  t.equal(r.stderr, '', 'nothing on stderr')
  return JSON.parse(r.stdout) as PodJson[]
}

t.test('an empty data dir', async (t) => {
  const dir = t.testdir({})
  const table = podctl(dir, ['list'])
  t.equal(table.status, 0)
  t.match(table.stdout, HEADER, 'the header only')
  t.equal(table.stderr, '')

  const bare = podctl(dir, ['list', '--no-legacy'])
  t.equal(bare.status, 0)
  t.equal(bare.stdout, '', '--no-legacy: nothing at all')

  const json = podctl(dir, ['list', '--format', 'json'])
  t.equal(json.status, 0)
  t.equal(json.stdout, '[]\n')
  t.equal(json.stderr, '')

  const pretty = podctl(dir, ['list', '--format', 'json-pretty'])
  t.equal(pretty.status, 0)
  t.strictSame(JSON.parse(pretty.stdout), [])

  // A data dir whose pods were all removed is empty too.
  const uuid = await preparedPod(dir)
  t.equal(podctl(dir, ['rm', uuid]).status, 0)
  t.equal(podctl(dir, ['list', '--format', 'json']).stdout, '[]\n')
  t.match(podctl(dir, ['list']).stdout, HEADER)
})

t.test('a data dir that does not exist lists nothing and is not created', async (t) => {
  const dir = path.join(t.testdir({}), 'nope', 'data')
  const json = podctl(dir, ['list', '--format', 'json'])
  t.equal(json.status, 0)
  t.equal(json.stdout, '[]\n')
  t.equal(json.stderr, '')
  const table = podctl(dir, ['list'])
  t.equal(table.status, 0)
  t.match(table.stdout, HEADER)
  t.equal(fs.existsSync(path.join(dir, '..')), false, 'nothing was created')
})

t.test('pods in every state show the right STATE', async (t) => {
  const dir = t.testdir({})
  const running = await preparedPod(dir)
  await holdRunning(t, dir, running)
  const want: Record<string, string> = {
    [mkPod(dir, 'embryo')]: 'embryo',
    [(await preparingPod(t, dir)).uuid]: 'preparing',
    [await abortedPod(dir)]: 'aborted prepare',
    [await preparedPod(dir)]: 'prepared',
    [running]: 'running',
    [await exitedPod(dir)]: 'exited',
    [(await exitedDeletingPod(t, dir)).uuid]: 'exited deleting',
    [await exitedGarbagePod(dir)]: 'exited garbage',
    [(await deletingPod(t, dir)).uuid]: 'deleting',
    [await garbagePod(dir)]: 'garbage',
  }
  t.equal(new Set(Object.values(want)).size, 10, 'all ten states of CONTRACT §2')

  const json = listJson(t, dir)
  t.strictSame(Object.fromEntries(json.map((p) => [p.uuid, p.state])), want, 'JSON: every pod with its state')
  for (const p of json) t.strictSame(podShapeProblems(p), [], `JSON shape of the ${p.state} pod`)

  const table = podctl(dir, ['list'])
  t.equal(table.status, 0)
  t.equal(table.stderr, '')
  const rows = parseTable(table.stdout)
  t.equal(rows.length, 10, 'one row per pod')
  const short = Object.fromEntries(Object.entries(want).map(([u, s]) => [u.slice(0, 8), s]))
  t.strictSame(Object.fromEntries(rows.map((r) => [r.UUID, r.STATE])), short, 'table: 8-char UUIDs with their STATE')

  // Each state can be asked for.
  for (const state of new Set(Object.values(want))) {
    const only = listJson(t, dir, ['--state', state])
    t.strictSame(only.map((p) => p.state), [state], `--state ${JSON.stringify(state)}`)
  }
})

t.test('the table shows name, apps and times; --full shows full UUIDs and RFC 3339', async (t) => {
  const dir = t.testdir({})
  const web = await preparedPod(dir, manifest({ name: 'web', apps: [{ name: 'db', exec: ['true'] }, { name: 'api', exec: ['true'] }] }))
  const anon = await exitedPod(dir)

  const rows = parseTable(podctl(dir, ['list']).stdout)
  const byUuid = Object.fromEntries(rows.map((r) => [r.UUID, r]))
  t.match(byUuid[web.slice(0, 8)], { UUID: web.slice(0, 8), NAME: 'web', APPS: 'db,api', STATE: 'prepared', STARTED: '-' })
  t.match(byUuid[anon.slice(0, 8)], { UUID: anon.slice(0, 8), NAME: '-', APPS: 'main', STATE: 'exited', STARTED: '-' })
  for (const r of rows) t.match(r.CREATED, /^(just now|\d+ (second|minute)s? ago)$/, 'CREATED is relative')

  const json = Object.fromEntries(listJson(t, dir).map((p) => [p.uuid, p]))
  const full = podctl(dir, ['list', '--full'])
  t.equal(full.status, 0)
  const fullRows = parseTable(full.stdout)
  t.strictSame(fullRows.map((r) => r.UUID).sort(), [web, anon].sort(), '--full: whole UUIDs')
  for (const r of fullRows) {
    t.match(r.CREATED, TIME_RE, '--full: CREATED in RFC 3339')
    t.equal(r.CREATED, json[r.UUID!]!.created_at, 'the same time as the JSON')
    t.equal(r.STARTED, '-', 'never started (a pod reaches run/ only through the library here)')
  }

  const bare = podctl(dir, ['list', '--no-legacy', '--full'])
  t.equal(bare.stdout.split('\n').filter(Boolean).length, 2, '--no-legacy: two rows, no header')
  t.notMatch(bare.stdout, /^UUID/m)
})

t.test('--state filters', async (t) => {
  const dir = t.testdir({})
  const prepared = await preparedPod(dir)
  const exited = await exitedPod(dir)
  const marked = await exitedGarbagePod(dir)
  const states = (args: string[]): string[] => listJson(t, dir, args).map((p) => p.uuid).sort()
  t.strictSame(states(['--state', 'exited']), [exited])
  t.strictSame(states(['--state', 'prepared', '--state', 'exited']), [prepared, exited].sort(), 'repeatable')
  t.strictSame(states(['--state', 'exited garbage']), [marked])
  t.strictSame(states(['--state', 'exited-garbage']), [marked], 'a hyphen for the space')
  t.strictSame(states(['--state', 'running']), [], 'no running pod')

  const table = parseTable(podctl(dir, ['list', '--state', 'prepared']).stdout)
  t.strictSame(table.map((r) => r.UUID), [prepared.slice(0, 8)], 'the table is filtered too')

  for (const bad of ['runing', '', 'all']) {
    const before = listTree(dir)
    const r = podctl(dir, ['list', '--state', bad])
    t.equal(r.status, 2, `--state ${JSON.stringify(bad)}: exit 2`)
    t.equal(r.stdout, '')
    t.match(r.stderr, /^podctl: .*state/)
    t.notMatch(r.stderr, /^\s+at /m)
    t.strictSame(listTree(dir), before)
  }
})

t.test('JSON objects have exactly the keys and types of CONTRACT §5', async (t) => {
  const dir = t.testdir({})
  await preparedPod(
    dir,
    manifest({
      name: 'shape',
      labels: { team: 'infra' },
      annotations: { note: 'x' },
      apps: [
        { name: 'init', type: 'init', exec: ['true'] },
        { name: 'main', exec: ['true'] },
      ],
    }),
  )
  await exitedPod(dir)
  t.equal(podctl(dir, ['gc', '--mark-only']).status, 0, 'gc marks the exited pod')
  await exitedPod(dir)
  const pods = listJson(t, dir)
  t.strictSame(pods.map((p) => p.state).sort(), ['exited', 'exited garbage', 'prepared'])
  for (const p of pods) t.strictSame(podShapeProblems(p), [], `${p.state}: no shape problems`)
  const shaped = pods.find((p) => p.name === 'shape') as unknown as Record<string, unknown>
  t.match(shaped, {
    state: 'prepared',
    created_at: TIME_RE,
    started_at: null,
    gc_marked_at: null,
    pid: null,
    mutable: false,
    exit_code: null,
    labels: { team: 'infra' },
    annotations: { note: 'x' },
  })
  t.strictSame(
    (shaped.apps as Record<string, unknown>[]).map((a) => [a.name, a.type, a.state, a.pid, a.exit_code]),
    [
      ['init', 'init', 'created', null, null],
      ['main', 'regular', 'created', null, null],
    ],
  )
  const marked = pods.find((p) => p.state === 'exited garbage') as unknown as Record<string, unknown>
  t.match(marked.gc_marked_at, TIME_RE, 'a marked pod has gc_marked_at')

  // json-pretty is the same document, indented.
  const pretty = podctl(dir, ['list', '--format', 'json-pretty'])
  t.equal(pretty.status, 0)
  t.strictSame(JSON.parse(pretty.stdout), pods)
  t.match(pretty.stdout, /^\[\n {2}\{\n {4}"uuid"/)
})

t.test('NETWORKS and "networks": where the runtime attached each running pod (CONTRACT §14); nothing for a pod that is not running', async (t) => {
  const dir = t.testdir({})
  const one = await preparedPod(dir, manifest({ name: 'one' }))
  const two = await preparedPod(dir, manifest({ name: 'two' }))
  const none = await preparedPod(dir, manifest({ name: 'none' }))
  const old = await preparedPod(dir, manifest({ name: 'old' }))
  await holdRunning(t, dir, one, two, old)
  // A supervisor SIGKILLed leaves its attachments in the record; its addresses are freed by the next gc.
  const killed = await exitedPod(dir, manifest({ name: 'killed' }))
  const atts: Record<string, NetworkAttachment[]> = {
    [one]: [{ name: 'bridge', ip: '10.90.0.5', ip6: null, iface: 'eth0', mac: '0a:58:0a:5a:00:05' }],
    [two]: [
      { name: 'bridge', ip: '10.90.0.6', ip6: 'fd90::6', iface: 'eth0', mac: '0a:58:0a:5a:00:06' },
      { name: 'front', ip: null, ip6: 'fd91::7', iface: 'eth1', mac: null },
    ],
  }
  for (const [uuid, networks] of Object.entries(atts)) attachInRecord(dir, uuid, networks)
  attachInRecord(dir, killed, [{ name: 'bridge', ip: '10.90.0.8', ip6: null, iface: 'eth0', mac: null }])
  // A record written before pods had networks has no such field.
  const oldFile = path.join(podFromUUIDString(dir, old).path, 'pod.json')
  fs.writeFileSync(oldFile, fs.readFileSync(oldFile, 'utf8').replace('"networks":null,', ''))
  t.notMatch(fs.readFileSync(oldFile, 'utf8'), /networks/)

  const table = podctl(dir, ['list'])
  t.equal(table.status, 0, table.stderr)
  t.match(table.stdout, /^UUID +NAME +APPS +STATE +CREATED +STARTED +NETWORKS\n/, 'the last column, as rkt\'s')
  const rows = Object.fromEntries(parseTable(table.stdout).map((r) => [r.NAME, r.NETWORKS]))
  t.strictSame(rows, { one: 'bridge:ip4=10.90.0.5', two: 'bridge:ip4=10.90.0.6,ip6=fd90::6, front:ip6=fd91::7', none: '-', old: '-', killed: '-' }, "rkt's name:ip4=ADDRESS, several joined by commas, - when none")
  // The fast JSON (records copied), and the parsed one (--sort name): the same networks.
  for (const args of [[], ['--sort', 'name'], ['--filter', 'name=one,name=two,name=none,name=old,name=killed']]) {
    const pods = listJson(t, dir, args) as unknown as (PodJson & { networks: unknown })[]
    t.strictSame(Object.fromEntries(pods.map((p) => [p.uuid, p.networks])), { [one]: atts[one], [two]: atts[two], [none]: null, [old]: null, [killed]: null }, `list --format json ${args.join(' ')}: each pod's networks, null when it has none`)
    for (const p of pods) t.strictSame(podShapeProblems(p), [], `${p.name}: the JSON's shape`)
  }
})

t.test('an unknown --format is a usage error', async (t) => {
  const dir = t.testdir({})
  const r = podctl(dir, ['list', '--format', 'yaml'])
  t.equal(r.status, 2)
  t.equal(r.stdout, '')
  t.match(r.stderr, /^podctl: .*yaml/)
})

t.test('a reader that stops early (list | head) gets no error', async (t) => {
  const dir = t.testdir({})
  for (let i = 0; i < 200; i++) await preparedPod(dir, manifest(), false)
  // The shell runs podctl with its stdout on a pipe that head closes after
  // one line; podctl's exit status comes back through PIPESTATUS.
  const script = `env -u NODE_OPTIONS "$0" "$1" --dir "$2" list --format "$3" 2>"$4" | head -c 10 >/dev/null; echo "\${PIPESTATUS[0]}"`
  for (const format of ['table', 'json']) {
    const errFile = path.join(dir, `stderr-${format}`)
    const r = spawnSync('bash', ['-c', script, process.execPath, BIN, dir, format, errFile], { encoding: 'utf8' })
    t.equal(r.stdout.trim(), '0', `${format}: podctl exits 0`)
    t.equal(fs.readFileSync(errFile, 'utf8'), '', `${format}: and prints nothing on stderr`)
  }
})

t.test("with PODCTL_CLUSTER set and etcd away, list says how to see this node's own pods, and --no-cluster shows them", async (t) => {
  const dir = t.testdir({})
  const uuid = await preparedPod(dir)
  // A port nothing listens on: etcd is away.
  const env = { ...process.env, PODCTL_CLUSTER: 'http://127.0.0.1:9', NODE_OPTIONS: '' }
  const away = podctl(dir, ['list'], { env })
  t.equal(away.status, 1, 'the fleet cannot be listed: exit 1')
  t.match(away.stderr, /did not answer/)
  t.match(away.stderr, /this node's own pods: podctl list --no-cluster \(or unset PODCTL_CLUSTER\)/, 'and the way to the local pods is named')
  const local = podctl(dir, ['list', '--no-cluster', '--format', 'json'], { env })
  t.equal(local.status, 0, local.stderr)
  t.same(JSON.parse(local.stdout).map((p: { uuid: string }) => p.uuid), [uuid], "--no-cluster lists this node's pods")
})
