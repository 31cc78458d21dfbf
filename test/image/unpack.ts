// Unpacking layers into a render (lib/image/unpack.ts, lib/image/render.ts)
// on a real file system: OCI whiteouts and opaque directories, hard links
// within and across layers, symlinks kept as written, modes, owners (and
// their shift into a user namespace), times, extended attributes (binary
// ones too), device nodes and fifos as root, and entries that replace
// what a lower layer put there.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { unpackImage, type LayerInput } from '../../lib/image/render.js'
import type { IdMap } from '../../lib/image/unpack.js'
import { layerTar, paxRecords, treeOf, type Entry } from '../helpers/images.js'
import type { Test } from '../helpers/common.js'

const ROOT = process.getuid?.() === 0

/** Unpacks the layers (lists of entries) into a new rootfs; returns its path. */
const unpack = async (t: Test, layers: Entry[][], opts: { idMap?: IdMap; maxBytes?: number } = {}): Promise<string> => {
  const dir = t.testdir({ blobs: {} })
  const inputs: LayerInput[] = []
  for (const [i, entries] of layers.entries()) {
    const p = path.join(dir, 'blobs', String(i))
    fs.writeFileSync(p, await layerTar(entries))
    inputs.push({ hex: String(i).padStart(64, '0'), mediaType: 'application/vnd.oci.image.layer.v1.tar', path: p })
  }
  const rootfs = path.join(dir, 'rootfs')
  fs.mkdirSync(rootfs)
  await unpackImage(rootfs, inputs, { image: 'test', maxBytes: opts.maxBytes ?? 1e9, ...(opts.idMap ? { idMap: opts.idMap } : {}) })
  return rootfs
}

t.test('whiteouts remove what lower layers put there, and only that', async (t) => {
  const root = await unpack(t, [
    [{ name: 'a/', type: 'directory' }, { name: 'a/x', content: 'x' }, { name: 'a/y', content: 'y' }, { name: 'b/', type: 'directory' }, { name: 'b/z', content: 'z' }, { name: 'c', type: 'symlink', linkname: 'a' }],
    [{ name: 'a/.wh.x' }, { name: '.wh.b' }, { name: '.wh.c' }, { name: 'a/.wh.nothing' }, { name: 'new', content: 'n' }, { name: '.wh.new' }],
  ])
  t.strictSame(treeOf(root), ['d a', 'f a/y', 'f new'], 'a/x, b (a whole tree) and the link c are gone; a whiteout of this layer\'s own entry hides nothing')
})

t.test('an opaque directory hides its lower contents, not what its own layer put there', async (t) => {
  const root = await unpack(t, [
    [{ name: 'd/', type: 'directory' }, { name: 'd/old', content: 'o' }, { name: 'd/sub/', type: 'directory' }, { name: 'd/sub/deep', content: 'd' }, { name: 'keep', content: 'k' }],
    [{ name: 'd/', type: 'directory' }, { name: 'd/first', content: 'f' }, { name: 'd/.wh..wh..opq' }, { name: 'd/after', content: 'a' }, { name: 'd/.wh..wh.plnk' }],
  ])
  t.strictSame(treeOf(root), ['d d', 'f d/after', 'f d/first', 'f keep'])
})

t.test('hard links within a layer and across layers share the inode; symlinks are kept as written', async (t) => {
  const root = await unpack(t, [
    [{ name: 'f', content: 'data', mode: 0o640 }, { name: 'h', type: 'link', linkname: 'f' }, { name: 'abs', type: 'symlink', linkname: '/etc/passwd' }, { name: 'rel', type: 'symlink', linkname: '../../x' }],
    [{ name: 'dir/', type: 'directory' }, { name: 'dir/h2', type: 'link', linkname: './f' }, { name: 'lnk', type: 'link', linkname: 'abs' }],
  ])
  const ino = fs.statSync(path.join(root, 'f')).ino
  t.equal(fs.statSync(path.join(root, 'h')).ino, ino)
  t.equal(fs.statSync(path.join(root, 'dir/h2')).ino, ino)
  t.equal(fs.statSync(path.join(root, 'f')).nlink, 3)
  t.equal(fs.readlinkSync(path.join(root, 'abs')), '/etc/passwd', 'an absolute target is stored, never followed')
  t.equal(fs.readlinkSync(path.join(root, 'rel')), '../../x')
  t.equal(fs.lstatSync(path.join(root, 'lnk')).ino, fs.lstatSync(path.join(root, 'abs')).ino, 'a hard link to a symlink links the symlink')
})

t.test('modes and times; directories get theirs after their contents', async (t) => {
  const mtime = new Date('2020-05-06T07:08:09Z')
  const root = await unpack(t, [
    [
      { name: 'ro/', type: 'directory', mode: 0o555, mtime },
      { name: 'ro/inside', content: 'x', mode: 0o600, mtime },
      { name: 'exec', content: '#!/bin/sh\n', mode: 0o755, mtime },
      { name: 'sticky/', type: 'directory', mode: 0o1777 },
    ],
  ])
  t.equal(fs.statSync(path.join(root, 'ro')).mode & 0o7777, 0o555, 'a read-only directory, filled first')
  t.equal(fs.statSync(path.join(root, 'ro')).mtime.getTime(), mtime.getTime(), 'its time is the image\'s, not the time its file was made')
  t.equal(fs.statSync(path.join(root, 'ro/inside')).mode & 0o7777, 0o600)
  t.equal(fs.statSync(path.join(root, 'exec')).mode & 0o7777, 0o755)
  t.equal(fs.statSync(path.join(root, 'exec')).mtime.getTime(), mtime.getTime())
  t.equal(fs.statSync(path.join(root, 'sticky')).mode & 0o7777, 0o1777)
})

t.test('as root: owners, setuid, devices and fifos', { skip: ROOT ? false : 'needs root' }, async (t) => {
  const root = await unpack(t, [
    [
      { name: 'home/', type: 'directory', uid: 1000, gid: 1000 },
      { name: 'home/u', content: 'x', uid: 1000, gid: 1001 },
      { name: 'su', content: 'x', mode: 0o4755, uid: 0, gid: 0 },
      { name: 'sgid', content: 'x', mode: 0o2755, uid: 5, gid: 5 },
      { name: 'null', type: 'character-device', devmajor: 1, devminor: 3, mode: 0o666 },
      { name: 'pipe', type: 'fifo', mode: 0o600 },
      { name: 'l', type: 'symlink', linkname: 'x', uid: 7, gid: 8 },
    ],
  ])
  const st = (p: string) => fs.lstatSync(path.join(root, p))
  t.strictSame([st('home').uid, st('home').gid], [1000, 1000])
  t.strictSame([st('home/u').uid, st('home/u').gid], [1000, 1001])
  t.equal(st('su').mode & 0o7777, 0o4755, 'setuid survives the chown (set after it)')
  t.equal(st('sgid').mode & 0o7777, 0o2755)
  t.ok(st('null').isCharacterDevice())
  t.equal(st('null').rdev, fs.statSync('/dev/null').rdev)
  t.ok(st('pipe').isFIFO())
  t.equal(st('pipe').mode & 0o777, 0o600)
  t.strictSame([st('l').uid, st('l').gid], [7, 8], 'a symlink\'s own owner')
})

t.test('owners shifted into a user namespace (userns: private, rootless)', { skip: ROOT ? false : 'needs root' }, async (t) => {
  const idMap = { uid: 100000, gid: 200000, size: 65536 }
  const root = await unpack(t, [[{ name: 'r', content: 'x' }, { name: 'u/', type: 'directory', uid: 1000, gid: 1000 }, { name: 'u/f', content: 'x', uid: 1000, gid: 50 }]], { idMap })
  const st = (p: string) => fs.lstatSync(path.join(root, p))
  t.strictSame([st('r').uid, st('r').gid], [100000, 200000], 'the image\'s root is the namespace\'s root')
  t.strictSame([st('u').uid, st('u').gid], [101000, 201000])
  t.strictSame([st('u/f').uid, st('u/f').gid], [101000, 200050])
  t.strictSame([st('.').uid, st('.').gid], [0, 0], 'the render\'s own root is podctl\'s: only entries of the image are shifted')
  await t.rejects(unpack(t, [[{ name: 'f', content: 'x', uid: 70000 }]], { idMap }), /its owner 70000:0 is outside the 65536 ids of the user namespace/)
})

t.test('extended attributes: text and binary values, set where the file system takes them', { skip: spawnSync('sh', ['-c', 'command -v getfattr']).status === 0 ? false : 'getfattr (the attr package) is not installed' }, async (t) => {
  const binary = Buffer.from([0x00, 0x80, 0xff, 0x7f, 0xc3, 0x28])
  const root = await unpack(t, [
    [
      { name: 'PaxHeaders/f', type: 'pax-header', content: paxRecords({ 'SCHILY.xattr.user.bin': binary, 'SCHILY.xattr.user.text': Buffer.from('hello') }) },
      { name: 'f', content: 'x' },
      { name: 'PaxHeaders/d', type: 'pax-header', content: paxRecords({ 'SCHILY.xattr.user.dir': Buffer.from('on a dir') }) },
      { name: 'd/', type: 'directory' },
      { name: 'PaxHeaders/s', type: 'pax-header', content: paxRecords({ 'SCHILY.xattr.security.selinux': Buffer.from('system_u:object_r:etc_t:s0') }) },
      { name: 's', content: 'x' },
    ],
  ])
  const get = (p: string, name: string): string => spawnSync('getfattr', ['--only-values', '-e', 'hex', '-n', name, path.join(root, p)], { encoding: 'latin1' }).stdout
  const probe = spawnSync('setfattr', ['-n', 'user.probe', '-v', 'x', root])
  if (probe.status !== 0) return void t.comment('this file system takes no user.* attributes: nothing more to check')
  t.equal(Buffer.from(get('f', 'user.bin'), 'latin1').toString('hex'), binary.toString('hex'), 'a binary value byte for byte')
  t.equal(get('f', 'user.text'), 'hello')
  t.equal(get('d', 'user.dir'), 'on a dir')
  t.notMatch(spawnSync('getfattr', ['-d', '-m', '-', path.join(root, 's')], { encoding: 'utf8' }).stdout, /selinux/, 'an image\'s SELinux label is not the host\'s to take')
})

t.test('an entry replaces what is at its path: a file over a directory tree, a directory over a file or a link', async (t) => {
  const root = await unpack(t, [
    [{ name: 'a/', type: 'directory' }, { name: 'a/deep/', type: 'directory' }, { name: 'a/deep/f', content: 'x' }, { name: 'b', content: 'file' }, { name: 'c', type: 'symlink', linkname: '/tmp' }, { name: 'e/', type: 'directory' }, { name: 'e/kept', content: 'k' }],
    [{ name: 'a', content: 'now a file' }, { name: 'b/', type: 'directory' }, { name: 'b/in', content: 'i' }, { name: 'c/', type: 'directory', mode: 0o700 }, { name: 'e/', type: 'directory', mode: 0o750 }],
  ])
  t.strictSame(treeOf(root), ['d b', 'd c', 'd e', 'f a', 'f b/in', 'f e/kept'])
  t.equal(fs.readFileSync(path.join(root, 'a'), 'utf8'), 'now a file')
  t.equal(fs.statSync(path.join(root, 'e')).mode & 0o777, 0o750, 'a directory entry over a directory keeps its contents and takes its mode')
})

t.test('parent directories an archive leaves out are made (0755)', async (t) => {
  const root = await unpack(t, [[{ name: 'x/y/z', content: 'z' }]])
  t.equal(fs.readFileSync(path.join(root, 'x/y/z'), 'utf8'), 'z')
  t.equal(fs.statSync(path.join(root, 'x/y')).mode & 0o777, 0o755)
})
