// removeTree (lib/fs/remove-tree.ts) never follows a symlink, and a pod
// whose path is a symlink is never resolved, followed or deleted through.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import type { PodctlError } from '../../lib/errors.js'
import { removeTree } from '../../lib/fs/remove-tree.js'
import { ensureDataDir } from '../../lib/pod/layout.js'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { removePod } from '../../lib/pod/gc.js'
import { whereIs } from '../helpers/common.js'

/** Every path under `root` (relative, sorted), without following links. */
const listTree = (root: string): string[] => {
  const out: string[] = []
  const walk = (d: string, rel: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name
      out.push(e.isSymbolicLink() ? `${r} -> ${fs.readlinkSync(path.join(d, e.name))}` : e.isDirectory() ? `${r}/` : r)
      if (e.isDirectory()) walk(path.join(d, e.name), r)
    }
  }
  walk(root, '')
  return out.sort()
}

const OUTSIDE = {
  'a.txt': 'a',
  sub: { 'b.txt': 'b', deeper: { 'c.txt': 'c' } },
  empty: {},
}

t.test('removes a plain tree', async (t) => {
  const root = t.testdir({ tree: { f: 'x', d: { g: 'y', e: {}, dd: { h: 'z' } }, '.hidden': 'h' } })
  removeTree(path.join(root, 'tree'))
  t.equal(fs.existsSync(path.join(root, 'tree')), false)
})

t.test('a deep tree', async (t) => {
  const root = t.testdir({})
  let p = path.join(root, 'tree')
  for (let i = 0; i < 200; i++) p = path.join(p, 'd')
  fs.mkdirSync(p, { recursive: true })
  fs.writeFileSync(path.join(p, 'f'), 'x')
  removeTree(path.join(root, 'tree'))
  t.equal(fs.existsSync(path.join(root, 'tree')), false)
})

t.test('never follows a symlink inside the tree', async (t) => {
  const root = t.testdir({ outside: OUTSIDE, tree: { own: 'x', nested: { own2: 'y' } } })
  const outside = path.join(root, 'outside')
  const before = listTree(outside)
  const tree = path.join(root, 'tree')
  fs.symlinkSync(outside, path.join(tree, 'to-dir'))
  fs.symlinkSync(path.join(outside, 'sub'), path.join(tree, 'nested', 'to-sub'))
  fs.symlinkSync(path.join(outside, 'a.txt'), path.join(tree, 'to-file'))
  fs.symlinkSync('../outside', path.join(tree, 'relative'))
  fs.symlinkSync(path.join(root, 'nowhere'), path.join(tree, 'dangling'))
  fs.symlinkSync(tree, path.join(tree, 'loop'))
  removeTree(tree)
  t.equal(fs.existsSync(tree), false, 'the tree is gone, links included')
  t.strictSame(listTree(outside), before, 'everything outside still exists')
  t.equal(fs.readFileSync(path.join(outside, 'sub', 'deeper', 'c.txt'), 'utf8'), 'c')
})

t.test('a root that is a symlink: only the link goes', async (t) => {
  const root = t.testdir({ outside: OUTSIDE })
  const outside = path.join(root, 'outside')
  const before = listTree(outside)
  fs.symlinkSync(outside, path.join(root, 'link'))
  removeTree(path.join(root, 'link'))
  t.equal(fs.existsSync(path.join(root, 'link')), false)
  t.strictSame(listTree(outside), before)
})

t.test('a missing root is not an error; a file root is unlinked', async (t) => {
  const root = t.testdir({ f: 'x' })
  t.doesNotThrow(() => removeTree(path.join(root, 'missing')))
  removeTree(path.join(root, 'f'))
  t.equal(fs.existsSync(path.join(root, 'f')), false)
})

t.test('Pod.remove() of a pod with a symlink inside deletes nothing outside', async (t) => {
  const root = t.testdir({ outside: OUTSIDE })
  const outside = path.join(root, 'outside')
  const before = listTree(outside)
  const dir = path.join(root, 'data')
  ensureDataDir(dir)
  const uuid = '8c3b1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'
  const podDir = path.join(dir, 'pods', 'garbage', uuid)
  fs.mkdirSync(path.join(podDir, 'apps', 'main'), { recursive: true })
  fs.symlinkSync(outside, path.join(podDir, 'apps', 'main', 'data'))
  fs.symlinkSync('/', path.join(podDir, 'root'))
  podFromUUIDString(dir, uuid).remove()
  t.equal(whereIs(dir, uuid), undefined)
  t.strictSame(listTree(outside), before)
})

t.test('a pod path that is a symlink: refused (EFAILED), nothing deleted', async (t) => {
  const root = t.testdir({ outside: { ...OUTSIDE, 'pod.json': '{}' } })
  const outside = path.join(root, 'outside')
  const before = listTree(outside)
  const dir = path.join(root, 'data')
  ensureDataDir(dir)
  for (const d of ['prepared', 'run', 'exited-garbage', 'garbage'] as const) {
    const uuid = `${d === 'run' ? '1' : d === 'prepared' ? '2' : d === 'garbage' ? '3' : '4'}b8c1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a`
    const link = path.join(dir, 'pods', d, uuid)
    fs.symlinkSync(outside, link)
    t.throws(() => podFromUUIDString(dir, uuid), { code: 'EFAILED', message: /symlink.*never follows or deletes through it/, hint: /by hand/ }, `${d}: full uuid`)
    t.throws(() => podFromUUIDString(dir, uuid.slice(0, 6)), { code: 'EFAILED' }, `${d}: prefix`)
    t.ok(fs.lstatSync(link).isSymbolicLink(), `${d}: the link is left as it is`)
  }
  t.strictSame(listTree(outside), before, 'everything outside still exists')
})

t.test('a pod dir replaced by a symlink after it was loaded is not deleted through', async (t) => {
  const root = t.testdir({ outside: OUTSIDE })
  const outside = path.join(root, 'outside')
  const before = listTree(outside)
  const dir = path.join(root, 'data')
  ensureDataDir(dir)
  const uuid = '8c3b1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'
  const podDir = path.join(dir, 'pods', 'garbage', uuid)
  fs.mkdirSync(podDir)
  const pod = podFromUUIDString(dir, uuid)
  fs.rmdirSync(podDir)
  fs.symlinkSync(outside, podDir)
  try {
    removePod(pod)
  } catch {
    // refusing is fine too; deleting through the link is not
  }
  t.strictSame(listTree(outside), before, 'everything outside still exists')
})

t.test('never enters another file system (like rm --one-file-system): it stays, named, and all else goes', async (t) => {
  if (process.getuid?.() !== 0) return t.plan(0, 'skipped: mounting a tmpfs needs root; this run is not root')
  const root = t.testdir({ tree: { f: 'x', apps: { web: { mnt: {} }, other: { g: 'y' } } } })
  const mnt = path.join(root, 'tree/apps/web/mnt')
  const mount = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt])
  if (mount.status !== 0) return t.plan(0, `skipped: cannot mount a tmpfs here: ${String(mount.stderr).trim()}`)
  t.teardown(() => spawnSync('umount', [mnt]))
  fs.writeFileSync(path.join(mnt, 'kept.txt'), 'on the other file system')
  const er = t.throws(() => removeTree(path.join(root, 'tree'))) as PodctlError
  t.equal(er.code, 'EFAILED')
  t.match(er.message, `${mnt}`, 'the message names the mount point')
  t.match(er.message, /another file system/)
  t.equal(fs.readFileSync(path.join(mnt, 'kept.txt'), 'utf8'), 'on the other file system', 'nothing on the other file system is touched')
  t.same(listTree(path.join(root, 'tree')), ['apps/', 'apps/web/', 'apps/web/mnt/', 'apps/web/mnt/kept.txt'], 'everything else is gone')
  spawnSync('umount', [mnt])
  removeTree(path.join(root, 'tree'))
  t.equal(fs.existsSync(path.join(root, 'tree')), false, 'once unmounted, the rest goes too')
})
