// The rules of a pod's network fields (lib/pod/network-rules.ts): -p as
// podman spells it, the defaults of a published port and what clashes,
// search domains, resolver options and --add-host entries. The network
// room's ports.ts re-exports the port rules: the same functions.
import t from 'tap'
import * as networkPorts from '../../lib/network/ports.js'
import { clashes, describeHostPort, isDnsOption, isIpAddress, isSearchDomain, normalizePort, parseAddHost, parsePublish } from '../../lib/pod/network-rules.js'

t.test('-p as podman spells it', async (t) => {
  t.same(parsePublish('8080:80'), [{ hostPort: 8080, containerPort: 80, protocol: 'tcp', hostIP: '' }])
  t.same(parsePublish('127.0.0.1:5353:53/udp'), [{ hostPort: 5353, containerPort: 53, protocol: 'udp', hostIP: '127.0.0.1' }])
  t.same(parsePublish('[::1]:8443:443/tcp'), [{ hostPort: 8443, containerPort: 443, protocol: 'tcp', hostIP: '::1' }])
  t.same(parsePublish('0.0.0.0:80:80'), [{ hostPort: 80, containerPort: 80, protocol: 'tcp', hostIP: '' }], 'every address is ""')
  t.same(parsePublish('[::]:80:80'), [{ hostPort: 80, containerPort: 80, protocol: 'tcp', hostIP: '' }], 'every IPv6 address too')
  t.same(parsePublish(':8080:80'), [{ hostPort: 8080, containerPort: 80, protocol: 'tcp', hostIP: '' }], 'an empty host IP is every address')
  t.same(parsePublish('8000-8001:90-91').map((m) => [m.hostPort, m.containerPort]), [[8000, 90], [8001, 91]])
  for (const [bad, why] of [
    ['80', /^invalid --publish "80": it names no host port/],
    [':80', /names no host port/],
    ['8080:80/sctp', /^invalid --publish "8080:80\/sctp": the protocol must be tcp or udp, not "sctp"$/],
    ['0:80', /^invalid --publish "0:80": "0" is not a port \(1 to 65535\)$/],
    ['65536:80', /not a port/],
    ['8080:x', /"x" is not a port/],
    ['1.2.3:8080:80', /"1\.2\.3" is not an IP address/],
    ['::1:8080:80', /too many ":"/],
    ['[1.2.3.4]:8080:80', /not an IPv6 address/],
    ['8000-8002:80-81', /the host range has 3 ports and the pod's 2/],
    ['8002-8000:80', /the range 8002-8000 ends before it starts/],
  ] as const) {
    t.throws(() => parsePublish(bad), { code: 'EUSAGE', message: why, hint: /^publish as \[HOSTIP:\]HOSTPORT:PORT/ }, bad)
  }
  t.throws(() => parsePublish('x', '-p'), { message: /^invalid -p "x"/ }, 'the flag is named as given')
})

t.test('a published port: its defaults, what clashes, how it is named', async (t) => {
  t.same(normalizePort({ hostPort: 1, containerPort: 2 }), { hostPort: 1, containerPort: 2, protocol: 'tcp', hostIP: '' })
  t.same(normalizePort({ hostPort: 1, containerPort: 2, protocol: 'udp', hostIP: '::' }), { hostPort: 1, containerPort: 2, protocol: 'udp', hostIP: '' })
  const p = (hostPort: number, hostIP = '', protocol: 'tcp' | 'udp' = 'tcp') => ({ hostPort, containerPort: 80, protocol, hostIP })
  t.ok(clashes(p(80), p(80, '10.0.0.1')), 'every address holds each one')
  t.ok(clashes(p(80, '10.0.0.1'), p(80, '10.0.0.1')))
  t.notOk(clashes(p(80, '10.0.0.1'), p(80, '10.0.0.2')), 'two addresses of the host')
  t.notOk(clashes(p(80), p(80, '', 'udp')), 'two protocols')
  t.notOk(clashes(p(80), p(81)))
  t.equal(describeHostPort(p(80)), '80/tcp')
  t.equal(describeHostPort(p(80, '10.0.0.1', 'udp')), '10.0.0.1:80/udp')
  t.equal(describeHostPort(p(80, '::1')), '[::1]:80/tcp')
  // One implementation: what attach uses is what the manifest and the flags use.
  t.equal(networkPorts.parsePublish, parsePublish)
  t.equal(networkPorts.normalizePort, normalizePort)
  t.equal(networkPorts.clashes, clashes)
})

t.test('name servers, search domains, resolver options', async (t) => {
  for (const ip of ['1.1.1.1', '2606:4700::1111', 'fe80::1%eth0', '::ffff:10.0.0.1']) t.ok(isIpAddress(ip), ip)
  for (const ip of ['1.2.3', '01.2.3.4', ' 1.1.1.1', 'dns.example', '', '[::1]']) t.notOk(isIpAddress(ip), JSON.stringify(ip))
  for (const d of ['example.com', 'example.com.', 'a', 'x-1.y', '.']) t.ok(isSearchDomain(d), d)
  for (const d of ['a_b', '-a', 'a-', 'a..b', 'a b', '', `${'a'.repeat(254)}`, 'a.\nnameserver 1.2.3.4']) t.notOk(isSearchDomain(d), JSON.stringify(d))
  for (const o of ['ndots:2', 'edns0', 'timeout:1', 'rotate']) t.ok(isDnsOption(o), o)
  for (const o of ['', 'a b', 'ndots:2\nnameserver 1.2.3.4', 'x#y', 'x;y', 'é']) t.notOk(isDnsOption(o), JSON.stringify(o))
})

t.test('--add-host NAME:IP, split at the first ":" as podman splits it', async (t) => {
  t.same(parseAddHost('db:10.0.0.5'), { name: 'db', ip: '10.0.0.5' })
  t.same(parseAddHost('db.internal:fd00::5'), { name: 'db.internal', ip: 'fd00::5' }, 'an IPv6 address after the first ":"')
  t.same(parseAddHost('my_host:::1'), { name: 'my_host', ip: '::1' })
  t.same(parseAddHost('db'), { problem: 'must be NAME:IP' })
  t.same(parseAddHost(':1.2.3.4'), { problem: '"" is not a host name (letters, digits, "_" and "-" in labels joined by ".")' })
  t.same(parseAddHost('a b:1.2.3.4'), { problem: '"a b" is not a host name (letters, digits, "_" and "-" in labels joined by ".")' }, 'a space would make two names of /etc/hosts')
  t.same(parseAddHost('db:zz'), { problem: '"zz" is not an IP address' })
  t.same(parseAddHost('db:[::1]'), { problem: '"[::1]" is not an IP address' }, 'no brackets, as podman')
  t.same(parseAddHost('db:host-gateway'), { problem: '"host-gateway" is not an IP address' }, "podman 4.3's rule")
})
