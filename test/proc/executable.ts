// lookPath (lib/proc/executable.ts): execvp's rules, the one PATH lookup of
// prepare (no working directory yet) and of the supervisor before spawning.
import t from 'tap'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]
import fs from 'node:fs'
import path from 'node:path'
import { lookPath } from '../../lib/proc/executable.js'

const checkExecutable = (file: string, cwd: string | undefined, env: NodeJS.ProcessEnv): void => void lookPath(file, cwd, env)

const setUp = (t: Test): { dir: string; bin: string; other: string } => {
  const dir = t.testdir({ bin: {}, other: {}, 'cwd-prog': '#!/bin/sh\n' })
  const bin = path.join(dir, 'bin')
  const other = path.join(dir, 'other')
  fs.writeFileSync(path.join(bin, 'prog'), '#!/bin/sh\n', { mode: 0o755 })
  fs.writeFileSync(path.join(bin, 'plain'), 'text\n', { mode: 0o644 })
  fs.writeFileSync(path.join(other, 'plain'), '#!/bin/sh\n', { mode: 0o755 })
  fs.mkdirSync(path.join(bin, 'adir'))
  fs.chmodSync(path.join(dir, 'cwd-prog'), 0o755)
  return { dir, bin, other }
}

t.test('a path with a slash is checked as it is, relative to the working directory', async (t) => {
  const { dir, bin } = setUp(t)
  t.doesNotThrow(() => checkExecutable(path.join(bin, 'prog'), '/', {}))
  t.doesNotThrow(() => checkExecutable('./bin/prog', dir, {}))
  t.throws(() => checkExecutable('./prog', dir, {}), { code: 'ENOENT', message: 'spawn ./prog ENOENT' })
  t.throws(() => checkExecutable(path.join(bin, 'missing'), '/', {}), { code: 'ENOENT' })
  t.throws(() => checkExecutable(path.join(bin, 'prog', 'x'), '/', {}), { code: 'ENOENT' }, 'a file as a directory')
  t.throws(() => checkExecutable(path.join(bin, 'plain'), '/', {}), { code: 'EACCES' }, 'not executable')
  t.throws(() => checkExecutable(path.join(bin, 'adir'), '/', {}), { code: 'EACCES' }, 'a directory')
  t.throws(() => checkExecutable('', '/', {}), { code: 'ENOENT' })
})

t.test('a bare name is looked up on PATH', async (t) => {
  const { dir, bin, other } = setUp(t)
  t.doesNotThrow(() => checkExecutable('prog', '/', { PATH: `/nonexistent:${bin}` }))
  t.throws(() => checkExecutable('prog', '/', { PATH: other }), { code: 'ENOENT', message: 'spawn prog ENOENT' })
  t.throws(() => checkExecutable('plain', '/', { PATH: bin }), { code: 'EACCES' }, 'found, not executable')
  t.doesNotThrow(() => checkExecutable('plain', '/', { PATH: `${bin}:${other}` }), 'a later entry that is executable wins')
  t.throws(() => checkExecutable('adir', '/', { PATH: bin }), { code: 'EACCES' })
  t.doesNotThrow(() => checkExecutable('cwd-prog', dir, { PATH: `${bin}:` }), 'an empty entry is the working directory')
  t.throws(() => checkExecutable('cwd-prog', dir, { PATH: bin }), { code: 'ENOENT' })
  t.doesNotThrow(() => checkExecutable('sh', '/', { PATH: '/usr/bin:/bin' }))
})

t.test('without PATH a bare name is left to the shell', async (t) => {
  t.doesNotThrow(() => checkExecutable('no-such-program-anywhere', '/', {}))
})
