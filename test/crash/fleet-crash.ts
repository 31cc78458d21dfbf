// The fleet's controllers and etcd killed (CONTRACT §11), on a real
// 3-member etcd with three "nodes": 3 controllers elect one leader, bind
// 50 claims once each, and hand the lead over after SIGKILL and SIGTERM,
// with no claim ever having two volumes and no volume without its claim
// (checked continuously); with two of three members killed nothing is
// provisioned and fleet commands exit 1, and once they are back every
// pending claim is bound once.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { pollUntil, STACK_RE } from '../helpers/common.js'
import { podctl, podctlAsync, startPodctl, type Running } from '../helpers/cli-util.js'
import { etcdMissing, startEtcd, type EtcdCluster } from '../helpers/etcd.js'
import { invariantChecker, LEASE_MS, NODES, RETRY_MS, sharedProvisioner, type Claim } from '../helpers/fleet-util.js'
import { dataDir } from '../helpers/run-util.js'

t.test('3 controllers: one leader, 50 claims bound once each, failover after SIGKILL and SIGTERM', { skip: etcdMissing }, async (t) => {
  const etcd: EtcdCluster = await startEtcd(t)
  const dirs = NODES.map(() => dataDir(t))
  const prov = sharedProvisioner(dataDir(t))
  const fleet = (i: number, args: string[]) => podctl(dirs[i]!, ['--cluster', etcd.endpoints, '--node', NODES[i]!, ...args])
  const status = (): { holder: string | null; node: string | null; transitions: number } => JSON.parse(fleet(0, ['controller', 'status', '--format', 'json']).stdout)
  t.equal(fleet(0, ['volume', 'class', 'create', 'shared', '--provisioner', 'exec:shared', '--default']).status, 0)
  const checker = await invariantChecker(t, etcd.endpoints)

  const controllers: Running[] = []
  const logs: string[] = ['', '', '']
  // Every controller's whole log, a restarted one's earlier life included.
  const lives: string[] = []
  const start = (i: number): void => {
    const c = startPodctl(t, dirs[i]!, ['--cluster', etcd.endpoints, '--node', NODES[i]!, 'controller', '--lease-duration', `${LEASE_MS}ms`, '--renew-deadline', '1500ms', '--retry-period', `${RETRY_MS}ms`, '--resync', '5s', '--log-format', 'json', '--provisioners-dir', prov.dir])
    logs[i] = ''
    const life = lives.push('') - 1
    c.child.stderr?.on('data', (s: Buffer) => {
      logs[i] += String(s)
      lives[life] += String(s)
    })
    controllers[i] = c
  }
  /** The "leading" lines in `texts`: one per win of the lease. */
  const leadingIn = (texts: readonly string[]): number => texts.reduce((n, l) => n + (l.match(/"msg":"leading/g) ?? []).length, 0)
  const wins = (): number => leadingIn(lives)
  NODES.forEach((_, i) => start(i))
  const leader = await pollUntil('a leader', () => status().node ?? false, { intervalMs: 100, polls: 100 })
  const leading = (): number => leadingIn(logs)
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
  // Each win of the lease is a transition, logged by its winner: three here (the first leader, and one
  // after each stop), more where a loaded machine let a leader's lease lapse and it was won again.
  const winsBefore = wins()
  const transitions = status().transitions
  await new Promise((r) => setTimeout(r, 3 * RETRY_MS))
  t.ok(transitions >= winsBefore && transitions <= wins(), `controller status counts every win of the lease: ${transitions} (logged: ${winsBefore}, then ${wins()})`)
  t.ok(transitions >= 3, 'at least the three this test caused')

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
  const prov = sharedProvisioner(dataDir(t))
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
