// No-follow file operations below a root (lib/fs/inside.ts).
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../../lib/errors.js'
import { ensureLink, mkdirsInside, removeLink, resolveInside } from '../../lib/fs/inside.js'

t.test('resolveInside: only through real directories', async (t) => {
  const dir = t.testdir({ root: { a: { b: {} }, f: 'file' }, outside: { x: {} } })
  const root = path.join(dir, 'root')
  fs.symlinkSync(path.join(dir, 'outside'), path.join(root, 'link'))
  t.equal(resolveInside(root, 'a/b/c'), path.join(root, 'a/b/c'), 'the leaf need not exist')
  t.equal(resolveInside(root, ''), root)
  t.equal(resolveInside(root, 'link'), path.join(root, 'link'), 'the leaf itself may be a link')
  t.equal(resolveInside(root, 'link/x'), undefined, 'never through a link')
  t.equal(resolveInside(root, 'f/x'), undefined, 'never through a file')
  t.equal(resolveInside(root, 'nope/x'), undefined)
  t.throws(() => resolveInside(root, '../x'), /bug/)
  t.throws(() => resolveInside(root, '/abs'), /bug/)
})

t.test('mkdirsInside creates, and refuses links and files on the way', async (t) => {
  const dir = t.testdir({ root: { f: 'file' }, outside: {} })
  const root = path.join(dir, 'root')
  fs.symlinkSync(path.join(dir, 'outside'), path.join(root, 'link'))
  t.equal(mkdirsInside(root, 'a/b/c'), path.join(root, 'a/b/c'))
  t.ok(fs.statSync(path.join(root, 'a/b/c')).isDirectory())
  mkdirsInside(root, 'a/b/c') // again: fine
  t.match((t.throws(() => mkdirsInside(root, 'link/x')) as PodctlError).message, /is a symlink; podctl does not follow or replace it/)
  t.match((t.throws(() => mkdirsInside(root, 'f/x')) as PodctlError).message, /is not a directory/)
  t.same(fs.readdirSync(path.join(dir, 'outside')), [])
})

t.test('ensureLink is idempotent and never replaces what is not its link', async (t) => {
  const dir = t.testdir({ root: { taken: 'file', d: {} } })
  const root = path.join(dir, 'root')
  ensureLink(root, 'x/y/mnt', '/target')
  ensureLink(root, 'x/y/mnt', '/target')
  t.equal(fs.readlinkSync(path.join(root, 'x/y/mnt')), '/target')
  t.throws(() => ensureLink(root, 'x/y/mnt', '/other'), /already exists \(a symlink to \/target\)/)
  t.throws(() => ensureLink(root, 'taken', '/t'), /already exists \(a file\)/)
  t.throws(() => ensureLink(root, 'd', '/t'), /already exists \(a directory\)/)
  t.equal(fs.readFileSync(path.join(root, 'taken'), 'utf8'), 'file')
})

t.test('removeLink removes only a link (with the expected target), never through one', async (t) => {
  const dir = t.testdir({ root: { f: 'file', d: {} }, outside: { mnt: 'victim' } })
  const root = path.join(dir, 'root')
  ensureLink(root, 'a/mnt', '/t')
  t.equal(removeLink(root, 'a/mnt', '/other'), false, 'another target: left alone')
  t.equal(removeLink(root, 'a/mnt', '/t'), true)
  t.equal(removeLink(root, 'a/mnt', '/t'), false, 'already gone')
  t.equal(removeLink(root, 'f'), false, 'a file is not removed')
  t.equal(removeLink(root, 'd'), false, 'a directory is not removed')
  fs.symlinkSync(path.join(dir, 'outside'), path.join(root, 'via'))
  t.equal(removeLink(root, 'via/mnt'), false, 'not through a link')
  t.equal(fs.readFileSync(path.join(dir, 'outside/mnt'), 'utf8'), 'victim')
})
