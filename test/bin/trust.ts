// CONTRACT §10: the data dir is trusted only if its owner is, and podctl
// never reads, writes or deletes through a state dir that is a link. Real
// links, real modes, real owners (the owner tests need root).
import t from 'tap'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { listTree, STACK_RE } from '../helpers/common.js'
import { exitedPod, podctl, preparedPod } from '../helpers/cli-util.js'

const root = process.getuid?.() === 0
const NOBODY = 65534

t.test('a state dir that is a link is never read, written or deleted through', async (t) => {
  for (const stateDir of ['garbage', 'exited-garbage', 'run', 'prepared']) await t.test(stateDir, async (t) => {
    const base = t.testdir({ outside: { 'not-a-pod': { keep: 'x' }, '8c3b1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a': { 'pod.json': '{}', keep: 'y' } } })
    const dir = path.join(base, 'data')
    await exitedPod(dir)
    const outside = path.join(base, 'outside')
    const before = listTree(outside)
    const sd = path.join(dir, 'pods', stateDir)
    fs.rmSync(sd, { recursive: true, force: true })
    fs.symlinkSync(outside, sd)
    for (const args of [['gc', '--grace-period', '0s'], ['rm', '8c3b1f0e'], ['list'], ['status', '8c3b1f0e'], ['prepare', '--', 'true']]) {
      const r = podctl(dir, args)
      t.equal(r.status, 1, `${stateDir} -> outside: ${args[0]}: exit 1`)
      t.match(r.stderr, new RegExp(`^podctl: ${sd.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is a symlink`), 'names the link')
      t.notMatch(r.stderr, STACK_RE)
    }
    t.strictSame(listTree(outside), before, `${stateDir} -> outside: nothing outside was touched`)
  })
})

t.test('locks/ or pods/ as a file or a link: exit 1 naming it', async (t) => {
  for (const sub of ['locks', 'pods']) await t.test(sub, async (t) => {
    const base = t.testdir({ elsewhere: {} })
    const dir = path.join(base, 'data')
    await preparedPod(dir)
    fs.rmSync(path.join(dir, sub), { recursive: true, force: true })
    fs.symlinkSync(path.join(base, 'elsewhere'), path.join(dir, sub))
    const r = podctl(dir, ['list'])
    t.equal(r.status, 1, `${sub} is a link`)
    t.match(r.stderr, new RegExp(`${sub} is a symlink`))
    t.strictSame(fs.readdirSync(path.join(base, 'elsewhere')), [], 'nothing was made through it')
  })
})

t.test('a data dir others can write is refused for writing, with the fix', async (t) => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-trust-'))
  t.teardown(() => fs.rmSync(base, { recursive: true, force: true }))
  fs.chmodSync(base, 0o755)
  const dir = path.join(base, 'data')
  const uuid = await exitedPod(dir)
  fs.chmodSync(dir, 0o777)
  for (const args of [['prepare', '--', 'true'], ['rm', uuid], ['gc'], ['run', '--', 'true']]) {
    const r = podctl(dir, args)
    t.equal(r.status, 1, `${args[0]}: exit 1`)
    t.match(r.stderr, new RegExp(`^podctl: data dir ${dir} is not safe to write: ${dir} can be changed by someone else \\(it is writable by group and others \\(mode 0777\\)\\)\\nfix it: chmod go-w ${dir}`))
    t.notMatch(r.stderr, STACK_RE)
  }
  t.equal(podctl(dir, ['list']).status, 0, 'reading commands still read it')
  t.match(podctl(dir, ['status', uuid]).stdout, /^state=exited$/m)
  fs.chmodSync(dir, 0o750)
  // An ancestor writable by others, not sticky.
  fs.chmodSync(base, 0o777)
  const r = podctl(dir, ['prepare', '--', 'true'])
  t.equal(r.status, 1, 'an ancestor writable by others')
  t.match(r.stderr, new RegExp(`${base} can be changed by someone else`))
  // Sticky, as /tmp is: fine.
  fs.chmodSync(base, 0o1777)
  t.equal(podctl(dir, ['prepare', '--', 'true']).status, 0, 'a sticky ancestor writable by others is fine')
  t.equal(fs.statSync(os.tmpdir()).mode & 0o1000, 0o1000, '(and the tmpdir above is one)')
})

t.test('a data dir owned by another user is refused for writing (root)', { skip: root ? false : 'needs root to give a directory away' }, async (t) => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-trust-'))
  t.teardown(() => fs.rmSync(base, { recursive: true, force: true }))
  fs.chmodSync(base, 0o755)
  const dir = path.join(base, 'data')
  await exitedPod(dir)
  fs.chownSync(dir, NOBODY, NOBODY)
  const r = podctl(dir, ['gc', '--grace-period', '0s'])
  t.equal(r.status, 1)
  t.match(r.stderr, new RegExp(`${dir} can be changed by someone else \\(it is owned by uid ${NOBODY}, not by uid 0 or root\\)\\nfix it: chown 0 ${dir}`))
  t.equal(podctl(dir, ['list', '--format', 'json']).status, 0, 'root may still read it')
})

t.test("a record in an untrusted data dir never gets podctl to kill the process it names", async (t) => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-trust-'))
  t.teardown(() => fs.rmSync(base, { recursive: true, force: true }))
  fs.chmodSync(base, 0o755)
  const dir = path.join(base, 'data')
  const uuid = await exitedPod(dir)
  // An innocent process, and a record that says it is the pod's running app.
  const { spawn } = await import('node:child_process')
  const victim = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' })
  t.teardown(() => victim.kill('SIGKILL'))
  await new Promise((r) => victim.once('spawn', r))
  const stat = fs.readFileSync(`/proc/${victim.pid}/stat`, 'latin1')
  const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!
  const recFile = path.join(dir, 'pods', 'run', uuid, 'pod.json')
  const rec = JSON.parse(fs.readFileSync(recFile, 'utf8'))
  rec.apps[0] = { ...rec.apps[0], state: 'running', pid: victim.pid }
  rec.private = { app_pid_start: { [rec.apps[0].name]: start } }
  fs.writeFileSync(recFile, JSON.stringify(rec))
  fs.chmodSync(dir, 0o777) // now anyone could have written that record
  t.equal(podctl(dir, ['status', uuid]).status, 0)
  t.equal(podctl(dir, ['list']).status, 0)
  t.equal(victim.exitCode === null && victim.signalCode === null, true, 'the process it names lives on')
  fs.chmodSync(dir, 0o750)
  t.equal(podctl(dir, ['status', uuid]).status, 0)
  await new Promise((r) => (victim.exitCode !== null || victim.signalCode !== null ? r(undefined) : victim.once('exit', r)))
  t.equal(victim.signalCode, 'SIGKILL', 'in a trusted data dir the orphan is reaped, as before')
})
