// Which nodes' pods use a fleet claim (lib/storage/fleet/attachments.ts),
// through the real CLI on a real etcd: two data dirs as two nodes, each
// with its cluster controller (which keeps its node alive in the fleet and
// publishes its pods, and so their attachments). A ReadWriteOnce claim
// used by a running pod of node A refuses a pod of node B (exit 4, naming
// A) until A's pod has exited and A's controller has said so; `claim rm
// --cluster` is refused (exit 4) while a pod of the other node uses the
// claim, and goes once that pod is removed; a ReadWriteMany claim is used
// on both nodes at once.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { Cluster } from '../../lib/cluster/client.js'
import { pollUntil, STACK_RE, type Test } from '../helpers/common.js'
import { podctl, podctlAsync, startPodctl } from '../helpers/cli-util.js'
import { etcdMissing, startEtcd } from '../helpers/etcd.js'
import { sharedProvisioner } from '../helpers/fleet-util.js'
import { dataDir } from '../helpers/run-util.js'

const NODES = ['na', 'nb'] as const

interface Attachment {
  nodes: Record<string, { pods: string[]; running: string[] }>
}

/** A fleet of two nodes on a one-member etcd, each running its controller; commands as either node; the attachment records as etcd holds them. */
const twoNodes = async (t: Test) => {
  const etcd = await startEtcd(t, 1)
  const dirs = NODES.map(() => dataDir(t))
  const provisioners = sharedProvisioner(dataDir(t)).dir
  const manifests = dataDir(t)
  const fleet = (i: number, args: string[]) => podctl(dirs[i]!, ['--cluster', etcd.endpoints, '--node', NODES[i]!, ...args])
  const cluster = await Cluster.open({ endpoints: etcd.endpoints.split(','), prefix: '/podctl/' })
  t.teardown(() => cluster.close())
  const controllers = NODES.map((node, i) =>
    startPodctl(t, dirs[i]!, ['--cluster', etcd.endpoints, '--node', node, 'controller', '--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '300ms', '--resync', '2s', '--provisioners-dir', provisioners]),
  )
  t.teardown(async () => {
    for (const c of controllers) c.child.kill('SIGTERM')
    await Promise.all(controllers.map((c) => c.done))
  })
  await pollUntil('both nodes registered', async () => (await cluster.list('nodes/')).size === 2, { intervalMs: 100, polls: 200 })

  t.equal(fleet(0, ['volume', 'class', 'create', 'shared', '--provisioner', 'exec:shared', '--default']).status, 0, 'a class on shared storage')
  /** Makes claim `name` in the fleet and waits until the leader has bound it. */
  const boundClaim = async (name: string, accessMode: string): Promise<void> => {
    const r = fleet(0, ['volume', 'claim', 'create', name, '--size', '1M', '--access-mode', accessMode])
    t.equal(r.status, 0, `claim ${name} (${accessMode}) made: ${r.stderr}`)
    await pollUntil(`claim ${name} bound`, () => (JSON.parse(fleet(1, ['volume', 'claim', 'inspect', name, '--format', 'json']).stdout) as { phase: string }).phase === 'bound', { intervalMs: 100, polls: 200 })
  }
  /** A manifest file whose one app runs `exec` with claim `claim` mounted at /data. */
  const manifest = (file: string, claim: string, exec: string[]): string => {
    const p = path.join(manifests, file)
    fs.writeFileSync(p, JSON.stringify({ apiVersion: 'podctl/v1', apps: [{ name: 'a', exec, mounts: [{ volume: 'd', path: '/data' }] }], volumes: [{ name: 'd', kind: 'persistent', claim }] }))
    return p
  }
  /** Starts a long pod on node i using `claim`; its UUID. */
  const longPod = (i: number, claim: string): string => {
    const r = fleet(i, ['run', '--detach', '--manifest', manifest(`long-${claim}-${i}.json`, claim, ['sleep', '300']), '--provisioners-dir', provisioners])
    t.equal(r.status, 0, `a pod on ${NODES[i]} with claim ${claim} runs: ${r.stderr}`)
    return r.stdout.trim()
  }
  const attachment = async (claim: string): Promise<Attachment | undefined> => {
    const kv = await cluster.get(`attachments/${claim}`)
    return kv === undefined ? undefined : (JSON.parse(kv.value) as Attachment)
  }
  return { endpoints: etcd.endpoints, controllers, dirs, fleet, provisioners, boundClaim, manifest, longPod, attachment }
}

t.test('ReadWriteOnce: a pod running on node A refuses node B\'s pod of the claim, naming A, until A\'s pod exits', { skip: etcdMissing ?? false }, async (t) => {
  const f = await twoNodes(t)
  await f.boundClaim('rwo', 'ReadWriteOnce')
  const onA = f.longPod(0, 'rwo')
  t.match((await f.attachment('rwo'))?.nodes.na, { running: [onA] }, "A's running pod is in the claim's attachment")

  const quick = f.manifest('quick.json', 'rwo', ['/bin/sh', '-c', 'echo from-b > "$PODCTL_APP_ROOT/data/f" && cat "$PODCTL_APP_ROOT/data/f"'])
  const refused = f.fleet(1, ['run', '--manifest', quick, '--provisioners-dir', f.provisioners])
  t.equal(refused.status, 4, "B's pod of the claim: exit 4")
  t.match(refused.stderr, /volume claim rwo is ReadWriteOnce and in use on node na by running pod/, 'naming node A')
  t.match(refused.stderr, onA, "and A's pod")
  t.notMatch(refused.stderr, STACK_RE, 'no stack trace')
  t.notOk((await f.attachment('rwo'))?.nodes.nb?.running.length, 'B is not recorded as running a pod of it')
  t.same(JSON.parse(podctl(f.dirs[1]!, ['list', '--format', 'json']).stdout), [], 'the refused run left no pod on B')

  // A's pod exits; A's controller publishes, and its entry runs nothing any more.
  t.equal(podctl(f.dirs[0]!, ['stop', onA]).status, 0, "A's pod stopped")
  await pollUntil("A's controller to say its pod no longer runs", async () => (await f.attachment('rwo'))?.nodes.na?.running.length === 0, { intervalMs: 100, polls: 200 })
  t.pass("A's entry lists no running pod")
  const ran = f.fleet(1, ['run', '--manifest', quick, '--provisioners-dir', f.provisioners])
  t.equal(ran.status, 0, `now B's pod runs: ${ran.stderr}`)
  t.equal(ran.stdout, 'from-b\n', 'and writes into the claim')

  // B's pod has exited too (a foreground run): A may start one again.
  await pollUntil("B's controller to say its pod no longer runs", async () => (await f.attachment('rwo'))?.nodes.nb?.running.length === 0, { intervalMs: 100, polls: 200 })
  const again = f.longPod(0, 'rwo')
  t.ok(again, 'and then A runs a pod of it again')
  t.equal(podctl(f.dirs[0]!, ['stop', again]).status, 0)
})

t.test('claim rm --cluster: refused while a pod of the other node uses the claim, done once that pod is removed', { skip: etcdMissing ?? false }, async (t) => {
  const f = await twoNodes(t)
  await f.boundClaim('gone', 'ReadWriteOnce')
  const onA = f.longPod(0, 'gone')

  // --cluster after the command, as a user types `volume claim rm --cluster NAME`.
  const fromB = podctl(f.dirs[1]!, ['--node', 'nb', 'volume', 'claim', 'rm', '--cluster', f.endpoints, 'gone'])
  t.equal(fromB.status, 4, 'claim rm from node B while A\'s pod runs: exit 4')
  t.match(fromB.stderr, /volume claim gone is used by pod \S+ \(node na\)/, "naming A's pod and node")
  t.match(fromB.stderr, onA)
  t.notMatch(fromB.stderr, STACK_RE)
  const fromA = f.fleet(0, ['volume', 'claim', 'rm', 'gone'])
  t.equal(fromA.status, 4, "claim rm from node A itself: exit 4 (its own pod)")
  t.match(fromA.stderr, /volume claim gone is used by pod/)

  // Stopped is not enough: an exited pod that is not removed still uses the claim.
  t.equal(podctl(f.dirs[0]!, ['stop', onA]).status, 0, "A's pod stopped")
  await pollUntil("A's controller to say its pod no longer runs", async () => (await f.attachment('gone'))?.nodes.na?.running.length === 0, { intervalMs: 100, polls: 200 })
  const stopped = f.fleet(1, ['volume', 'claim', 'rm', 'gone'])
  t.equal(stopped.status, 4, 'with the pod stopped but not removed: still exit 4')
  t.match(stopped.stderr, /\(node na\)/)

  t.equal(podctl(f.dirs[0]!, ['rm', onA]).status, 0, "A's pod removed")
  await pollUntil("A's controller to forget its pod", async () => (await f.attachment('gone'))?.nodes.na === undefined, { intervalMs: 100, polls: 200 })
  t.pass("A's entry is gone")
  const rm = f.fleet(1, ['volume', 'claim', 'rm', 'gone'])
  t.equal(rm.status, 0, `now claim rm from B succeeds: ${rm.stderr}`)
  t.equal(rm.stdout, 'gone\n')
  t.equal(f.fleet(0, ['volume', 'claim', 'inspect', 'gone']).status, 3, 'the claim is gone from the fleet')
  t.equal(await f.attachment('gone'), undefined, 'and so is its attachment')
})

t.test('ReadWriteMany: a claim used by running pods on both nodes at once', { skip: etcdMissing ?? false }, async (t) => {
  const f = await twoNodes(t)
  await f.boundClaim('many', 'ReadWriteMany')
  const onA = f.longPod(0, 'many')
  const onB = f.longPod(1, 'many')
  const a = await f.attachment('many')
  t.match(a?.nodes.na, { running: [onA] }, 'A runs a pod of it')
  t.match(a?.nodes.nb, { running: [onB] }, 'and so does B, at the same time')
  const both = f.manifest('both.json', 'many', ['/bin/sh', '-c', 'readlink "$PODCTL_APP_ROOT/data"'])
  const paths = [0, 1].map((i) => f.fleet(i, ['run', '--manifest', both, '--provisioners-dir', f.provisioners]))
  for (const r of paths) t.equal(r.status, 0, r.stderr)
  t.equal(paths[0]!.stdout, paths[1]!.stdout, `a third and fourth pod, one a node, mount the same volume: ${paths[0]!.stdout.trim()}`)
  for (const [i, u] of [onA, onB].entries()) t.equal(podctl(f.dirs[i]!, ['stop', u]).status, 0)
})

t.test("a lost node's running pod holds nothing: after its controller's lease, B runs; claim rm waits for node rm", { skip: etcdMissing ?? false }, async (t) => {
  const f = await twoNodes(t)
  await f.boundClaim('orphan', 'ReadWriteOnce')
  const onA = f.longPod(0, 'orphan')
  const quick = f.manifest('quick.json', 'orphan', ['true'])
  t.equal(f.fleet(1, ['run', '--manifest', quick, '--provisioners-dir', f.provisioners]).status, 4, 'while A is alive: exit 4')

  // A's controller SIGKILLed: its node key goes with its lease; its pod, still running, holds the claim no longer.
  f.controllers[0]!.child.kill('SIGKILL')
  await f.controllers[0]!.done
  await pollUntil('node na lost', () => (JSON.parse(f.fleet(1, ['node', 'list', '--format', 'json']).stdout) as { name: string; lost: boolean }[]).find((n) => n.name === 'na')?.lost === true, { intervalMs: 100, polls: 200 })
  const ran = f.fleet(1, ['run', '--manifest', quick, '--provisioners-dir', f.provisioners])
  t.equal(ran.status, 0, `A lost: B's pod runs: ${ran.stderr}`)

  // A's entry still lists its pod: the claim cannot go until the fleet forgets the node.
  const rm = f.fleet(1, ['volume', 'claim', 'rm', 'orphan'])
  t.equal(rm.status, 4, "claim rm while the lost node's entry lists a pod: exit 4")
  t.match(rm.stderr, new RegExp(`${onA} \\(node na\\)`))
  const forget = f.fleet(1, ['node', 'rm', 'na'])
  t.equal(forget.status, 0, `node rm na: ${forget.stderr}`)
  t.equal((await f.attachment('orphan'))?.nodes.na, undefined, "node rm forgot A's entry")
  // B's own (exited, not removed) pod still uses it; removed, the claim goes.
  for (const p of JSON.parse(podctl(f.dirs[1]!, ['list', '--format', 'json']).stdout) as { uuid: string }[]) t.equal(podctl(f.dirs[1]!, ['rm', p.uuid]).status, 0)
  const gone = f.fleet(1, ['volume', 'claim', 'rm', 'orphan'])
  t.equal(gone.status, 0, `then claim rm succeeds: ${gone.stderr}`)
  t.equal(podctl(f.dirs[0]!, ['stop', onA]).status, 0)
})

t.test('ReadWriteOnce: pods of one claim started on both nodes at once, three times: one runs, the other is refused', { skip: etcdMissing ?? false }, async (t) => {
  const f = await twoNodes(t)
  for (let round = 0; round < 3; round++) {
    const claim = `race-${round}`
    await f.boundClaim(claim, 'ReadWriteOnce')
    const file = f.manifest(`race-${round}.json`, claim, ['sleep', '300'])
    const runs = await Promise.all([0, 1].map((i) => podctlAsync(t, f.dirs[i]!, ['--cluster', f.endpoints, '--node', NODES[i]!, 'run', '--detach', '--manifest', file, '--provisioners-dir', f.provisioners])))
    t.same(runs.map((r) => r.status).sort(), [0, 4], `${claim}: one run exits 0, the other 4 (${runs.map((r) => r.stderr.trim()).join(' | ')})`)
    const won = runs.findIndex((r) => r.status === 0)
    // The loser's controller may have published its pod as running while it was being refused (a pod
    // that holds its lock and names the claim is, to the publisher, one that runs with it): conservative,
    // never a second runner, and gone at its next publish once the refused pod is removed.
    const runningOn = async () => Object.entries((await f.attachment(claim))?.nodes ?? {}).filter(([, e]) => e.running.length > 0).map(([n]) => n)
    const settled = await pollUntil(`${claim}: the attachment to settle`, async () => {
      const nodes = await runningOn()
      return nodes.length === 1 ? nodes : undefined
    })
    t.same(settled, [NODES[won]], `${claim}: only the winner's node is recorded running it`)
    if (won >= 0) t.equal(podctl(f.dirs[won]!, ['stop', runs[won]!.stdout.trim()]).status, 0)
  }
})
