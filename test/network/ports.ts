// Who holds a host port (lib/network/ports.ts): a real listening socket of
// this process, and another pod's record. The rules of -p and of the
// manifest's ports are the pod room's: test/pod/network-rules.ts and
// test/pod/manifest.ts.
import t from 'tap'
import net from 'node:net'
import dgram from 'node:dgram'
import { checkPortsFree, portHolder } from '../../lib/network/ports.js'
import type { PodNetworkRecord } from '../../lib/network/records.js'

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
