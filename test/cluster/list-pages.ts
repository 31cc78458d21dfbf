// list --cluster reads the fleet in pages (lib/cluster/client.ts): 4,500
// pods' summaries (more than two pages, and over gRPC's 4 MiB for one
// message had they been larger) come back whole, once each, in order of
// creation, from one revision.
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { podctl } from '../helpers/cli-util.js'
import { etcdMissing, startEtcd } from '../helpers/etcd.js'
import { dataDir } from '../helpers/run-util.js'

t.test('list --cluster of 4,500 pods on 3 nodes', { skip: etcdMissing }, async (t) => {
  const etcd = await startEtcd(t, 1)
  const { Etcd3 } = await import('etcd3')
  const client = new Etcd3({ hosts: etcd.endpoints })
  t.teardown(() => client.close())
  const uuids: string[] = []
  for (let n = 0; n < 3; n++) {
    const lease = client.lease(600, { autoKeepAlive: false })
    await lease.grant()
    await lease.put(`/podctl/nodes/n${n}`).value(JSON.stringify({ name: `n${n}`, version: 'test', registered_at: new Date().toISOString() }))
    for (let i = 0; i < 1500; i += 250) {
      await Promise.all(
        Array.from({ length: 250 }, (_, k) => {
          const uuid = randomUUID()
          uuids.push(uuid)
          // A padding annotation makes each summary about 1 KB: 4.5 MB in all, over gRPC's 4 MiB in one message.
          const v = { uuid, name: `p${i + k}`, state: 'exited', created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, uuids.length)).toISOString(), started_at: null, gc_marked_at: null, pid: null, mutable: false, exit_code: 0, labels: {}, annotations: { pad: 'x'.repeat(600) }, apps: [], node: `n${n}` }
          return client.put(`/podctl/pods/n${n}/${uuid}`).value(JSON.stringify(v))
        }),
      )
    }
  }
  const r = podctl(dataDir(t), ['--cluster', etcd.endpoints, 'list', '--format', 'json'])
  t.equal(r.status, 0, r.stderr)
  const pods = JSON.parse(r.stdout) as { uuid: string; node: string; node_lost: boolean }[]
  t.equal(pods.length, 4500, 'every pod')
  t.equal(new Set(pods.map((p) => p.uuid)).size, 4500, 'each once')
  t.strictSame(pods.map((p) => p.uuid), uuids, 'in order of creation')
  t.ok(pods.every((p) => !p.node_lost), 'their nodes are alive')
  const q = podctl(dataDir(t), ['--cluster', etcd.endpoints, 'list', '-q', '--filter', 'name=p7'])
  t.equal(q.stdout.split('\n').filter(Boolean).length, 3, '--filter works on the fleet: p7 on each node')
})
