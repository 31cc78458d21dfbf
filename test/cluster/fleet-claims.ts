// Classes, claims and volumes in the fleet's etcd (CONTRACT §11), on a real
// 3-member etcd with three "nodes" (data dirs with their own --node name):
// what one node makes the others see; 8 concurrent runs on 3 nodes of pods
// that mount one new claim make one provision call. Controllers killed
// and etcd members lost are test/crash/fleet-crash.ts (npm run test:stress).
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { STACK_RE } from '../helpers/common.js'
import { podctl, podctlAsync } from '../helpers/cli-util.js'
import { etcdMissing, startEtcd, type EtcdCluster } from '../helpers/etcd.js'
import { NODES, sharedProvisioner, type Claim } from '../helpers/fleet-util.js'
import { dataDir } from '../helpers/run-util.js'

t.test('classes and claims are the fleet\'s: made on one node, seen and used from the others', { skip: etcdMissing }, async (t) => {
  const etcd: EtcdCluster = await startEtcd(t)
  const dirs = NODES.map(() => dataDir(t))
  const fleet = (i: number, args: string[]) => podctl(dirs[i]!, ['--cluster', etcd.endpoints, '--node', NODES[i]!, ...args])
  const prov = sharedProvisioner(dataDir(t))

  t.equal(fleet(0, ['volume', 'class', 'create', 'shared', '--provisioner', 'exec:shared', '--default']).status, 0)
  t.match(fleet(1, ['volume', 'class', 'list']).stdout, /^shared \(default\)\s+exec:/m, 'n1 sees the class n0 made')
  t.equal(fleet(1, ['volume', 'claim', 'create', 'data', '--size', '1M']).status, 0)
  const seen = JSON.parse(fleet(2, ['volume', 'claim', 'inspect', 'data', '--format', 'json']).stdout) as Claim & { class: string }
  t.match(seen, { name: 'data', phase: 'pending', class: 'shared' }, "n2 sees n1's claim, with the default class")
  t.same(JSON.parse(podctl(dirs[2]!, ['volume', 'claim', 'list', '--format', 'json']).stdout), [], 'and without --cluster, the data dir has none')
  const again = fleet(2, ['volume', 'class', 'create', 'shared', '--provisioner', 'local', '--param', 'node=n2'])
  t.equal(again.status, 4, 'a class of the same name from another node: exit 4')
  t.match(again.stderr, /volume class shared already exists in the fleet/)
  const dflt = fleet(2, ['volume', 'class', 'create', 'other', '--provisioner', 'exec:shared', '--default'])
  t.equal(dflt.status, 4, 'a second default: exit 4')
  t.match(dflt.stderr, /volume class shared is already the fleet's default/)
  const used = fleet(0, ['volume', 'class', 'rm', 'shared'])
  t.equal(used.status, 4, 'a class used by a claim of another node: exit 4')
  t.match(used.stderr, /used by claim data/)

  // The local provisioner: pinned to a node, or refused.
  const unpinned = fleet(0, ['volume', 'class', 'create', 'loc', '--provisioner', 'local'])
  t.equal(unpinned.status, 2, 'local without --param node: exit 2')
  t.match(unpinned.stderr, /a local class of a fleet needs --param node=NAME/)
  t.notMatch(unpinned.stderr, STACK_RE)
  t.equal(fleet(0, ['volume', 'class', 'create', 'loc', '--provisioner', 'local', '--param', 'node=n1']).status, 0)
  const m = (claim: string, cls: string) =>
    JSON.stringify({
      apiVersion: 'podctl/v1',
      apps: [{ name: 'a', exec: ['/bin/sh', '-c', 'echo here > "$PODCTL_APP_ROOT/v/f" && cat "$PODCTL_APP_ROOT/v/f"'], mounts: [{ volume: 'v', path: '/v' }] }],
      volumes: [{ name: 'v', kind: 'persistent', claim, class: cls }],
    })
  const manifests = dataDir(t)
  fs.writeFileSync(path.join(manifests, 'local.json'), m('pinned', 'loc'))
  const elsewhere = fleet(0, ['run', '--manifest', path.join(manifests, 'local.json')])
  t.equal(elsewhere.status, 4, 'a pod on n0 of a local volume of n1: exit 4')
  t.match(elsewhere.stderr, /a local volume of node n1; this is node n0/)
  const there = fleet(1, ['run', '--manifest', path.join(manifests, 'local.json')])
  t.equal(there.status, 0, there.stderr)
  t.equal(there.stdout, 'here\n', 'on n1 the pod writes into it')
  const vol = (JSON.parse(fleet(2, ['volume', 'claim', 'inspect', 'pinned', '--format', 'json']).stdout) as Claim).volume!
  t.ok(fs.existsSync(path.join(dirs[1]!, 'volumes', vol, 'data', 'f')), "the data is in n1's data dir")
  t.equal(prov.calls().length, 0, 'the exec provisioner was not asked for it')
})

t.test('8 concurrent runs on 3 nodes of pods mounting one new claim: one provision call', { skip: etcdMissing }, async (t) => {
  const etcd: EtcdCluster = await startEtcd(t)
  const dirs = NODES.map(() => dataDir(t))
  const prov = sharedProvisioner(dataDir(t))
  const manifestFile = path.join(dataDir(t), 'm.json')
  fs.writeFileSync(
    manifestFile,
    JSON.stringify({
      apiVersion: 'podctl/v1',
      apps: [{ name: 'a', exec: ['/bin/sh', '-c', 'readlink "$PODCTL_APP_ROOT/data"'], mounts: [{ volume: 'd', path: '/data' }] }],
      volumes: [{ name: 'd', kind: 'persistent', claim: 'fresh', class: 'shared', accessMode: 'ReadWriteMany' }],
    }),
  )
  t.equal(podctl(dirs[0]!, ['--cluster', etcd.endpoints, 'volume', 'class', 'create', 'shared', '--provisioner', 'exec:shared']).status, 0)
  for (let round = 0; round < 3; round++) {
    const claim = `fresh-${round}`
    const text = fs.readFileSync(manifestFile, 'utf8').replace(/"fresh(-\d+)?"/, `"${claim}"`)
    fs.writeFileSync(manifestFile, text)
    const before = prov.calls().length
    const runs = await Promise.all(Array.from({ length: 8 }, (_, i) => podctlAsync(t, dirs[i % 3]!, ['--cluster', etcd.endpoints, '--node', NODES[i % 3]!, 'run', '--manifest', manifestFile, '--provisioners-dir', prov.dir])))
    for (const r of runs) t.equal(r.status, 0, r.stderr)
    const paths = new Set(runs.map((r) => r.stdout.trim()))
    t.equal(paths.size, 1, `round ${round}: all 8 pods mounted the same volume (${[...paths].join(', ')})`)
    const calls = prov.calls().slice(before)
    t.equal(calls.length, 1, `round ${round}: exactly one provision call (${calls.join('; ')})`)
  }
})
