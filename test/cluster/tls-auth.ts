// The fleet's etcd behind TLS (a CA, server and client certificates made
// here with openssl; the member requires client certificates) and behind
// etcd's user/password authentication: podctl gets in with the right
// files and credentials, and without them fails with exit 1 and a message
// that says what was refused, never a stack trace or a Node warning.
import t from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { GUARDIAN_FD, guardedSpawnArgs } from '../../lib/proc/guardian.js'
import { pollUntil, STACK_RE } from '../helpers/common.js'
import { podctl } from '../helpers/cli-util.js'
import { etcdMissing, startEtcd } from '../helpers/etcd.js'
import { dataDir } from '../helpers/run-util.js'

const noOpenssl = spawnSync('openssl', ['version']).status === 0 ? undefined : 'needs openssl to make the certificates'

const openssl = (cwd: string, args: string[]): void => {
  const r = spawnSync('openssl', args, { cwd, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`)
}

/** A CA, a server certificate for 127.0.0.1 and a client certificate, in `dir`. */
const makeCerts = (dir: string): void => {
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes']
  openssl(dir, ['req', '-x509', ...key, '-keyout', 'ca-key.pem', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=podctl-test-ca'])
  for (const [name, ext] of [
    ['server', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n'],
    ['client', 'extendedKeyUsage=clientAuth\n'],
  ] as const) {
    fs.writeFileSync(path.join(dir, `${name}.ext`), ext)
    openssl(dir, ['req', ...key, '-keyout', `${name}-key.pem`, '-out', `${name}.csr`, '-subj', `/CN=${name}`])
    openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca-key.pem', '-CAcreateserial', '-out', `${name}.pem`, '-days', '1', '-extfile', `${name}.ext`])
  }
}

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.once('error', reject)
    srv.listen({ host: '127.0.0.1', port: 0 }, () => {
      const { port } = srv.address() as net.AddressInfo
      srv.close(() => resolve(port))
    })
  })

t.test('TLS with client certificates', { skip: etcdMissing ?? noOpenssl }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-etcd-tls-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  makeCerts(dir)
  const [client, peer] = [await freePort(), await freePort()]
  const url = `https://127.0.0.1:${client}`
  // Through lib/proc/guardian.ts, as test/helpers/etcd.ts does: the member dies with this test however it dies.
  const [file, argv] = guardedSpawnArgs('etcd', [
    '--name', 'tls', '--data-dir', path.join(dir, 'data'), '--logger', 'zap', '--log-level', 'error',
    '--listen-client-urls', url, '--advertise-client-urls', url,
    '--listen-peer-urls', `http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
    '--initial-cluster', `tls=http://127.0.0.1:${peer}`,
    '--cert-file', path.join(dir, 'server.pem'), '--key-file', path.join(dir, 'server-key.pem'),
    '--trusted-ca-file', path.join(dir, 'ca.pem'), '--client-cert-auth',
  ])
  const member = spawn(file, argv, { detached: true, stdio: ['ignore', 'ignore', 'ignore', 'pipe'] })
  member.stdio[GUARDIAN_FD]?.on('error', () => {})
  t.teardown(() => {
    try {
      process.kill(-member.pid!, 'SIGKILL')
    } catch {
      // gone
    }
  })
  const files = ['--cluster-cacert', path.join(dir, 'ca.pem'), '--cluster-cert', path.join(dir, 'client.pem'), '--cluster-key', path.join(dir, 'client-key.pem')]
  const data = dataDir(t)
  await pollUntil('the TLS member to answer', () => podctl(data, ['--cluster', url, ...files, 'node', 'list']).status === 0, { intervalMs: 100, polls: 200 })
  const ok = podctl(data, ['--cluster', url, ...files, 'node', 'list', '--format', 'json'])
  t.equal(ok.status, 0)
  t.equal(ok.stdout, '[]\n', 'in, with the CA and a client certificate: an empty fleet')
  t.equal(ok.stderr, '', 'and no warning on stderr (an IP address as the TLS server name)')

  const noClient = podctl(data, ['--cluster', url, '--cluster-cacert', path.join(dir, 'ca.pem'), 'node', 'list'])
  t.equal(noClient.status, 1, 'no client certificate: exit 1')
  t.match(noClient.stderr, `etcd at ${url} did not answer`)
  t.match(noClient.stderr, /bad certificate|certificate required|alert/, 'the TLS refusal is named')
  t.notMatch(noClient.stderr, STACK_RE)
  t.notMatch(noClient.stderr, /DeprecationWarning/)

  const noCa = podctl(data, ['--cluster', url, 'node', 'list'])
  t.equal(noCa.status, 1, 'no CA: exit 1')
  t.match(noCa.stderr, /certificate/, 'the server certificate cannot be verified')

  const half = podctl(data, ['--cluster', url, '--cluster-cert', path.join(dir, 'client.pem'), 'node', 'list'])
  t.equal(half.status, 2, 'a certificate without its key: exit 2')
  t.match(half.stderr, /--cluster-cert and --cluster-key go together/)
  const missing = podctl(data, ['--cluster', url, '--cluster-cacert', path.join(dir, 'nope.pem'), 'node', 'list'])
  t.equal(missing.status, 2, 'a CA file that is not there: exit 2')
  t.match(missing.stderr, /cannot read the CA certificate \(--cluster-cacert\)/)
})

t.test('user and password', { skip: etcdMissing }, async (t) => {
  const etcd = await startEtcd(t, 1)
  const url = etcd.members[0]!.clientUrl
  const ctl = (...args: string[]) => spawnSync('etcdctl', ['--endpoints', url, ...args], { encoding: 'utf8' })
  t.equal(ctl('user', 'add', 'root', '--new-user-password=s3cret').status, 0, 'etcdctl user add root')
  t.equal(ctl('auth', 'enable').status, 0, 'etcdctl auth enable')
  const data = dataDir(t)
  const env = (user?: string, password?: string): NodeJS.ProcessEnv => {
    const e = { ...process.env }
    delete e.PODCTL_CLUSTER_USER
    delete e.PODCTL_CLUSTER_PASSWORD
    if (user !== undefined) e.PODCTL_CLUSTER_USER = user
    if (password !== undefined) e.PODCTL_CLUSTER_PASSWORD = password
    return e
  }
  const good = podctl(data, ['--cluster', url, 'node', 'list', '--format', 'json'], { env: env('root', 's3cret') })
  t.equal(good.status, 0, good.stderr)
  t.equal(good.stdout, '[]\n', 'in with PODCTL_CLUSTER_USER and PODCTL_CLUSTER_PASSWORD')
  for (const [what, e] of [
    ['a wrong password', env('root', 'wrong')],
    ['no user', env()],
  ] as const) {
    const r = podctl(data, ['--cluster', url, 'node', 'list'], { env: e })
    t.equal(r.status, 1, `${what}: exit 1`)
    t.match(r.stderr, `etcd at ${url} refused podctl`, `${what}: said as a refusal, not as etcd being away`)
    t.match(r.stderr, /check PODCTL_CLUSTER_USER and PODCTL_CLUSTER_PASSWORD/)
    t.notMatch(r.stderr, STACK_RE)
  }
})
