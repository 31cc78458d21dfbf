// The etcd harness of the cluster tests (test/helpers/etcd.ts) on its own:
// a real 3-member cluster replicates, survives one member's death, stops
// serving writes without a quorum, takes restarted members back, and
// leaves neither a process nor a data dir behind.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { pollUntil } from '../helpers/common.js'
import { etcdMissing, startEtcd } from '../helpers/etcd.js'
import { alive, allPids } from '../helpers/run-util.js'

interface Ctl {
  status: number | null
  stdout: string
  stderr: string
  ms: number
}

/** `etcdctl --endpoints url --command-timeout=2s args...`. */
const ctl = (url: string, ...args: string[]): Ctl => {
  const start = Date.now()
  const r = spawnSync('etcdctl', ['--endpoints', url, '--command-timeout=2s', ...args], {
    encoding: 'utf8',
    timeout: 10_000,
    env: { ...process.env, ETCDCTL_API: '3' },
  })
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '', ms: Date.now() - start }
}

/** Puts key=value through `url`, retrying while a new leader is elected; the last try's result. */
const putSoon = async (url: string, key: string, value: string): Promise<Ctl> => {
  let last: Ctl | undefined
  try {
    await pollUntil(`a put through ${url}`, () => (last = ctl(url, 'put', key, value)).status === 0, { polls: 20, intervalMs: 100 })
  } catch {
    // last says why
  }
  return last!
}

const get = (url: string, key: string): string => ctl(url, 'get', key, '--print-value-only').stdout.trim()

/** Processes whose command line names `dir`: the members and their guardians. */
const processesIn = (dir: string): number[] =>
  allPids().filter((pid) => {
    try {
      return alive(pid) && fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(dir)
    } catch {
      return false
    }
  })

t.test('a 3-member cluster: replication, one death, no quorum, restarts, stop', { skip: etcdMissing ?? false }, async (t) => {
  const began = Date.now()
  const c = await startEtcd(t)
  t.comment(`cluster started in ${Date.now() - began} ms`)
  const [m0, m1, m2] = c.members
  if (!m0 || !m1 || !m2) throw new Error('expected 3 members')
  const root = path.dirname(m0.dataDir)

  t.equal(c.members.length, 3)
  t.equal(c.endpoints, c.members.map((m) => m.clientUrl).join(','))
  const ports = c.members.flatMap((m) => [m.clientUrl, m.peerUrl]).map((u) => Number(new URL(u).port))
  t.equal(new Set(ports).size, 6, 'six distinct ports')
  t.notOk(ports.includes(2379) || ports.includes(2380), 'never etcd\'s well-known ports')
  t.ok(c.members.every((m) => m.running()), 'every member runs')
  t.match(path.basename(root), /^podctl-etcd-/)
  t.ok(c.members.every((m) => fs.statSync(m.dataDir).isDirectory()), 'each member has its data dir')
  const pids = processesIn(root)
  t.ok(pids.length >= 3, `our processes: ${pids.join(' ')}`)

  t.equal(ctl(m0.clientUrl, 'put', 'k', 'v1').status, 0, 'a put through m0')
  t.equal(get(m2.clientUrl, 'k'), 'v1', 'is read through m2')
  t.equal(ctl(c.endpoints, 'get', 'k', '--print-value-only').stdout.trim(), 'v1', 'and through all endpoints')

  await c.kill(0)
  t.equal(m0.running(), false, 'm0 is dead after kill(0)')
  t.ok(m1.running() && m2.running(), 'the others live')
  const after1 = await putSoon(m1.clientUrl, 'k', 'v2')
  t.equal(after1.status, 0, `two of three still serve a put through m1 ${after1.stderr}`)
  t.equal(get(m1.clientUrl, 'k'), 'v2', 'and a get through m1')
  t.equal(get(m2.clientUrl, 'k'), 'v2', 'and through m2')

  await c.kill(1)
  t.equal(m1.running(), false, 'm1 is dead after kill(1)')
  const noQuorum = ctl(m2.clientUrl, 'put', 'k', 'v3')
  t.not(noQuorum.status, 0, `without a quorum a put through m2 fails: ${noQuorum.stderr.trim().split('\n').pop()}`)
  t.ok(noQuorum.ms < 5_000, `within 5 s (${noQuorum.ms} ms)`)

  let ms = Date.now()
  await c.restart(0)
  t.comment(`restart(0) took ${Date.now() - ms} ms`)
  t.ok(m0.running(), 'm0 runs again')
  ms = Date.now()
  await c.restart(1)
  t.comment(`restart(1) took ${Date.now() - ms} ms`)
  t.ok(m1.running(), 'm1 runs again')
  await t.rejects(c.restart(1), /running/, 'a running member is not restarted')
  for (const [i, m] of c.members.entries()) {
    const r = await putSoon(m.clientUrl, `k${i}`, `v${i}`)
    t.equal(r.status, 0, `a put through m${i} works again ${r.stderr}`)
  }
  // The put that timed out without a quorum was not refused: it stayed in
  // the raft log and may be committed once the quorum is back. So "k" is
  // v2 or v3, but the same through every member.
  const k = c.members.map((m) => get(m.clientUrl, 'k'))
  t.match(k[0], /^v[23]$/, `k is v2 or v3 (${k[0]})`)
  t.same(k, [k[0], k[0], k[0]], 'm0 kept its data and caught up: every member reads the same k')
  t.equal(get(m1.clientUrl, 'k2'), 'v2', 'm1 reads a key written through m2')

  const before = processesIn(root)
  t.ok(before.length >= 3, `our processes before stop: ${before.join(' ')}`)
  await c.stop()
  t.same(before.filter(alive), [], 'every process of ours is dead after stop()')
  t.same(processesIn(root), [], 'no process names the data dirs')
  t.notOk(fs.existsSync(root), 'the data dirs are gone')
  t.ok(c.members.every((m) => !m.running()), 'no member runs')
  await c.stop()
  t.pass('stop() twice is fine')
  await t.rejects(c.restart(0), /stopped/, 'a stopped cluster cannot restart members')
})
