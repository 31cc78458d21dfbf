// Addresses and subnets as numbers (lib/network/cidr.ts): parsing, the
// shortest IPv6 form, host bits, and overlaps, against Node's BlockList.
import t from 'tap'
import net from 'node:net'
import { contains, formatCidr, formatIp, last, nth, overlaps, parseCidr, parseIp, size } from '../../lib/network/cidr.js'

t.test('addresses read and write back', async (t) => {
  t.same(parseIp('10.90.0.5'), { family: 4, value: 0x0a5a0005n })
  t.equal(parseIp('10.90.0.256'), undefined)
  t.equal(parseIp('nope'), undefined)
  for (const [text, short] of [
    ['::', '::'],
    ['::1', '::1'],
    ['fd00:0:0:0:0:0:0:1', 'fd00::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2:3:4:5:6'],
    ['::ffff:1.2.3.4', '::ffff:102:304'],
  ] as [string, string][]) {
    const ip = parseIp(text)
    t.ok(ip, text)
    t.equal(formatIp(6, ip!.value), short, text)
  }
})

t.test('subnets clear their host bits, and overlap as Node says they do', async (t) => {
  t.equal(formatCidr(parseCidr('10.90.3.7/24')!), '10.90.3.0/24')
  t.equal(formatCidr(parseCidr('fd00:1::5/64')!), 'fd00:1::/64')
  for (const bad of ['10.0.0.0', '10.0.0.0/33', '10.0.0.0/', 'fd00::/129', 'x/8', '10.0.0.0/8/8']) t.equal(parseCidr(bad), undefined, bad)
  const a = parseCidr('10.90.0.0/15')!
  t.equal(size(a), 131072n)
  t.equal(nth(a, 1n), '10.90.0.1')
  t.equal(formatIp(4, last(a)), '10.91.255.255')
  const cases: [string, string][] = [
    ['10.90.0.0/15', '10.91.3.0/24'],
    ['10.91.3.0/24', '10.90.0.0/15'],
    ['10.90.0.0/24', '10.90.1.0/24'],
    ['192.0.2.0/24', '192.0.2.128/25'],
    ['10.0.0.0/8', 'fd00::/8'],
    ['fd00::/16', 'fd00:1::/64'],
    ['fd00:1::/64', 'fd00:2::/64'],
  ]
  for (const [x, y] of cases) {
    const cx = parseCidr(x)!
    const cy = parseCidr(y)!
    const list = new net.BlockList()
    list.addSubnet(formatIp(cx.family, cx.base), cx.prefix, cx.family === 4 ? 'ipv4' : 'ipv6')
    const other = new net.BlockList()
    other.addSubnet(formatIp(cy.family, cy.base), cy.prefix, cy.family === 4 ? 'ipv4' : 'ipv6')
    const node = cx.family === cy.family && (list.check(formatIp(cy.family, cy.base), cy.family === 4 ? 'ipv4' : 'ipv6') || other.check(formatIp(cx.family, cx.base), cx.family === 4 ? 'ipv4' : 'ipv6'))
    t.equal(overlaps(cx, cy), node, `${x} and ${y}`)
  }
  t.ok(contains(parseCidr('10.90.0.0/24')!, 4, parseIp('10.90.0.200')!.value))
  t.notOk(contains(parseCidr('10.90.0.0/24')!, 6, parseIp('10.90.0.200')!.value), 'another family is never inside')
})
