// A data dir that is not a usable directory: a regular
// file, a path below a file, a directory podctl may not write. Every command
// fails with exit 1 and a clear message, and nothing is created or changed.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { listTree, STACK_RE, type Test } from '../helpers/common.js'
import { exitedPod, podctl, preparedPod, type Result, type RunOptions } from '../helpers/cli-util.js'

const UUID = '0f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f0f'

// main.ts prints this for errors it did not expect (its "bug" path).
const UNEXPECTED = /run again with --debug/

/** Asserts a clear exit-1 failure that names the data dir. */
const clearFailure = (t: Test, r: Result, what: string, dataDir: string): void => {
  t.equal(r.status, 1, `${what}: exit 1`)
  t.equal(r.stdout, '', `${what}: nothing on stdout`)
  t.match(r.stderr, /^podctl: \S/, `${what}: a podctl message`)
  t.match(r.stderr, dataDir, `${what}: names the data dir`)
  t.notMatch(r.stderr, UNEXPECTED, `${what}: an expected failure, not a bug report`)
  t.notMatch(r.stderr, STACK_RE, `${what}: no stack trace`)
}

t.test('a data dir that is a regular file', async (t) => {
  const root = t.testdir({ file: 'not a data dir\n' })
  const file = path.join(root, 'file')
  const before = listTree(root)
  const commands: { args: string[] }[] = [
    { args: ['prepare', '--', 'true'] },
    { args: ['list'] },
    { args: ['list', '--format', 'json'] },
    { args: ['gc'] },
    { args: ['gc', '--format', 'json', '--grace-period', '0s'] },
    { args: ['status', UUID] },
    { args: ['status', UUID.slice(0, 8)] },
    { args: ['rm', UUID] },
    { args: ['cat-manifest', UUID] },
  ]
  for (const c of commands) {
    const r = podctl(file, c.args)
    clearFailure(t, r, c.args.join(' '), file)
    t.match(r.stderr, /not a directory/, 'says it is not a directory')
  }
  t.strictSame(listTree(root), before, 'nothing was created')
  t.equal(fs.readFileSync(file, 'utf8'), 'not a data dir\n', 'the file is unchanged')

  const json = podctl(file, ['list', '--format', 'json'])
  t.match(JSON.parse(json.stderr.split('\n').find((l) => l.startsWith('{')) ?? 'null'), { error: { code: 'EFAILED', message: /not a directory/ } })
})

t.test('a directory of the data dir replaced by a symlink is refused, whichever room walks it', async (t) => {
  // Each room registers the directories it walks with lib/pod/layout.ts; the CLI checks them all first.
  for (const sub of ['pods/run', 'locks', 'volumes', 'volume-locks', 'classes', 'claims', 'controller', 'images', 'image-locks']) {
    await t.test(sub, async (t) => {
      const root = t.testdir({ outside: { 'keep.txt': 'keep\n' } })
      const dir = path.join(root, 'data')
      await preparedPod(dir)
      fs.rmSync(path.join(dir, sub), { recursive: true, force: true })
      fs.symlinkSync(path.join(root, 'outside'), path.join(dir, sub))
      const r = podctl(dir, ['list'])
      clearFailure(t, r, 'list', dir)
      t.match(r.stderr, `${sub} is a symlink`, 'named')
      t.strictSame(fs.readdirSync(path.join(root, 'outside')), ['keep.txt'], 'nothing was done through it')
    })
  }
})

t.test('a data dir below a regular file', async (t) => {
  const root = t.testdir({ file: 'x' })
  const dir = path.join(root, 'file', 'data')
  const before = listTree(root)
  clearFailure(t, podctl(dir, ['prepare', '--', 'true']), 'prepare', dir)
  clearFailure(t, podctl(dir, ['list']), 'list', dir)
  clearFailure(t, podctl(dir, ['gc']), 'gc', dir)
  t.strictSame(listTree(root), before)
})

// ---- not writable

const asRoot = process.getuid?.() === 0
const NOBODY = 65534

/** Runs podctl as a user who may not write the data dir. */
const unprivileged = (dir: string, args: string[]): Result => {
  const opts: RunOptions = asRoot ? { uid: NOBODY, gid: NOBODY, cwd: '/' } : {}
  return podctl(dir, args, opts)
}

// As root we switch to nobody, who needs to read the built CLI and its
// dependencies, and to reach the test's fixtures.
const cannotRunAsNobody = (): string | false => {
  if (!asRoot) return false
  const probe = t.testdir({})
  const r = podctl(path.join(probe, 'none'), ['list', '--format', 'json'], { uid: NOBODY, gid: NOBODY, cwd: '/' })
  if (r.status === 0 && r.stdout === '[]\n') return false
  return `podctl cannot run as uid ${NOBODY} here (exit ${r.status}: ${r.stderr.split('\n')[0]})`
}

t.test('a data dir that is not writable', { skip: cannotRunAsNobody() }, async (t) => {
  const root = t.testdir({ empty: {} })
  const empty = path.join(root, 'empty')
  // A data dir made and filled by its owner.
  const full = path.join(root, 'full')
  const prepared = await preparedPod(full)
  const exited = await exitedPod(full)
  // Then everything readable by all and, for a non-root run, writable by none.
  const dirMode = asRoot ? 0o755 : 0o555
  const fileMode = asRoot ? 0o644 : 0o444
  const entries = (listTree(root) ?? []).map((e) => [path.join(root, e), e.endsWith('/')] as const)
  for (const [p, isDir] of entries) fs.chmodSync(p, isDir ? dirMode : fileMode)
  fs.chmodSync(root, dirMode)
  if (!asRoot) {
    t.teardown(() => {
      fs.chmodSync(root, 0o755)
      for (const [p, isDir] of entries) if (isDir) fs.chmodSync(p, 0o755)
    })
  }
  const before = listTree(root)

  for (const [dir, what] of [
    [empty, 'an existing empty dir'],
    [path.join(root, 'new'), 'a new dir in an unwritable parent'],
    [full, 'a data dir with pods'],
  ] as const) {
    const r = unprivileged(dir, ['prepare', '--', 'true'])
    clearFailure(t, r, `prepare into ${what}`, dir)
    t.match(r.stderr, /not writable/, 'says it is not writable')
  }
  t.strictSame(listTree(root), before, 'nothing was created or changed')

  // Reading still works.
  const list = unprivileged(full, ['list', '--format', 'json'])
  t.equal(list.status, 0, 'list works on a readable data dir')
  t.strictSame((JSON.parse(list.stdout) as { uuid: string }[]).map((p) => p.uuid).sort(), [prepared, exited].sort())

  // Changing fails, clearly, and changes nothing.
  const rm = unprivileged(full, ['rm', exited])
  t.equal(rm.status, 1, 'rm: exit 1')
  t.match(rm.stderr, /not writable|permission denied/i, 'rm: says why')
  t.notMatch(rm.stderr, UNEXPECTED, 'rm: an expected failure, not a bug report')
  const gc = unprivileged(full, ['gc', '--grace-period', '0s', '--expire-prepared', '0s'])
  t.equal(gc.status, 1, 'gc: exit 1')
  t.match(gc.stderr, /not writable|permission denied/i, 'gc: says why')
  t.strictSame(listTree(root), before, 'rm and gc changed nothing')
})
