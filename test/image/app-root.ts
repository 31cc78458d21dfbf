// What the runtime gets from the image room (lib/image/render.ts,
// lib/image/app-root.ts): a render made once and found again, one per id
// map; an app's writable root over it, an overlay (as root) or a copy,
// that never changes the render; and the teardown that rm and gc run, so
// that a pod whose app root is still mounted is deleted cleanly.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { prepareAppRoot, tearDownAppRoot, appRootKind } from '../../lib/image/app-root.js'
import { ensureRender, renderKey } from '../../lib/image/render.js'
import { mountPoints } from '../../lib/fs/mounts.js'
import { podctl } from '../helpers/cli-util.js'
import type { Test } from '../helpers/common.js'
import { OS_RELEASE, buildBusyboxImage, missingTools, treeOf } from '../helpers/images.js'

const missing = missingTools()
if (missing !== undefined) {
  t.comment(`skipped: ${missing}`)
  process.exit(0)
}
const ROOT = process.getuid?.() === 0

const fixtures = t.testdir({})
const built = buildBusyboxImage(fixtures)

/** A data dir with the busybox image imported; its digest. */
const imported = (t: Test): { dir: string; digest: string } => {
  const dir = path.join(t.testdir({}), 'data')
  const r = podctl(dir, ['image', 'import', built.layout, '--name', 'busybox'])
  t.equal(r.status, 0, r.stderr)
  return { dir, digest: r.stdout.trim() }
}

/** A prepared pod's directory, where the runtime would put its apps' roots. */
const podDir = (t: Test, dir: string): { uuid: string; path: string } => {
  const r = podctl(dir, ['prepare', '--', '/bin/true'])
  t.equal(r.status, 0, r.stderr)
  const uuid = r.stdout.trim()
  return { uuid, path: path.join(dir, 'pods', 'prepared', uuid) }
}

const mountedBelow = (p: string): string[] => mountPoints().filter((m) => m.startsWith(`${fs.realpathSync(p)}/`))

t.test('ensureRender finds the render an import made, and makes one per id map', async (t) => {
  const { dir, digest } = imported(t)
  const r = await ensureRender(dir, digest)
  t.equal(r.key, digest.slice(7))
  t.equal(fs.readFileSync(path.join(r.rootfs, 'etc/os-release'), 'utf8'), OS_RELEASE)
  const before = fs.statSync(r.rootfs).ino
  t.equal(fs.statSync((await ensureRender(dir, digest)).rootfs).ino, before, 'found again, not made again')
  fs.rmSync(path.join(dir, 'images', 'renders', r.key), { recursive: true })
  const again = await ensureRender(dir, digest)
  t.equal(fs.readFileSync(path.join(again.rootfs, 'etc/os-release'), 'utf8'), OS_RELEASE, 'a render that went is made again from the blobs')
  if (ROOT) {
    const idMap = { uid: 100000, gid: 100000, size: 65536 }
    const shifted = await ensureRender(dir, digest, { idMap })
    t.equal(shifted.key, renderKey(digest.slice(7), idMap))
    t.equal(fs.statSync(path.join(shifted.rootfs, 'etc/os-release')).uid, 100000, "root's files belong to the namespace's root")
    t.equal(fs.statSync(path.join(shifted.rootfs, 'srv/data')).uid, 101000)
  }
  await t.rejects(ensureRender(dir, `sha256:${'a'.repeat(64)}`), { code: 'ENOIMAGE' })
})

t.test('an overlay app root (as root): writes go to the pod, the render never changes', { skip: ROOT ? false : 'mounting an overlay needs root' }, async (t) => {
  const { dir, digest } = imported(t)
  const render = await ensureRender(dir, digest)
  const renderTree = treeOf(render.rootfs)
  const pod = podDir(t, dir)
  const appDir = path.join(pod.path, 'roots', 'app')
  fs.mkdirSync(appDir, { recursive: true })
  const root = prepareAppRoot(render, appDir)
  t.teardown(() => tearDownAppRoot(appDir))
  if (root.kind !== 'overlay') return void t.comment('overlayfs cannot be mounted here: the copy test covers this machine')
  t.equal(root.rootfs, path.join(appDir, 'rootfs'))
  t.strictSame(mountedBelow(pod.path), [root.rootfs], 'mounted where it says')
  t.equal(fs.readFileSync(path.join(root.rootfs, 'etc/os-release'), 'utf8'), OS_RELEASE)
  fs.writeFileSync(path.join(root.rootfs, 'etc/os-release'), 'changed by the app\n')
  fs.writeFileSync(path.join(root.rootfs, 'new'), 'x')
  fs.rmSync(path.join(root.rootfs, 'srv/data'))
  t.equal(fs.readFileSync(path.join(appDir, 'upper/etc/os-release'), 'utf8'), 'changed by the app\n', 'the change is in the pod\'s upper layer')
  t.equal(fs.readFileSync(path.join(render.rootfs, 'etc/os-release'), 'utf8'), OS_RELEASE, 'the render is unchanged')
  t.strictSame(treeOf(render.rootfs), renderTree)
  t.equal(prepareAppRoot(render, appDir).kind, 'overlay', 'a second call finds it made')
  t.equal(appRootKind(appDir), 'overlay')
  tearDownAppRoot(appDir)
  t.strictSame(mountedBelow(pod.path), [], 'unmounted')
  t.ok(fs.existsSync(path.join(appDir, 'upper', 'new')), 'the upper layer stays until the pod goes')
})

t.test('a copy app root where an overlay is not wanted (or cannot be): the render never changes', async (t) => {
  const { dir, digest } = imported(t)
  const render = await ensureRender(dir, digest)
  const pod = podDir(t, dir)
  const appDir = path.join(pod.path, 'roots', 'app')
  fs.mkdirSync(appDir, { recursive: true })
  const root = prepareAppRoot(render, appDir, { prefer: 'copy' })
  t.equal(root.kind, 'copy')
  t.strictSame(treeOf(root.rootfs), treeOf(render.rootfs), 'the whole image')
  const st = fs.statSync(path.join(root.rootfs, 'srv/data'))
  t.equal(st.mode & 0o777, 0o640)
  if (ROOT) t.strictSame([st.uid, st.gid], [1000, 1000], 'owners kept')
  t.equal(fs.statSync(path.join(root.rootfs, 'srv/hardlink')).ino, st.ino, 'hard links kept')
  t.not(st.ino, fs.statSync(path.join(render.rootfs, 'srv/data')).ino, 'a copy, not the render\'s files')
  fs.writeFileSync(path.join(root.rootfs, 'etc/os-release'), 'changed\n')
  t.equal(fs.readFileSync(path.join(render.rootfs, 'etc/os-release'), 'utf8'), OS_RELEASE)
  t.equal(appRootKind(appDir), 'copy')
  t.equal(prepareAppRoot(render, appDir).kind, 'copy', 'a second call finds it made')
  t.strictSame(fs.readdirSync(appDir), ['rootfs'], 'no temporary copy left')
})

t.test('rm and gc delete a pod whose app root is still mounted: unmounted first, the render kept', { skip: ROOT ? false : 'mounting an overlay needs root' }, async (t) => {
  const { dir, digest } = imported(t)
  const render = await ensureRender(dir, digest)
  const mounted = (): { uuid: string; path: string } => {
    const pod = podDir(t, dir)
    const appDir = path.join(pod.path, 'roots', 'app')
    fs.mkdirSync(appDir, { recursive: true })
    prepareAppRoot(render, appDir)
    fs.writeFileSync(path.join(appDir, 'rootfs', 'scratch'), 'x')
    return pod
  }
  const a = mounted()
  if (mountedBelow(a.path).length === 0) return void t.comment('overlayfs cannot be mounted here')
  const rm = podctl(dir, ['rm', a.uuid])
  t.equal(rm.status, 0, rm.stderr)
  t.notOk(fs.existsSync(a.path), 'rm: the pod is gone')
  t.strictSame(mountedBelow(dir), [], 'and nothing is left mounted')
  const b = mounted()
  t.equal(podctl(dir, ['gc', '--expire-prepared', '0s', '--grace-period', '0s']).status, 0)
  t.notOk(fs.existsSync(b.path), 'gc: the pod is gone')
  t.strictSame(mountedBelow(dir), [])
  t.equal(fs.readFileSync(path.join(render.rootfs, 'etc/os-release'), 'utf8'), OS_RELEASE, 'the render is whole')
  t.notOk(fs.existsSync(path.join(render.rootfs, 'scratch')))
  t.equal(spawnSync('true').status, 0)
})
