// The fleet publisher keeps its node registered through etcd3 giving its
// lease up at the worst moment: between the grant and the node key's write,
// which is when etcd electing a leader makes renewals fail. The lease is
// given up in the client as etcd3 does it (closed, then 'lost'), on a real
// etcd, whose server then lets the lease run out as it would.
import t from 'tap'
import { setTimeout as delay } from 'node:timers/promises'
import { Cluster, type Write } from '../../lib/cluster/client.js'
import { FleetPublisher } from '../../lib/controller/fleet.js'
import { pollUntil } from '../helpers/common.js'
import { etcdMissing, startEtcd } from '../helpers/etcd.js'
import { dataDir } from '../helpers/run-util.js'

const TTL_S = 1
const NODE = 'n-lost'

t.test('a lease lost while the node key is written: registered again, not left to run out', { skip: etcdMissing }, async (t) => {
  const etcd = await startEtcd(t, 1)
  const cluster = await Cluster.open({ endpoints: [etcd.endpoints], prefix: '/podctl/' })
  t.teardown(() => cluster.close())
  const nodeKey = `nodes/${NODE}`
  let leasesGivenUp = 0
  // The cluster as the publisher sees it, except that the first registration's lease is given up just as its key is written.
  const losing = new Proxy(cluster, {
    get(target, name) {
      if (name === 'commit') {
        return async (guards: Parameters<Cluster['commit']>[0], writes: Write[]) => {
          const lease = writes.find((w): w is Extract<Write, { put: string }> => 'put' in w && w.put === nodeKey)?.lease
          if (lease !== undefined && leasesGivenUp === 0) {
            leasesGivenUp++
            // etcd3's own giving up (its private emitLoss): renewals stop, then 'lost'.
            ;(lease.etcd as unknown as { close(): void }).close()
            lease.etcd.emit('lost', new Error('We lost connection to etcd and our lease has expired.'))
          }
          return target.commit(guards, writes)
        }
      }
      const v: unknown = Reflect.get(target, name, target)
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v
    },
  })
  const logged: string[] = []
  const publisher = new FleetPublisher(dataDir(t), losing, { node: NODE, holder: 'test', version: 'test', ttlS: TTL_S, resyncMs: 300, log: (m) => logged.push(m) })
  t.teardown(() => publisher.stop())
  await publisher.start()
  t.equal(leasesGivenUp, 1, "the first registration's lease was given up as its key was written")
  t.match(logged.join('\n'), /new lease ran out while the node was being registered/, 'the publisher saw it')

  // The first key's lease runs out on the server a TTL later; the node must be registered under a live one by then, and stay so.
  await pollUntil('the node registered under a lease that is kept', () => logged.some((m) => /registered \(lease/.test(m)), { intervalMs: 100, polls: 100 })
  for (let i = 0; i < 4; i++) {
    await delay(TTL_S * 1000)
    t.ok(await cluster.get(nodeKey), `${i + 1} TTL(s) on, the node key is there`)
  }
})
