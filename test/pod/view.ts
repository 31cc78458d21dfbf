// The JSON shape of a pod (CONTRACT §5, lib/pod/view.ts).
import t from 'tap'
import { podView } from '../../lib/pod/view.js'
import { Pod, podFromUUIDString } from '../../lib/pod/pod.js'
import { preparePod } from '../../lib/pod/prepare.js'
import { readRecord, writeRecord } from '../../lib/pod/record.js'
import type { PodManifest } from '../../lib/pod/manifest.js'
import { manifest, mkPod, runsOf } from '../helpers/common.js'
import { dataDir } from '../helpers/run-util.js'
import { holdLocks } from '../helpers/pod-util.js'

const KEYS = ['uuid', 'name', 'state', 'created_at', 'started_at', 'gc_marked_at', 'pid', 'mutable', 'isolation', 'network', 'networks', 'runtime', 'exit_code', 'labels', 'annotations', 'apps']
const APP_KEYS = ['name', 'type', 'state', 'pid', 'started_at', 'finished_at', 'exit_code']

t.test('the fields of CONTRACT §5', async (t) => {
  const dir = dataDir(t)
  const pod = await preparePod(dir, manifest({ name: 'web', labels: { a: 'b' } }) as PodManifest, { sync: false })
  const v = podView(podFromUUIDString(dir, pod.uuid))
  t.strictSame(Object.keys(v), KEYS)
  t.strictSame(Object.keys(v.apps[0]!), APP_KEYS)
  t.match(v, {
    uuid: pod.uuid,
    name: 'web',
    state: 'prepared',
    started_at: null,
    gc_marked_at: null,
    pid: null,
    mutable: false,
    networks: null,
    exit_code: null,
    labels: { a: 'b' },
    annotations: {},
    apps: [{ name: 'main', type: 'regular', state: 'created', pid: null, exit_code: null }],
  })
  t.match(v.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  t.strictSame(JSON.parse(JSON.stringify(v)), v, 'plain JSON')
})

t.test('an app recorded as running is "unknown" unless the pod is running', async (t) => {
  const dir = dataDir(t)
  const pod = await preparePod(dir, manifest() as PodManifest, { sync: false })
  const r = readRecord(pod.path)!
  r.apps[0]!.state = 'running'
  r.apps[0]!.pid = 4250
  writeRecord(pod.path, r)
  const uuid = pod.uuid
  const { renameSync } = await import('node:fs')
  renameSync(pod.path, pod.path.replace('/prepared/', '/run/'))
  t.equal(podView(podFromUUIDString(dir, uuid)).apps[0]!.state, 'unknown', 'exited pod: the app did not get its end recorded')
  const h = await holdLocks(t, dir, [uuid])
  t.equal(podView(podFromUUIDString(dir, uuid)).state, 'running')
  t.equal(podView(podFromUUIDString(dir, uuid)).apps[0]!.state, 'running', 'running pod: running app')
  await h.release()
})

t.test('a pod without pod.json still has every field', async (t) => {
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'garbage')
  const v = podView(podFromUUIDString(dir, uuid))
  t.strictSame(Object.keys(v), KEYS)
  t.equal(v.state, 'garbage')
  t.equal(v.created_at, null)
  t.strictSame(v.apps, [])
})

// podViewJsonBytes copies stored records into list's output: whatever the
// record holds, the JSON must be the same as JSON.stringify(podView()).
t.test('podViewJsonBytes gives the JSON of podView, for any record and state', async (t) => {
  const fc = (await import('fast-check')).default
  const { podViewJsonBytes } = await import('../../lib/pod/view.js')
  const dir = dataDir(t)
  const uuid = mkPod(dir, 'run')
  const podDir = `${dir}/pods/run/${uuid}`
  const text = fc.string({ maxLength: 12 })
  const time = fc.option(fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }).map((d) => d.toISOString()))
  const num = fc.option(fc.integer({ min: 0, max: 4194304 }))
  const app = fc.record({
    name: fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,8}$/),
    type: fc.constantFrom('init', 'regular', 'ephemeral'),
    state: fc.constantFrom('created', 'running', 'exited'),
    pid: num,
    started_at: time,
    finished_at: time,
    exit_code: num,
    pid_start: fc.option(fc.stringMatching(/^[0-9]{1,10}$/)),
  })
  const record = fc.record({
    uuid: fc.constant(uuid),
    name: fc.option(fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,20}$/)),
    created_at: time,
    started_at: time,
    gc_marked_at: time,
    pid: num,
    mutable: fc.boolean(),
    isolation: fc.constantFrom('host', 'namespaces'),
    network: fc.constantFrom('host', 'none', 'bridge', 'front'),
    // Absent (a record from before pods had networks), null, or attachments.
    networks: fc.option(fc.option(fc.array(fc.record({ name: fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/), ip: fc.option(fc.ipV4()), ip6: fc.option(fc.ipV6()), iface: fc.constantFrom('eth0', 'eth1'), mac: fc.option(fc.constant('0a:58:0a:5a:00:05')) }), { maxLength: 2 })), { nil: undefined }),
    runtime: fc.option(fc.constantFrom('runc', 'crun')),
    exit_code: num,
    // Values that look like the markers the splice relies on.
    labels: fc.dictionary(fc.oneof(text, fc.constantFrom('private', 'state', 'created_at')), fc.oneof(text, fc.constantFrom('"state":"running"', ']}', '"private":{}', '"networks":null'))),
    annotations: fc.dictionary(text, text),
    apps: fc.array(app, { maxLength: 3 }),
    ready_at: fc.option(time, { nil: undefined }),
    guardian_pid: fc.option(num, { nil: undefined }),
  })
  fc.assert(
    fc.property(record, fc.boolean(), (r, locked) => {
      writeRecord(podDir, r as never)
      const pod = new Pod(dir, uuid, 'run', locked)
      const fast = JSON.parse(Buffer.concat(podViewJsonBytes(pod, pod.recordBytes())).toString('utf8'))
      const slow = podView(new Pod(dir, uuid, 'run', locked))
      return JSON.stringify(fast) === JSON.stringify(slow)
    }),
    { numRuns: runsOf(500) },
  )
  t.pass('500 random records: the same JSON, in the same order')
})

t.test("networks in the JSON: a running pod's attachments; null before, and once it is not running whatever its record says (a killed supervisor's); a record without the field is not copied", async (t) => {
  const { podViewJsonBytes } = await import('../../lib/pod/view.js')
  const dir = dataDir(t)
  const uuid = '7a1c5e0e-8f7e-4b53-9d6a-2b8f1f0c9d11'
  const podDir = `${dir}/pods/run/${uuid}`
  const { mkdirSync, readFileSync, writeFileSync } = await import('node:fs')
  mkdirSync(podDir, { recursive: true })
  const prepared = await preparePod(dir, manifest() as PodManifest, { sync: false })
  const atts = [{ name: 'bridge', ip: '10.90.0.5', ip6: null, iface: 'eth0', mac: '0a:58:0a:5a:00:05' }]
  writeRecord(podDir, { ...readRecord(prepared.path)!, uuid, networks: atts })
  t.strictSame(podView(new Pod(dir, uuid, 'run', true)).networks, atts, 'running: the attachments')
  const running = new Pod(dir, uuid, 'run', true)
  const fast = podViewJsonBytes(running, running.recordBytes())
  t.equal(fast.length, 3, 'copied')
  t.strictSame(JSON.parse(Buffer.concat(fast).toString('utf8')).networks, atts)
  t.equal(podView(new Pod(dir, uuid, 'run', false)).networks, null, 'exited (its supervisor killed): attached to nothing')
  const exited = new Pod(dir, uuid, 'run', false)
  const parsed = podViewJsonBytes(exited, exited.recordBytes())
  t.equal(parsed.length, 1, 'parsed, so that networks is null')
  t.equal(JSON.parse(Buffer.concat(parsed).toString('utf8')).networks, null)
  // As a pod prepared before pods had networks left its record.
  const file = `${podDir}/pod.json`
  writeFileSync(file, readFileSync(file, 'utf8').replace(/"networks":\[.*?\],/, ''))
  t.notMatch(readFileSync(file, 'utf8'), /networks/)
  t.equal(podView(new Pod(dir, uuid, 'run', true)).networks, null)
  const old = new Pod(dir, uuid, 'run', true)
  const bytes = podViewJsonBytes(old, old.recordBytes())
  t.equal(bytes.length, 1, 'parsed, so that networks is there')
  t.strictSame(Object.keys(JSON.parse(Buffer.concat(bytes).toString('utf8'))), KEYS)
})

t.test('a finished pod record is copied, not re-serialized', async (t) => {
  const { podViewJsonBytes } = await import('../../lib/pod/view.js')
  const dir = dataDir(t)
  const pod = await preparePod(dir, manifest() as PodManifest, { sync: false })
  const p = podFromUUIDString(dir, pod.uuid)
  t.equal(podViewJsonBytes(p, p.recordBytes()).length, 3, 'a prepared pod: stored bytes + state + stored bytes')
  const r = readRecord(pod.path)!
  writeRecord(pod.path, { ...r, ready_at: new Date().toISOString() })
  const q = podFromUUIDString(dir, pod.uuid)
  t.equal(podViewJsonBytes(q, q.recordBytes()).length, 1, 'a record with private fields is parsed instead')
})
