// The mount plan (lib/volume/plan.ts): nesting, the MakeNestedMountpoints
// places, conflicts between apps, cycles, and the set-up order; and that
// manifest validation reports these problems with field paths.
import t from 'tap'
import type { PodManifest } from '../../lib/pod/manifest.js'
import { podManifestProblems as manifestProblems } from '../../lib/volume/manifest.js'
import { mountPoints, mountProblems, normalizeMountPath, planMounts, setUpOrder } from '../../lib/volume/plan.js'

type Kind = 'empty' | 'host' | 'files' | 'persistent'
const vol = (name: string, kind: Kind = 'empty'): NonNullable<PodManifest['volumes']>[number] =>
  kind === 'empty'
    ? { name, kind }
    : kind === 'host'
      ? { name, kind, source: '/srv' }
      : kind === 'files'
        ? { name, kind, files: { a: { content: 'x' } } }
        : { name, kind, claim: name }
const app = (name: string, mounts: [string, string][]) => ({ name, exec: ['/bin/true'], mounts: mounts.map(([volume, path]) => ({ volume, path })) })
const man = (volumes: ReturnType<typeof vol>[], apps: ReturnType<typeof app>[]): PodManifest => ({ apiVersion: 'podctl/v1', volumes, apps })

t.test('normalizeMountPath', async (t) => {
  t.equal(normalizeMountPath('/a//b/'), '/a/b')
  t.equal(normalizeMountPath('/a/./b'), '/a/b')
  t.equal(normalizeMountPath('/'), '/')
})

t.test('a mount below another mount of the same app is nested in the parent volume', async (t) => {
  const m = man([vol('data'), vol('cache'), vol('tmp')], [app('web', [['data', '/data'], ['cache', '/data/cache'], ['tmp', '/data/cache/tmp/x']])])
  const plan = planMounts(m)
  t.same(plan.map((p) => [p.volume, p.path, p.parent?.volume, p.parent?.rel]), [
    ['data', '/data', undefined, undefined],
    ['cache', '/data/cache', 'data', 'cache'],
    ['tmp', '/data/cache/tmp/x', 'cache', 'tmp/x'],
  ])
  t.same(
    mountPoints(plan).map((mp) => [mp.link, mp.volume]),
    [
      ['apps/web/data', 'data'],
      ['volumes/data/cache', 'cache'],
      ['volumes/cache/tmp/x', 'tmp'],
    ],
    'top-level mounts link from the app root, nested ones from inside the parent volume',
  )
  t.same(mountProblems(m), [])
  t.same(setUpOrder(m), ['data', 'cache', 'tmp'])
})

t.test('nesting is independent per app; a shared nested mount point is made once', async (t) => {
  const m = man(
    [vol('data'), vol('cache')],
    [app('a', [['data', '/data'], ['cache', '/data/cache']]), app('b', [['data', '/srv'], ['cache', '/srv/cache']]), app('c', [['cache', '/data']])],
  )
  const mps = mountPoints(planMounts(m))
  t.same(
    mps.map((mp) => [mp.link, mp.volume, mp.mounts.length]),
    [
      ['apps/a/data', 'data', 1],
      ['volumes/data/cache', 'cache', 2],
      ['apps/b/srv', 'data', 1],
      ['apps/c/data', 'cache', 1],
    ],
  )
  t.same(mountProblems(m), [])
})

t.test('set-up order puts parents first whatever the declaration order', async (t) => {
  const m = man([vol('inner'), vol('mid'), vol('outer'), vol('alone')], [app('a', [['outer', '/o'], ['mid', '/o/m'], ['inner', '/o/m/i']])])
  const order = setUpOrder(m)
  t.ok(order.indexOf('outer') < order.indexOf('mid') && order.indexOf('mid') < order.indexOf('inner'), order.join(','))
  t.same([...order].sort(), ['alone', 'inner', 'mid', 'outer'])
})

t.test('nesting is only allowed under empty volumes', async (t) => {
  for (const kind of ['host', 'files', 'persistent'] as const) {
    const m = man([vol('p', kind), vol('c')], [app('a', [['p', '/p'], ['c', '/p/c']])])
    t.match(manifestProblems(m), [{ path: 'apps[0].mounts[1].path', problem: new RegExp(`under apps\\[0\\]\\.mounts\\[0\\] \\("/p"\\), a ${kind} volume; mounts can be nested only under empty volumes`) }], kind)
  }
})

t.test('a volume nested in itself', async (t) => {
  const m = man([vol('d')], [app('a', [['d', '/d'], ['d', '/d/again']])])
  t.match(manifestProblems(m), [{ path: 'apps[0].mounts[1].path', problem: /mounts volume "d" inside itself/ }])
})

t.test('two apps that need the same place in a shared volume for different volumes conflict', async (t) => {
  const m = man([vol('data'), vol('x'), vol('y')], [app('a', [['data', '/d'], ['x', '/d/sub']]), app('b', [['data', '/e'], ['y', '/e/sub']])])
  t.strictSame(manifestProblems(m), [
    { path: 'apps[1].mounts[1].path', problem: 'conflicts with apps[0].mounts[1]: both need "sub" in volume "data", for volumes "x" and "y"' },
  ])
})

t.test('a nested mount point inside another nested mount point of the shared volume conflicts', async (t) => {
  const m = man([vol('data'), vol('x'), vol('y')], [app('a', [['data', '/d'], ['x', '/d/sub']]), app('b', [['data', '/e'], ['y', '/e/sub/deeper']])])
  t.match(manifestProblems(m), [{ path: 'apps[1].mounts[1].path', problem: /conflicts with apps\[0\]\.mounts\[1\]: "sub\/deeper" in volume "data" would be inside "sub", the mount point of volume "x"/ }])
})

t.test('nesting cycles are refused', async (t) => {
  const m = man([vol('p'), vol('q')], [app('a', [['p', '/p'], ['q', '/p/q']]), app('b', [['q', '/q'], ['p', '/q/p']])])
  t.match(manifestProblems(m), [{ path: /^apps\[\d\]\.mounts\[1\]\.path$/, problem: /nests volumes in a cycle \((p → q → p|q → p → q)\)/ }])
})

t.test('mount problems are only looked for in an otherwise valid manifest', async (t) => {
  const m = { ...man([vol('d')], [app('a', [['d', '/d'], ['d', '/d/again']])]), extra: 1 }
  t.same(
    manifestProblems(m).map((p) => p.path),
    ['extra'],
  )
})
