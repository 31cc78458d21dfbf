// How images are named and found (lib/image/reference.ts, source.ts,
// oci.ts, store.ts's findImage): NAME[:TAG] by the distribution spec's
// grammar, digests and their prefixes, skopeo's source syntax, platforms.
import t from 'tap'
import { digestHex, digestPrefixOf, formatName, hasDomain, normalizeName, parseName, sameName, tryParseName } from '../../lib/image/reference.js'
import { pathAndRef } from '../../lib/image/image-source.js'
import { parseSource } from '../../lib/image/source.js'
import { formatPlatform, hostPlatform, parsePlatform } from '../../lib/image/oci.js'
import { emptyIndex } from '../../lib/image/index-file.js'
import { findImage } from '../../lib/image/store.js'

t.test('NAME[:TAG]', async (t) => {
  t.strictSame(parseName('alpine'), { name: 'alpine', tag: 'latest' }, 'latest when no tag')
  t.strictSame(parseName('alpine:3.20'), { name: 'alpine', tag: '3.20' })
  t.strictSame(parseName('localhost:5000/team/app'), { name: 'localhost:5000/team/app', tag: 'latest' }, 'a registry port is not a tag')
  t.strictSame(parseName('registry.example.com:5000/team/app:v2'), { name: 'registry.example.com:5000/team/app', tag: 'v2' })
  t.strictSame(parseName('a_b__c-d.e/f'), { name: 'a_b__c-d.e/f', tag: 'latest' })
  for (const bad of ['Alpine', 'alpine:', ':3', 'a//b', 'a/', '-a', 'a:tag with space', `a:${'x'.repeat(129)}`, `${'a'.repeat(256)}`]) t.equal(tryParseName(bad), undefined, JSON.stringify(bad))
  t.throws(() => parseName('alpine@sha256:abc'), { code: 'EUSAGE', message: /by NAME\[:TAG\], or by its digest alone/ })
  t.throws(() => parseName('UPPER', '--name'), { code: 'EUSAGE', message: /invalid --name "UPPER"/ })
  t.equal(formatName(parseName('x')), 'x:latest')
})

t.test('digests and their prefixes', async (t) => {
  const hex = 'a'.repeat(64)
  t.equal(digestHex(`sha256:${hex}`), hex)
  for (const bad of [hex, `sha512:${hex}`, `sha256:${'A'.repeat(64)}`, `sha256:${'a'.repeat(63)}`, 42]) t.equal(digestHex(bad), undefined, String(bad))
  t.equal(digestPrefixOf('abcdef012345'), 'abcdef012345', '12 hex digits')
  t.equal(digestPrefixOf('sha256:abcdef012345'), 'abcdef012345')
  t.equal(digestPrefixOf('abcdef01234'), undefined, '11 are not enough')
})

t.test('finding an image: a name first, then a digest prefix; ambiguity lists the candidates', async (t) => {
  const idx = emptyIndex()
  const rec = (hex: string) => ({ digest: `sha256:${hex}`, config: `sha256:${'c'.repeat(64)}`, layers: [], size_bytes: 0, created: null, imported_at: '', os: null, architecture: null })
  const a = `abcdef012345${'1'.repeat(52)}`
  const b = `abcdef012345${'2'.repeat(52)}`
  idx.images[a] = rec(a)
  idx.images[b] = rec(b)
  idx.names['web:1'] = a
  idx.names['abcdef012345:latest'] = b
  t.equal(findImage(idx, 'web:1').hex, a)
  t.equal(findImage(idx, 'abcdef012345').hex, b, 'a name that looks like a digest prefix is a name first')
  t.equal(findImage(idx, 'abcdef0123451').hex, a)
  t.throws(() => findImage(idx, 'sha256:abcdef012345'), { code: 'ENOIMAGE', message: /ambiguous: it is the start of the digests or IDs of 2 images \(abcdef012345, abcdef012345\)/ })
  t.throws(() => findImage(idx, 'web:2', { registries: () => ({ aliases: new Map(), search: [], file: 'registries.conf' }) }), { code: 'ENOIMAGE', message: 'no such image: web:2 (no tag 2 of it is stored)' })
  t.throws(() => findImage(idx, 'Web'), { code: 'EUSAGE' })
})

t.test('sources in skopeo\'s syntax', async (t) => {
  const dir = t.testdir({ layout: {}, 'a.tar': 'x' })
  t.match(parseSource(`oci:${dir}/layout:v1`), { transport: 'oci', where: `oci:${dir}/layout:v1` })
  t.match(parseSource(`oci:${dir}/layout`), { transport: 'oci' })
  t.match(parseSource(`oci-archive:${dir}/a.tar:v1`), { transport: 'oci-archive' })
  t.match(parseSource(`docker-archive:${dir}/a.tar:busy:1`), { transport: 'docker-archive' })
  t.match(parseSource(`${dir}/layout`), { transport: 'oci' }, 'a directory is a layout')
  t.match(parseSource(`${dir}/a.tar`), { transport: 'archive' }, 'a file is an archive of either kind')
  t.match(parseSource('-'), { transport: 'archive', where: 'the archive on stdin' })
  t.match(parseSource('docker-archive:-'), { transport: 'docker-archive', where: 'the archive on stdin' })
  t.strictSame(pathAndRef('oci', `${dir}/layout:v1`, 'x'), [`${dir}/layout`, 'v1'])
  t.strictSame(pathAndRef('docker-archive', 'a.tar:busy:1', 'x'), ['a.tar', 'busy:1'], 'the path ends at the first ":" (skopeo\'s rule)')
  t.strictSame(pathAndRef('oci', 'dir', 'x'), ['dir', undefined])
  t.throws(() => parseSource(''), { code: 'EUSAGE' })
  t.throws(() => parseSource('oci:'), { code: 'EUSAGE', message: /no path after oci:/ })
  t.throws(() => parseSource(`oci:${dir}/layout:`), { code: 'EUSAGE', message: /empty tag/ })
  t.throws(() => parseSource('docker://alpine'), { code: 'EUSAGE', message: /does not read the docker: transport/ })
  t.throws(() => parseSource(`${dir}/missing`), { code: 'EUSAGE', message: /no such file or directory/ })
})

t.test('platforms', async (t) => {
  t.strictSame(parsePlatform('linux/arm64'), { os: 'linux', architecture: 'arm64' })
  t.strictSame(parsePlatform('linux/arm/v7'), { os: 'linux', architecture: 'arm', variant: 'v7' })
  for (const bad of ['linux', 'linux/', 'a/b/c/d', 'Linux/AMD64 ']) t.throws(() => parsePlatform(bad), { code: 'EUSAGE' }, bad)
  t.equal(formatPlatform({ os: 'linux', architecture: 'arm', variant: 'v7' }), 'linux/arm/v7')
  t.equal(hostPlatform().os, 'linux')
  t.equal(hostPlatform().architecture, { x64: 'amd64', arm64: 'arm64' }[process.arch as string] ?? hostPlatform().architecture, 'Node\'s arch in GOARCH spelling')
})

t.test('names as docker and podman read them', async (t) => {
  for (const [name, domain, normal] of [
    ['busybox', false, 'docker.io/library/busybox'],
    ['trial/box', false, 'docker.io/trial/box'],
    ['docker.io/busybox', true, 'docker.io/library/busybox'],
    ['index.docker.io/trial/box', true, 'docker.io/trial/box'],
    ['localhost/busybox', true, 'localhost/busybox'],
    ['localhost:5000/a/b', true, 'localhost:5000/a/b'],
    ['quay.io/x', true, 'quay.io/x'],
  ] as const) {
    t.equal(hasDomain(name), domain, `${name}: ${domain ? 'a registry' : 'a short name'}`)
    t.equal(normalizeName(name), normal, `${name} is ${normal}`)
  }
  t.ok(sameName({ name: 'trial/box', tag: '1.0' }, { name: 'docker.io/trial/box', tag: '1.0' }))
  t.notOk(sameName({ name: 'trial/box', tag: '1.0' }, { name: 'docker.io/trial/box', tag: '2' }))
})
