// The files a pod is given (lib/network/etc-files.ts): /etc/hosts,
// /etc/resolv.conf and /etc/hostname as pure text, and the in-place
// rewrite that a file bound into a container sees (a bind mount, as root),
// where an atomic rename is not seen.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { writeFileAtomic } from '../../lib/fs/atomic.js'
import { HOSTS_END, hostnameFile, hostsFile, parseResolvConf, resolvConf, rewriteInPlace, writeEtcFiles } from '../../lib/network/etc-files.js'

t.test('/etc/hosts: added hosts first, localhost, the host, the pod, the peers', async (t) => {
  const text = hostsFile({
    hostname: 'web',
    addresses: ['10.90.0.5'],
    names: ['web', 'nginx'],
    addHosts: [{ name: 'db.example', ip: '192.0.2.9' }],
    hostAddress: '10.90.0.1',
    peers: [{ ip: '10.90.1.3', names: ['cache', 'redis'] }],
  })
  t.equal(
    text,
    [
      '192.0.2.9\tdb.example',
      '127.0.0.1\tlocalhost',
      '::1\tlocalhost',
      '10.90.0.1\thost.containers.internal',
      '10.90.0.5\tweb nginx',
      '10.90.1.3\tcache redis',
      HOSTS_END,
    ].join('\n'),
    "podman 4's order and names (containers/common's etchosts: host.containers.internal before the container's own entries; podman 4.3.1 here wrote them so)",
  )
  const based = hostsFile({ hostname: 'web', addresses: ['10.90.0.5'], base: '# the host\n127.0.0.1 localhost   vm\n10.1.1.1  web\nnonsense\n' })
  t.equal(based, ['127.0.0.1\tlocalhost vm', '10.1.1.1\tweb', HOSTS_END].join('\n'), "the host's entries first, one IP<TAB>NAMES line each; names they list are not repeated (podman's host had localhost: no ::1 line)")
  t.notOk(text.endsWith('\n'), 'the last line is a comment without a newline')
  t.match(hostsFile({ hostname: 'lonely', addresses: [] }), /\n127\.0\.1\.1\tlonely\n/, 'a pod without an address still knows its name')
  t.equal(hostnameFile('web'), 'web', 'no newline, as podman 4.3 writes it')
  t.equal(hostsFile({ hostname: 'solo', addresses: ['127.0.0.1'], final: true }), '127.0.0.1\tlocalhost\n::1\tlocalhost\n127.0.0.1\tsolo\n', 'a file never rewritten in place (network none or host) is podman\'s text, with no closing comment')
})

t.test('/etc/resolv.conf: the host\'s without loopback name servers, or what is given', async (t) => {
  const host = '# by hand\nnameserver 127.0.0.53\nnameserver 192.0.2.53\nnameserver ::1\nsearch a.example b.example\noptions edns0 trust-ad\n'
  t.same(parseResolvConf(host), { nameservers: ['127.0.0.53', '192.0.2.53', '::1'], search: ['a.example', 'b.example'], options: ['edns0', 'trust-ad'] })
  t.equal(resolvConf(host), 'search a.example b.example\nnameserver 192.0.2.53\noptions edns0 trust-ad\n')
  t.equal(resolvConf('nameserver 127.0.0.1\n'), 'nameserver 8.8.8.8\nnameserver 8.8.4.4\n', "podman's fallback when only loopback is left")
  t.equal(resolvConf('nameserver 127.0.0.1\n', { keepLoopback: true }), 'nameserver 127.0.0.1\n', 'a host-network pod keeps them')
  t.equal(resolvConf(host, { dns: ['1.1.1.1'], search: ['.'], options: ['ndots:2'] }), 'nameserver 1.1.1.1\noptions ndots:2\n')
})

t.test('hosts is rewritten in place, never through a link', async (t) => {
  const dir = t.testdir({})
  const etc = path.join(dir, 'etc')
  writeEtcFiles(etc, { hosts: 'old\n', 'resolv.conf': 'nameserver 192.0.2.53\n', hostname: 'web\n' })
  t.equal(fs.statSync(path.join(etc, 'hosts')).mode & 0o777, 0o644)
  const ino = fs.statSync(path.join(etc, 'hosts')).ino
  t.ok(rewriteInPlace(etc, 'hosts', 'a longer text than before\n'))
  t.equal(fs.statSync(path.join(etc, 'hosts')).ino, ino, 'the same inode')
  t.ok(rewriteInPlace(etc, 'hosts', 'short'))
  t.equal(fs.readFileSync(path.join(etc, 'hosts'), 'utf8'), 'short', 'a shorter text leaves no tail')
  t.notOk(rewriteInPlace(path.join(dir, 'gone'), 'hosts', 'x'), 'a pod that has gone is no error')
  fs.symlinkSync('/etc/passwd', path.join(etc, 'link'))
  t.notOk(rewriteInPlace(etc, 'link', 'x'), 'never through a link')
  t.not(fs.readFileSync('/etc/passwd', 'utf8'), 'x')
})

t.test('a bind mount of hosts sees the rewrite, and would not see a rename', { skip: process.getuid?.() !== 0 ? 'binding a file needs root' : false }, async (t) => {
  const dir = t.testdir({})
  const etc = path.join(dir, 'etc')
  writeEtcFiles(etc, { hosts: 'old\n', 'resolv.conf': '', hostname: 'web\n' })
  const seen = path.join(dir, 'in-container-hosts')
  fs.writeFileSync(seen, '')
  t.equal(spawnSync('mount', ['--bind', path.join(etc, 'hosts'), seen]).status, 0, 'bound')
  try {
    t.ok(rewriteInPlace(etc, 'hosts', 'after a peer came\n'))
    t.equal(fs.readFileSync(seen, 'utf8'), 'after a peer came\n', 'the bound file shows the rewrite')
    writeFileAtomic(etc, 'hosts', 'by rename\n')
    t.equal(fs.readFileSync(seen, 'utf8'), 'after a peer came\n', 'a rename is not seen through the bind mount: why hosts is rewritten in place')
  } finally {
    spawnSync('umount', ['-l', seen])
  }
})

t.test('a reader between the write and the truncate sees whole lines only', async (t) => {
  const before = hostsFile({ hostname: 'web', addresses: ['10.90.0.5'], peers: [{ ip: '10.90.0.6', names: ['db'] }, { ip: '10.90.0.7', names: ['cache'] }] })
  const after = hostsFile({ hostname: 'web', addresses: ['10.90.0.5'], peers: [{ ip: '10.90.0.6', names: ['db'] }] })
  t.ok(after.length < before.length)
  // What a reader gets after the pwrite and before the ftruncate.
  const between = after + before.slice(after.length)
  const lines = between.split('\n').filter((l) => l !== '' && !l.startsWith('#'))
  for (const l of lines) t.match(l, /^(\S+)\t\S+( \S+)*$/, `a whole line: ${JSON.stringify(l)}`)
  t.ok(lines.every((l) => before.includes(`${l}\n`) || before.endsWith(l) || after.includes(`${l}\n`)), 'each line is one of the old file or the new')
})
