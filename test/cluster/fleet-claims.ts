// Classes, claims and volumes in the fleet's etcd (CONTRACT §11), on a real
// 3-member etcd with three "nodes" (data dirs with their own --node name):
// what one node makes the others see; 8 concurrent runs on 3 nodes of pods
// that mount one new claim make one provision call; 3 controllers elect
// one leader, bind 50 claims once each, and hand the lead over after
// SIGKILL and SIGTERM, with no claim ever having two volumes and no volume
// without its claim (checked continuously); with two of three members
// killed nothing is provisioned and fleet commands exit 1, and once they
// are back every pending claim is bound once.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { Cluster } from '../../lib/cluster/client.js'
import { pollUntil, STACK_RE, type Test } from '../helpers/common.js'
import { podctl, podctlAsync, startPodctl, type Running } from '../helpers/cli-util.js'
import { etcdMissing, startEtcd, type EtcdCluster } from '../helpers/etcd.js'
import { dataDir } from '../helpers/run-util.js'

const NODES = ['n0', 'n1', 'n2']
const LEASE_MS = 2_000
const RETRY_MS = 300

interface Claim {
  name: string
  phase: string
  volume: string | null
  uid?: string
}

/**
 * An exec provisioner that logs every call (one line each) and makes its
 * volume's directory on "shared storage"; `dir` is every node's
 * provisioners directory (--provisioners-dir), where it is "shared".
 */
const provisioner = (dir: string): { program: string; dir: string; calls: () => string[] } => {
  const log = path.join(dir, 'calls.log')
  const shared = path.join(dir, 'shared')
  fs.mkdirSync(shared)
  const program = path.join(dir, 'provisioner.sh')
  fs.writeFileSync(
    program,
    `#!/bin/sh
input=$(cat)
name=$(printf '%s' "$input" | sed -n 's/.*"\\(volume_\\)\\{0,1\\}name":"\\(pvc-[^"]*\\)".*/\\2/p')
# No request: the podctl that started it was killed before it wrote one (as the crash test's provisioner says).
[ -n "$name" ] || { echo "no volume name in the request" >&2; exit 1; }
echo "$1 $name" >> ${log}
if [ "$1" = provision ]; then
  sleep 0.2
  mkdir -p ${shared}/$name
  printf '{"path":"${shared}/%s","capacity_bytes":1048576}\\n' "$name"
else
  rm -rf ${shared}/$name
  echo '{}'
fi
`,
    { mode: 0o755 },
  )
  const provisioners = path.join(dir, 'provisioners')
  fs.mkdirSync(provisioners, { mode: 0o755 })
  fs.symlinkSync(program, path.join(provisioners, 'shared'))
  return { program, dir: provisioners, calls: () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : []) }
}

/**
 * Watches etcd's claims and volumes every 50 ms while the test runs:
 * no claim is ever bound to two volumes (nor two volumes name one claim),
 * and no volume names a claim that is not there (unless released).
 */
const invariantChecker = async (t: Test, endpoints: string) => {
  const cluster = await Cluster.open({ endpoints: endpoints.split(','), prefix: '/podctl/' })
  const problems: string[] = []
  let checks = 0
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      try {
        const claims = [...(await cluster.list('claims/')).values()].map((v) => JSON.parse(v) as Claim & { uid: string })
        const volumes = [...(await cluster.list('volumes/')).values()].map((v) => JSON.parse(v) as { name: string; phase: string; claim_ref: { uid: string; name: string } })
        const byUid = new Map<string, string[]>()
        for (const v of volumes) byUid.set(v.claim_ref.uid, [...(byUid.get(v.claim_ref.uid) ?? []), v.name])
        for (const [uid, vs] of byUid) if (vs.length > 1) problems.push(`claim uid ${uid} has volumes ${vs.join(', ')}`)
        // Read claims first, volumes after: a volume whose claim appeared in between is fine; one without a claim is an orphan.
        const uids = new Set(claims.map((c) => c.uid))
        const claimsAfter = new Set([...(await cluster.list('claims/')).values()].map((v) => (JSON.parse(v) as { uid: string }).uid))
        for (const v of volumes) if (v.phase !== 'released' && !uids.has(v.claim_ref.uid) && !claimsAfter.has(v.claim_ref.uid)) problems.push(`volume ${v.name} names no claim`)
        checks++
      } catch {
        // etcd without quorum: nothing to check until it is back
      }
      await new Promise((r) => setTimeout(r, 50))
    }
  })()
  t.teardown(() => {
    stopped = true
    cluster.close()
  })
  return {
    stop: async () => {
      stopped = true
      await loop
      return { problems: [...new Set(problems)], checks }
    },
  }
}

t.test('classes and claims are the fleet\'s: made on one node, seen and used from the others', { skip: etcdMissing }, async (t) => {
  const etcd: EtcdCluster = await startEtcd(t)
  const dirs = NODES.map(() => dataDir(t))
  const fleet = (i: number, args: string[]) => podctl(dirs[i]!, ['--cluster', etcd.endpoints, '--node', NODES[i]!, ...args])
  const prov = provisioner(dataDir(t))

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
  const prov = provisioner(dataDir(t))
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

t.test('3 controllers: one leader, 50 claims bound once each, failover after SIGKILL and SIGTERM', { skip: etcdMissing }, async (t) => {
  const etcd: EtcdCluster = await startEtcd(t)
  const dirs = NODES.map(() => dataDir(t))
  const prov = provisioner(dataDir(t))
  const fleet = (i: number, args: string[]) => podctl(dirs[i]!, ['--cluster', etcd.endpoints, '--node', NODES[i]!, ...args])
  const status = (): { holder: string | null; node: string | null; transitions: number } => JSON.parse(fleet(0, ['controller', 'status', '--format', 'json']).stdout)
  t.equal(fleet(0, ['volume', 'class', 'create', 'shared', '--provisioner', 'exec:shared', '--default']).status, 0)
  const checker = await invariantChecker(t, etcd.endpoints)

  const controllers: Running[] = []
  const logs: string[] = ['', '', '']
  const start = (i: number): void => {
    const c = startPodctl(t, dirs[i]!, ['--cluster', etcd.endpoints, '--node', NODES[i]!, 'controller', '--lease-duration', `${LEASE_MS}ms`, '--renew-deadline', '1500ms', '--retry-period', `${RETRY_MS}ms`, '--resync', '5s', '--log-format', 'json', '--provisioners-dir', prov.dir])
    logs[i] = ''
    c.child.stderr?.on('data', (s: Buffer) => (logs[i] += String(s)))
    controllers[i] = c
  }
  NODES.forEach((_, i) => start(i))
  const leader = await pollUntil('a leader', () => status().node ?? false, { intervalMs: 100, polls: 100 })
  const leading = () => logs.map((l) => (l.match(/"msg":"leading/g) ?? []).length).reduce((a, b) => a + b, 0)
  await pollUntil('its "leading" line', () => leading() > 0, { intervalMs: 20, polls: 250 })
  await new Promise((r) => setTimeout(r, 3 * RETRY_MS))
  t.equal(leading(), 1, `one controller leads (${leader}), the others stand by`)

  // 50 claims, made from all three nodes at once.
  await Promise.all(Array.from({ length: 50 }, (_, i) => podctlAsync(t, dirs[i % 3]!, ['--cluster', etcd.endpoints, 'volume', 'claim', 'create', `c${i}`, '--size', '1M'])))
  const claims = () => JSON.parse(fleet(1, ['volume', 'claim', 'list', '--format', 'json']).stdout) as Claim[]

  // The leader SIGKILLed halfway through.
  await pollUntil('some bound', () => claims().filter((c) => c.phase === 'bound').length >= 10, { intervalMs: 50, polls: 400 })
  const l1 = NODES.indexOf(leader)
  const killedAt = Date.now()
  controllers[l1]!.child.kill('SIGKILL')
  await controllers[l1]!.done
  const next = await pollUntil('a new leader', () => {
    const s = status()
    return s.node !== null && s.node !== leader ? s.node : false
  }, { intervalMs: 20, polls: 1000 })
  const lead2 = NODES.indexOf(next)
  const leadingAt = (i: number, from = 0): Promise<number> =>
    pollUntil(`${NODES[i]}'s "leading" line`, () => {
      const line = logs[i]!.slice(from).split('\n').find((l) => l.includes('"msg":"leading'))
      return line === undefined ? false : Date.parse((JSON.parse(line) as { time: string }).time)
    }, { intervalMs: 20, polls: 250 })
  const tookKill = (await leadingAt(lead2)) - killedAt
  t.comment(`after SIGKILL of ${leader}: ${next} leads ${tookKill} ms later (lease ${LEASE_MS} + retry ${RETRY_MS})`)
  // etcd checks lease expiry about every 500 ms: the bound has that much slack.
  t.ok(tookKill <= LEASE_MS + RETRY_MS + 500, `a new leader within lease + retry period (+ etcd's expiry tick): ${tookKill} ms`)

  await pollUntil('all 50 bound', () => {
    const cs = claims()
    return cs.length === 50 && cs.every((c) => c.phase === 'bound')
  }, { intervalMs: 100, polls: 300 })
  // A leader killed while its workers (4) waited for the provisioner leaves those claims "provisioning":
  // its successor asks again for the same volumes (seed 004 does the same), and binds each once.
  const provisions = prov.calls().filter((c) => c.startsWith('provision'))
  t.equal(new Set(provisions).size, 50, `50 volumes provisioned, one per claim (${provisions.length} calls)`)
  t.ok(provisions.length <= 50 + 4, 'a volume asked for again only if it was in hand at the SIGKILL')
  const volumes = new Set(claims().map((c) => c.volume))
  t.equal(volumes.size, 50, '50 claims, 50 volumes')

  // SIGTERM: the lead moves within one retry period.
  start(l1)
  const termAt = Date.now()
  const logBefore = logs.map((l) => l.length)
  controllers[lead2]!.child.kill('SIGTERM')
  t.equal((await controllers[lead2]!.done).status, 0, 'SIGTERM: exit 0')
  t.match(logs[lead2], /released the fleet's lease/)
  const third = await pollUntil('a leader after SIGTERM', () => {
    const s = status()
    return s.node !== null && s.node !== next ? s.node : false
  }, { intervalMs: 20, polls: 1000 })
  const i3 = NODES.indexOf(third)
  const tookTerm = (await leadingAt(i3, logBefore[i3])) - termAt
  t.comment(`after SIGTERM of ${next}: ${third} leads ${tookTerm} ms later`)
  t.ok(tookTerm <= RETRY_MS + 500, `a new leader within one retry period (+ the stop itself): ${tookTerm} ms`)
  t.equal(status().transitions, 3, 'controller status counts 3 transitions')

  // Removing claims: the leader deletes their volumes once each.
  for (let i = 0; i < 5; i++) t.equal(fleet(i % 3, ['volume', 'claim', 'rm', `c${i}`, '--provisioners-dir', prov.dir]).status, 0)
  await pollUntil('5 deletes', () => prov.calls().filter((c) => c.startsWith('delete')).length >= 5, { intervalMs: 100, polls: 100 })
  await new Promise((r) => setTimeout(r, 1000))
  t.equal(prov.calls().filter((c) => c.startsWith('delete')).length, 5, 'five deletes, no more')

  const { problems, checks } = await checker.stop()
  t.same(problems, [], `no claim with two volumes, no orphan volume (${checks} checks)`)
  t.ok(checks > 20, 'the checker ran throughout')
  for (const c of controllers) c.child.kill('SIGTERM')
  await Promise.all(controllers.map((c) => c.done))
})

t.test('two of three etcd members killed: nothing provisioned, fleet commands exit 1; back: pending claims bound once', { skip: etcdMissing }, async (t) => {
  const etcd: EtcdCluster = await startEtcd(t)
  const dirs = NODES.map(() => dataDir(t))
  const prov = provisioner(dataDir(t))
  const fleet = (i: number, args: string[]) => podctl(dirs[i]!, ['--cluster', etcd.endpoints, '--node', NODES[i]!, ...args])
  t.equal(fleet(0, ['volume', 'class', 'create', 'shared', '--provisioner', 'exec:shared', '--default']).status, 0)
  const controllers = NODES.map((n, i) =>
    startPodctl(t, dirs[i]!, ['--cluster', etcd.endpoints, '--node', n, 'controller', '--lease-duration', `${LEASE_MS}ms`, '--renew-deadline', '1500ms', '--retry-period', `${RETRY_MS}ms`, '--resync', '2s', '--provisioners-dir', prov.dir]),
  )
  await pollUntil('a leader', () => JSON.parse(fleet(0, ['controller', 'status', '--format', 'json']).stdout).alive === true, { intervalMs: 100, polls: 100 })
  for (let i = 0; i < 5; i++) t.equal(fleet(i % 3, ['volume', 'claim', 'create', `early-${i}`]).status, 0)
  await pollUntil('5 bound', () => (JSON.parse(fleet(0, ['volume', 'claim', 'list', '--format', 'json']).stdout) as Claim[]).every((c) => c.phase === 'bound'), { intervalMs: 100, polls: 200 })

  await etcd.kill(0)
  await etcd.kill(1)
  const calls = prov.calls().length
  const started = Date.now()
  const down = fleet(2, ['volume', 'claim', 'create', 'late'])
  const took = Date.now() - started
  t.equal(down.status, 1, 'claim create without quorum: exit 1')
  t.ok(took <= 10_500, `within 10 s (${took} ms)`)
  t.match(down.stderr, /did not answer/)
  t.notMatch(down.stderr, STACK_RE)
  const manifest = path.join(dataDir(t), 'm.json')
  fs.writeFileSync(manifest, JSON.stringify({ apiVersion: 'podctl/v1', apps: [{ name: 'a', exec: ['true'], mounts: [{ volume: 'd', path: '/d' }] }], volumes: [{ name: 'd', kind: 'persistent', claim: 'early-0' }] }))
  const runDown = fleet(1, ['run', '--manifest', manifest])
  t.equal(runDown.status, 125, "a run whose claim is the fleet's fails as podctl's own failure (125)")
  t.match(runDown.stderr, /did not answer/)
  // Past the renew deadline and the lease: the leader has stopped, nothing is provisioned.
  await new Promise((r) => setTimeout(r, LEASE_MS + 1000))
  t.equal(prov.calls().length, calls, 'no provision call without quorum')

  await etcd.restart(0)
  await etcd.restart(1)
  await pollUntil('the fleet answers again', () => fleet(0, ['volume', 'claim', 'list']).status === 0, { intervalMs: 200, polls: 100 })
  for (let i = 0; i < 5; i++) t.equal(fleet(i % 3, ['volume', 'claim', 'create', `late-${i}`]).status, 0)
  await pollUntil('all 10 bound', () => {
    const cs = JSON.parse(fleet(0, ['volume', 'claim', 'list', '--format', 'json']).stdout) as Claim[]
    return cs.length === 10 && cs.every((c) => c.phase === 'bound')
  }, { intervalMs: 200, polls: 150 })
  const provisions = prov.calls().filter((c) => c.startsWith('provision'))
  t.equal(provisions.length, 10, 'ten claims, ten provision calls: none twice')
  for (const c of controllers) c.child.kill('SIGTERM')
  for (const c of controllers) t.equal((await c.done).status, 0, 'each controller exits 0 on SIGTERM')
})
