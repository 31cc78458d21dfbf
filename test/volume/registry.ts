// The plugin registry (lib/volume/registry.ts) and the built-in plugins' identities.
import t from 'tap'
import { PodctlError } from '../../lib/errors.js'
import { PluginRegistry } from '../../lib/volume/registry.js'
import { builtinPlugins, defaultRegistry } from '../../lib/volume/plugins/index.js'
import type { VolumePlugin, VolumeSpec } from '../../lib/volume/types.js'

const spec = (kind: string): VolumeSpec => ({ name: 'v', volume: { name: 'v', kind } as never })

t.test('each built-in kind is served by exactly one plugin', async (t) => {
  const reg = defaultRegistry()
  t.same(reg.names.sort(), ['podctl.io/empty', 'podctl.io/files', 'podctl.io/host', 'podctl.io/persistent'])
  for (const kind of ['empty', 'host', 'files', 'persistent']) {
    t.equal(reg.findPluginBySpec(spec(kind)).name, `podctl.io/${kind}`, kind)
    t.equal(reg.findPluginByName(`podctl.io/${kind}`).name, `podctl.io/${kind}`)
  }
})

t.test('no plugin: a clear error naming the volume and the plugins', async (t) => {
  const er = t.throws(() => defaultRegistry().findPluginBySpec(spec('tmpfs'))) as PodctlError
  t.type(er, PodctlError)
  t.match(er.message, /no volume plugin supports volume "v" \(kind "tmpfs"\); plugins: podctl\.io\/empty, podctl\.io\/host/)
  t.match((t.throws(() => new PluginRegistry().findPluginBySpec(spec('empty'))) as Error).message, /plugins: none/)
  t.match((t.throws(() => defaultRegistry().findPluginByName('x/y')) as Error).message, /no volume plugin named "x\/y"/)
})

t.test('more than one plugin: a clear error naming them', async (t) => {
  const greedy: VolumePlugin = { ...builtinPlugins[0]!, name: 'test/greedy', canSupport: () => true }
  const reg = new PluginRegistry([...builtinPlugins, greedy])
  const er = t.throws(() => reg.findPluginBySpec(spec('host'))) as PodctlError
  t.match(er.message, /volume "v" is supported by more than one plugin: podctl\.io\/host, test\/greedy/)
})

t.test('registering one name twice is a bug', async (t) => {
  t.throws(() => new PluginRegistry([builtinPlugins[0]!, builtinPlugins[0]!]), /bug: volume plugin podctl\.io\/empty registered twice/)
})
