// Published ports (lib/network/ports.ts): podman's -p spelling, the
// manifest's ports, and who holds a host port: a real listening socket of
// this process, and another pod's record.
import t from 'tap'
import net from 'node:net'
import dgram from 'node:dgram'
import { checkPortsFree, parsePublish, portHolder, portsProblems } from '../../lib/network/ports.js'
import type { PodNetworkRecord } from '../../lib/network/records.js'

t.test('-p as podman spells it', async (t) => {
  t.same(parsePublish('8080:80'), [{ hostPort: 8080, containerPort: 80, protocol: 'tcp', hostIP: '' }])
  t.same(parsePublish('127.0.0.1:5353:53/udp'), [{ hostPort: 5353, containerPort: 53, protocol: 'udp', hostIP: '127.0.0.1' }])
  t.same(parsePublish('[::1]:8443:443/tcp'), [{ hostPort: 8443, containerPort: 443, protocol: 'tcp', hostIP: '::1' }])
  t.same(parsePublish('0.0.0.0:80:80'), [{ hostPort: 80, containerPort: 80, protocol: 'tcp', hostIP: '' }], 'every address is ""')
  t.same(parsePublish('8000-8001:90-91').map((m) => [m.hostPort, m.containerPort]), [[8000, 90], [8001, 91]])
  for (const [bad, why] of [
    ['80', /names no host port/],
    [':80', /names no host port/],
    ['8080:80/sctp', /tcp or udp/],
    ['0:80', /not a port/],
    ['65536:80', /not a port/],
    ['8080:x', /not a port/],
    ['1.2.3:8080:80', /not an IP address/],
    ['::1:8080:80', /too many ":"|not an IP/],
    ['[1.2.3.4]:8080:80', /not an IPv6 address/],
    ['8000-8002:80-81', /3 ports and the pod's 2/],
    ['8002-8000:80', /ends before it starts/],
  ] as const) {
    t.throws(() => parsePublish(bad), { code: 'EUSAGE', message: why }, bad)
  }
})

t.test("the manifest's ports", async (t) => {
  t.same(portsProblems([{ hostPort: 8080, containerPort: 80 }, { hostPort: 8080, containerPort: 80, protocol: 'udp', hostIP: '10.0.0.1' }]), [])
  t.same(
    portsProblems([{ hostPort: 0, containerPort: 80, protocol: 'sctp', hostIP: 'x', extra: 1 }, 'p', { hostPort: 9, containerPort: 9 }, { hostPort: 9, containerPort: 10, hostIP: '10.0.0.1' }]).map((p) => `${p.path}: ${p.problem}`),
    [
      'ports[0].extra: unknown field (allowed: hostPort, containerPort, protocol, hostIP)',
      'ports[0].hostPort: must be a port, 1 to 65535, not number 0',
      'ports[0].protocol: must be "tcp" or "udp", not string "sctp"',
      'ports[0].hostIP: must be an IP address of the host, or "" for all, not string "x"',
      'ports[1]: must be an object, not string "p"',
      'ports[3].hostPort: 9/tcp is published twice',
    ],
  )
  t.match(portsProblems({}), [{ path: 'ports', problem: /must be an array/ }])
})

const record = (uuid: string, name: string, ports: unknown[]): PodNetworkRecord => ({
  uuid,
  name,
  netns: '',
  netnsId: null,
  holder: null,
  ownNetns: false,
  hostname: name,
  names: [],
  addHosts: [],
  etcDir: null,
  attachments: [{ network: 'bridge', ifname: 'eth0', config: { cniVersion: '1.0.0', name: 'bridge', plugins: [] }, capabilityArgs: { portMappings: ports }, args: [], aliases: [], state: 'added', result: null, running: null }],
})

t.test("a port another pod publishes is that pod's", async (t) => {
  const other = record('3f2a1c0e-0000-4000-8000-000000000001', 'web', [{ hostPort: 18081, containerPort: 80, protocol: 'tcp', hostIP: '' }])
  t.equal(portHolder({ hostPort: 18081, containerPort: 8080, protocol: 'tcp', hostIP: '127.0.0.1' }, [other]), 'pod 3f2a1c0e (web)')
  t.equal(portHolder({ hostPort: 18081, containerPort: 8080, protocol: 'udp', hostIP: '' }, [other]), undefined, 'another protocol is another port')
  t.throws(() => checkPortsFree([{ hostPort: 18081, containerPort: 1, protocol: 'tcp', hostIP: '' }], [other]), { code: 'EBADSTATE', message: 'host port 18081/tcp is taken: pod 3f2a1c0e (web) holds it' })
})

t.test('a port a process listens on is that process', async (t) => {
  const server = net.createServer()
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => server.close())
  const port = (server.address() as net.AddressInfo).port
  const me = `process ${process.pid} (${'node'})`
  t.equal(portHolder({ hostPort: port, containerPort: 1, protocol: 'tcp', hostIP: '' }, []), me, 'every address takes 127.0.0.1 too')
  t.equal(portHolder({ hostPort: port, containerPort: 1, protocol: 'tcp', hostIP: '127.0.0.1' }, []), me)
  t.equal(portHolder({ hostPort: port, containerPort: 1, protocol: 'tcp', hostIP: '127.0.0.2' }, []), undefined, 'another address of the host is free')
  t.equal(portHolder({ hostPort: port, containerPort: 1, protocol: 'udp', hostIP: '' }, []), undefined)
  server.close()
  await new Promise((r) => setImmediate(r))
  t.equal(portHolder({ hostPort: port, containerPort: 1, protocol: 'tcp', hostIP: '' }, []), undefined, 'free once it is closed')
  const sock = dgram.createSocket('udp6')
  await new Promise<void>((r) => sock.bind(0, '::', r))
  t.teardown(() => sock.close())
  t.equal(portHolder({ hostPort: sock.address().port, containerPort: 1, protocol: 'udp', hostIP: '10.1.2.3' }, []), me, 'udp on every IPv6 address takes IPv4 too')
})
