// The data dir (CONTRACT §1, lib/pod/layout.ts): where it is, its layout
// and modes, and refusing a data dir that is not a directory.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { v4 } from 'uuid'
import { POD_DIRS, checkLayout, dataDirExists, ensureDataDir, isPodUUID, locksDir, podPath, registerDataDirFolders, resolveDataDir, stateDirPath } from '../../lib/pod/layout.js'

t.test('resolveDataDir: --dir > PODCTL_DIR > /var/lib/podctl for root > XDG_DATA_HOME > HOME', async (t) => {
  const env = { PODCTL_DIR: '/env/dir', XDG_DATA_HOME: '/xdg', HOME: '/home/u' }
  t.equal(resolveDataDir('/flag', env, 1000), '/flag')
  t.equal(resolveDataDir('rel', env, 1000), path.resolve('rel'), 'a relative --dir is made absolute')
  t.throws(() => resolveDataDir('', env, 1000), { code: 'EUSAGE', message: '--dir is empty' }, 'an empty --dir is a mistake, not the default')
  t.equal(resolveDataDir(undefined, env, 1000), '/env/dir')
  t.equal(resolveDataDir(undefined, env, 0), '/env/dir', 'PODCTL_DIR wins over root')
  t.throws(() => resolveDataDir(undefined, { ...env, PODCTL_DIR: '' }, 0), { code: 'EUSAGE', message: 'PODCTL_DIR is set but empty' })
  t.equal(resolveDataDir(undefined, { XDG_DATA_HOME: '/xdg' }, 0), '/var/lib/podctl', 'root')
  t.equal(resolveDataDir(undefined, { XDG_DATA_HOME: '/xdg', HOME: '/home/u' }, 1000), '/xdg/podctl')
  t.equal(resolveDataDir(undefined, { HOME: '/home/u' }, 1000), '/home/u/.local/share/podctl')
  t.equal(resolveDataDir(undefined, { XDG_DATA_HOME: '', HOME: '/home/u' }, 1000), '/home/u/.local/share/podctl', 'an empty XDG_DATA_HOME is unset')
})

t.test('paths', async (t) => {
  const u = '8c3b1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'
  t.equal(stateDirPath('/d', 'exited-garbage'), '/d/pods/exited-garbage')
  t.equal(podPath('/d', 'run', u), `/d/pods/run/${u}`)
  t.equal(locksDir('/d'), '/d/locks')
  t.strictSame([...POD_DIRS], ['embryo', 'prepare', 'prepared', 'run', 'exited-garbage', 'garbage'])
})

t.test('isPodUUID: RFC 4122 version 4, lower case, and nothing else', async (t) => {
  t.ok(isPodUUID('8c3b1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'))
  t.ok(Array.from({ length: 1000 }, () => v4()).every(isPodUUID), "uuid's v4 makes them")
  const u = '8c3b1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'
  const bad = [u.toUpperCase(), '8c3b1f0e-2a4d-1c4b-9a57-0d7c4b1e2f3a', '8c3b1f0e-2a4d-4c4b-7a57-0d7c4b1e2f3a', `${u}0`, u.slice(1), '00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '', '../../etc/passwd']
  for (const b of bad) t.notOk(isPodUUID(b), JSON.stringify(b))
})

t.test('ensureDataDir creates the layout, 0750, and is idempotent', async (t) => {
  const dir = path.join(t.testdir({}), 'a', 'b', 'data')
  t.equal(dataDirExists(dir), false)
  ensureDataDir(dir)
  t.equal(dataDirExists(dir), true)
  t.equal(fs.statSync(dir).mode & 0o777, 0o750)
  for (const sub of ['pods', ...POD_DIRS.map((d) => `pods/${d}`), 'locks']) {
    t.equal(fs.statSync(path.join(dir, sub)).mode & 0o777, 0o750, `${sub} is 0750`)
  }
  t.strictSame(fs.readdirSync(dir).sort(), ['locks', 'pods'])
  t.doesNotThrow(() => ensureDataDir(dir), 'again: nothing to do')
})

t.test('ensureDataDir completes a partial layout', async (t) => {
  const dir = t.testdir({ pods: { run: {} } })
  ensureDataDir(dir)
  for (const d of POD_DIRS) t.ok(fs.statSync(stateDirPath(dir, d)).isDirectory(), d)
  t.ok(fs.statSync(locksDir(dir)).isDirectory())
})

t.test('a data dir that is a file, or under a file, is refused with EFAILED', async (t) => {
  const root = t.testdir({ file: 'x' })
  const file = path.join(root, 'file')
  t.throws(() => ensureDataDir(file), { code: 'EFAILED', message: `data dir ${file} is not a directory`, hint: /--dir or PODCTL_DIR/ })
  t.throws(() => ensureDataDir(path.join(file, 'sub')), { code: 'EFAILED', message: /is not a directory/ })
  t.throws(() => dataDirExists(file), { code: 'EFAILED', message: /is not a directory/ })
  t.equal(fs.readFileSync(file, 'utf8'), 'x', 'the file is left alone')
})

t.test('a state dir that is a file is refused', async (t) => {
  const dir = t.testdir({ pods: { run: 'not a dir' } })
  let err: unknown
  try {
    ensureDataDir(dir)
  } catch (er) {
    err = er
  }
  t.match(err, { code: 'EFAILED', message: /pods\/run/ }, 'EFAILED naming the broken state dir')
})


t.test('checkLayout: the pod room\'s directories, and those a room above registered', async (t) => {
  const dir = t.testdir({ outside: {} })
  ensureDataDir(dir)
  fs.symlinkSync(path.join(dir, 'outside'), path.join(dir, 'not-yet-registered'))
  t.doesNotThrow(() => checkLayout(dir), 'a directory no room registered is not looked at')
  registerDataDirFolders('not-yet-registered')
  t.throws(() => checkLayout(dir), { code: 'EFAILED', message: /not-yet-registered is a symlink: data dir .* is damaged/ }, 'once registered, it is checked')
  fs.unlinkSync(path.join(dir, 'not-yet-registered'))
  t.doesNotThrow(() => checkLayout(dir), 'absent is fine')
  fs.rmSync(stateDirPath(dir, 'run'), { recursive: true })
  fs.symlinkSync(path.join(dir, 'outside'), stateDirPath(dir, 'run'))
  t.throws(() => checkLayout(dir), { code: 'EFAILED', message: /pods\/run is a symlink/ }, 'a state dir')
})
