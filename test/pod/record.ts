// The pod record, pod.json (lib/pod/record.ts): written by atomic
// replace, read leniently.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { RECORD_FILE, emptyRecord, initialRecord, isoTime, parseRecord, readRecord, recordText, writeRecord } from '../../lib/pod/record.js'
import type { PodManifest } from '../../lib/pod/manifest.js'

const UUID = '8c3b1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'

t.test('isoTime is RFC 3339 UTC with milliseconds', async (t) => {
  t.equal(isoTime(0), '1970-01-01T00:00:00.000Z')
  t.equal(isoTime(new Date('2026-11-22T04:00:01.5Z')), '2026-11-22T04:00:01.500Z')
  t.match(isoTime(), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
})

t.test('initialRecord', async (t) => {
  const m: PodManifest = {
    apiVersion: 'podctl/v1',
    name: 'web',
    mutable: true,
    labels: { a: 'b' },
    apps: [
      { name: 'i', type: 'init', exec: ['x'] },
      { name: 'r', exec: ['x'] },
    ],
  }
  const r = initialRecord(UUID, m, new Date(0))
  t.strictSame(r, {
    uuid: UUID,
    name: 'web',
    created_at: '1970-01-01T00:00:00.000Z',
    started_at: null,
    gc_marked_at: null,
    pid: null,
    mutable: true,
    isolation: 'host',
    network: 'host',
    networks: null,
    runtime: null,
    exit_code: null,
    labels: { a: 'b' },
    annotations: {},
    apps: [
      { name: 'i', type: 'init', state: 'created', pid: null, started_at: null, finished_at: null, exit_code: null },
      { name: 'r', type: 'regular', state: 'created', pid: null, started_at: null, finished_at: null, exit_code: null },
    ],
  })
  t.not(r.labels, m.labels, 'labels are copied, not shared')
  t.equal(initialRecord(UUID, { apiVersion: 'podctl/v1', apps: [] }, new Date()).name, null)
  t.equal(emptyRecord(UUID).uuid, UUID)
  t.strictSame(emptyRecord(UUID).apps, [])
})

t.test('writeRecord and readRecord', async (t) => {
  const dir = t.testdir({})
  t.equal(readRecord(dir), undefined, 'no pod.json')
  t.equal(readRecord(path.join(dir, 'missing')), undefined, 'no pod dir')
  const r = emptyRecord(UUID)
  writeRecord(dir, r)
  t.strictSame(readRecord(dir), r)
  t.equal(fs.statSync(path.join(dir, RECORD_FILE)).mode & 0o777, 0o640, '0640')
  t.strictSame(fs.readdirSync(dir), [RECORD_FILE], 'no temporary left')
  for (const bad of ['{', 'null', '[]', '"x"', '{"apps": {}}']) {
    fs.writeFileSync(path.join(dir, RECORD_FILE), bad)
    t.equal(readRecord(dir), undefined, `damaged: ${bad}`)
  }
})

t.test('private fields are stored apart from the CONTRACT §5 ones and read back', async (t) => {
  const dir = t.testdir({})
  const m: PodManifest = { apiVersion: 'podctl/v1', apps: [{ name: 'a', exec: ['x'] }, { name: 'b', exec: ['x'] }] }
  const r = initialRecord(UUID, m, new Date(0))
  r.ready_at = isoTime(5)
  r.apps[0]!.pid_start = '12345'
  writeRecord(dir, r)
  const text = fs.readFileSync(path.join(dir, RECORD_FILE), 'utf8')
  const stored = JSON.parse(text) as Record<string, unknown>
  t.strictSame(Object.keys(stored), ['uuid', 'name', 'created_at', 'started_at', 'gc_marked_at', 'pid', 'mutable', 'isolation', 'network', 'networks', 'runtime', 'exit_code', 'labels', 'annotations', 'apps', 'private'])
  t.strictSame(stored.private, { ready_at: isoTime(5), app_pid_start: { a: '12345' } })
  t.notMatch(JSON.stringify(stored.apps), /pid_start/, 'apps hold only their CONTRACT §5 fields')
  t.strictSame(readRecord(dir), r, 'read back whole')
  r.ready_at = null
  r.apps[0]!.pid_start = null
  writeRecord(dir, r)
  t.ok(fs.readFileSync(path.join(dir, RECORD_FILE), 'utf8').endsWith(']}\n'), 'without private fields the record ends with its apps')
})

t.test('isolation, network and runtime are in every record: one without them is damaged', async (t) => {
  const whole = JSON.parse(recordText(emptyRecord(UUID))) as Record<string, unknown>
  t.ok('record' in parseRecord(JSON.stringify(whole), UUID), 'a record as written')
  for (const key of ['isolation', 'network', 'runtime']) {
    const { [key]: _, ...without } = whole
    t.strictSame(parseRecord(JSON.stringify(without), UUID), { damaged: `pod.json: ${key} is missing` }, `without ${key}`)
  }
})

t.test('networks: where the runtime attached the pod (CONTRACT §14); a record without the field is read as null', async (t) => {
  const dir = t.testdir({})
  const r = emptyRecord(UUID)
  writeRecord(dir, r)
  t.match(fs.readFileSync(path.join(dir, RECORD_FILE), 'utf8'), /"network":"host","networks":null,"runtime"/, 'written null, after network')
  const atts = [
    { name: 'bridge', ip: '10.90.0.5', ip6: null, iface: 'eth0', mac: '0a:58:0a:5a:00:05' },
    { name: 'front', ip: null, ip6: 'fd00::7', iface: 'eth1', mac: null },
  ]
  writeRecord(dir, { ...r, networks: atts })
  t.strictSame(readRecord(dir)!.networks, atts, 'read back')
  const whole = JSON.parse(recordText(r)) as Record<string, unknown>
  const { networks: _, ...old } = whole
  const read = parseRecord(JSON.stringify(old), UUID)
  t.ok('record' in read, 'a record written before pods had networks is whole')
  t.equal('record' in read ? read.record.networks : undefined, null, 'and has none')
  for (const [bad, why] of [
    ['front', 'not a list'],
    [[{ name: 'bridge', ip: '10.90.0.5', ip6: null, mac: null }], 'no interface'],
    [[{ name: 'bridge', ip: 5, ip6: null, iface: 'eth0', mac: null }], 'an address that is no string'],
    [[null], 'not an object'],
  ] as const) {
    t.match(parseRecord(JSON.stringify({ ...whole, networks: bad }), UUID), { damaged: /^pod\.json: networks is wrong: / }, why)
  }
})
