// What image pull asks skopeo for (lib/image/pull-refs.ts), as podman 4
// resolves a pull: transports as they are, whole names on docker://, short
// names through an alias or each search registry, else refused.
import t from 'tap'
import { pullRefs } from '../../lib/image/pull-refs.js'
import type { RegistriesConf } from '../../lib/image/registries.js'

const conf = (over: Partial<RegistriesConf> = {}) => (): RegistriesConf => ({ aliases: new Map([['alpine', 'docker.io/library/alpine']]), search: [], file: '/etc/containers/registries.conf', ...over })
const D = `sha256:${'a'.repeat(64)}`

t.test('references to try', async (t) => {
  t.strictSame(pullRefs('docker://alpine', conf()), [{ ref: 'docker://alpine' }], 'a transport: as it is')
  t.strictSame(pullRefs('oci-archive:/x.tar', conf()), [{ ref: 'oci-archive:/x.tar' }])
  t.strictSame(pullRefs('alpine', conf()), [{ ref: 'docker://docker.io/library/alpine:latest', name: { name: 'docker.io/library/alpine', tag: 'latest' } }], 'the alias')
  t.strictSame(pullRefs('alpine:3', conf()), [{ ref: 'docker://docker.io/library/alpine:3', name: { name: 'docker.io/library/alpine', tag: '3' } }])
  t.strictSame(pullRefs(`alpine@${D}`, conf()), [{ ref: `docker://docker.io/library/alpine@${D}` }], 'a digest names nothing')
  t.strictSame(pullRefs('localhost:5000/box:1', conf()), [{ ref: 'docker://localhost:5000/box:1', name: { name: 'localhost:5000/box', tag: '1' } }], 'a whole name')
  t.strictSame(pullRefs('docker.io/busybox', conf()).map((r) => r.ref), ['docker://docker.io/library/busybox:latest'])
  t.strictSame(pullRefs('busybox:1', conf({ search: ['quay.io', 'docker.io'] })).map((r) => r.ref), ['docker://quay.io/busybox:1', 'docker://docker.io/library/busybox:1'], 'each search registry in turn')
})

t.test('refused', async (t) => {
  t.throws(() => pullRefs('busybox:1', conf()), { code: 'EUSAGE', message: 'short name "busybox" did not resolve to an alias and no unqualified-search registries are defined in /etc/containers/registries.conf', hint: /give the whole name \(docker\.io\/library\/busybox:1\)/ })
  t.throws(() => pullRefs('Bad!', conf()), { code: 'EUSAGE', message: /invalid image reference "Bad!"/ })
  t.throws(() => pullRefs('alpine@md5:x', conf()), { code: 'EUSAGE', message: /after "@" comes a sha256 digest/ })
})
