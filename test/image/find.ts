// Finding an image by what a user types (lib/image/find.ts), on an index
// made in memory and a registries configuration handed in: podman 4's
// order of candidates, IDs, ends of names, and what is said when nothing
// is found.
import t from 'tap'
import { candidateNames, findImage } from '../../lib/image/find.js'
import { emptyIndex, type ImageIndexFile } from '../../lib/image/index-file.js'
import type { RegistriesConf } from '../../lib/image/registries.js'

const conf = (over: Partial<RegistriesConf> = {}) => (): RegistriesConf => ({ aliases: new Map([['busybox', 'docker.io/library/busybox']]), search: [], file: '/etc/containers/registries.conf', ...over })
const hex = (c: string, d = '0'): string => `${c.repeat(12)}${d.repeat(52)}`

/** An index of one image per name, image i's digest `hex(i)` and its config `hex(i, 'c')`. */
const index = (names: string[]): ImageIndexFile => {
  const idx = emptyIndex()
  names.forEach((n, i) => {
    const h = hex(String.fromCharCode(97 + i))
    idx.images[h] = { digest: `sha256:${h}`, config: `sha256:${hex(String(i), 'c')}`, layers: [], size_bytes: 0, created: null, imported_at: '', os: null, architecture: null }
    idx.names[n] = h
  })
  return idx
}

t.test("podman's candidates: the alias, localhost/, each search registry, docker.io", async (t) => {
  t.strictSame(candidateNames({ name: 'busybox', tag: 'latest' }, conf()), ['docker.io/library/busybox', 'localhost/busybox'])
  t.strictSame(candidateNames({ name: 'trial/box', tag: '1' }, conf({ search: ['quay.io', 'docker.io'] })), ['localhost/trial/box', 'quay.io/trial/box', 'docker.io/trial/box'])
  t.strictSame(candidateNames({ name: 'docker.io/busybox', tag: '1' }, conf()), ['docker.io/busybox', 'docker.io/library/busybox'], 'a whole name as it is, and as docker reads it')
  t.strictSame(candidateNames({ name: 'bb', tag: '1' }, conf({ aliases: new Map([['bb', 'docker.io/busybox']]) })), ['docker.io/library/busybox', 'localhost/bb', 'docker.io/library/bb'], 'an alias as docker reads it')
  let read = 0
  candidateNames({ name: 'example.com/x', tag: '1' }, () => (read++, conf()()))
  t.equal(read, 0, 'a whole name needs no configuration')
})

t.test('found in order: the name as stored, the candidates, a digest or ID prefix, the end of a name', async (t) => {
  const idx = index(['docker.io/library/busybox:1.36', 'localhost/busybox:latest', 'quay.io/other/tool:2', 'box:7'])
  const find = (text: string) => findImage(idx, text, { registries: conf() })
  t.match(find('busybox:1.36'), { hex: hex('a'), name: 'docker.io/library/busybox:1.36' })
  t.match(find('busybox'), { hex: hex('b'), name: 'localhost/busybox:latest' }, 'the alias is not stored: localhost/ is next')
  t.match(find('tool:2'), { hex: hex('c'), name: 'quay.io/other/tool:2' })
  t.match(find('docker.io/library/box:7'), { hex: hex('d'), name: 'box:7' }, 'a short name stored as given is docker.io\'s')
  t.match(find(hex('c').slice(0, 12)), { hex: hex('c') }, 'a digest prefix')
  t.match(find(hex('2', 'c').slice(0, 14)), { hex: hex('c') }, 'an ID (config digest) prefix')
  t.match(find(`sha256:${hex('1', 'c')}`), { hex: hex('b') }, 'a whole ID')
  t.throws(() => find('other/tool:3'), { code: 'ENOIMAGE', message: 'no such image: other/tool:3 (no tag 3 of it is stored)', hint: 'the tags there are: quay.io/other/tool:2; name one, e.g. other/tool:2' })
  t.throws(() => find('abc'), { code: 'ENOIMAGE', message: /needs|12 or more hex digits/ })
  t.throws(() => find('nothing'), { code: 'ENOIMAGE', message: 'no such image: nothing', hint: 'see the images there are: podctl image list' })
})

t.test('ambiguity is refused, naming the candidates', async (t) => {
  const idx = index(['docker.io/trial/box:1.0', 'quay.io/x/box:1.0'])
  t.throws(() => findImage(idx, 'box:1.0', { registries: conf() }), { code: 'ENOIMAGE', message: 'box:1.0 is ambiguous: it ends the names of 2 images (docker.io/trial/box:1.0, quay.io/x/box:1.0)' })
  const same = emptyIndex()
  const a = hex('a')
  same.images[a] = { ...index(['x:1']).images[a]! }
  same.names['docker.io/trial/box:1.0'] = a
  same.names['quay.io/x/box:1.0'] = a
  t.match(findImage(same, 'box:1.0', { registries: conf() }), { hex: a }, 'two names of one image are no ambiguity')
})
