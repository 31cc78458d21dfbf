// The JSON shape of a pod (CONTRACT §5, lib/pod/view.ts).
import t from 'tap'
import { podView } from '../../lib/pod/view.js'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { preparePod } from '../../lib/pod/prepare.js'
import { readRecord, writeRecord } from '../../lib/pod/record.js'
import type { PodManifest } from '../../lib/pod/manifest.js'
import { dataDir, holdLocks, manifest, mkPod } from '../helpers/pod-util.js'

const KEYS = ['uuid', 'name', 'state', 'created_at', 'started_at', 'gc_marked_at', 'pid', 'mutable', 'exit_code', 'labels', 'annotations', 'apps']
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
