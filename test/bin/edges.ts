// Small edges: empty data dir settings, environment keys that
// are object keys in JavaScript, durations Go refuses, gc output that is
// not lost when gc is killed, and a refusal named as one.
import t from 'tap'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import readline from 'node:readline'
import { BIN, STACK_RE } from '../helpers/common.js'
import { exitedPod, podctl, spawnTracked } from '../helpers/cli-util.js'
import { createPod } from '../../lib/pod/prepare.js'

t.test('--dir "" and an empty PODCTL_DIR are usage errors, not the default data dir', async (t) => {
  const home = t.testdir({})
  const env = { ...process.env, HOME: home, XDG_DATA_HOME: path.join(home, 'xdg') }
  const flag = podctl(undefined, ['--dir', '', 'prepare', '--', 'true'], { env })
  t.equal(flag.status, 2)
  t.match(flag.stderr, /^podctl: --dir is empty\n/)
  const envVar = podctl(undefined, ['prepare', '--', 'true'], { env: { ...env, PODCTL_DIR: '' } })
  t.equal(envVar.status, 2)
  t.match(envVar.stderr, /^podctl: PODCTL_DIR is set but empty\n/)
  t.equal(fs.existsSync(path.join(home, 'xdg')), false, 'the default data dir was not made')
})

t.test('--env __proto__=x is an environment variable like any other', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const r = podctl(dir, ['run', '--env', '__proto__=x', '--env', 'constructor=y', '--', 'sh', '-c', 'env | grep -E "^(__proto__|constructor)=" | sort'])
  t.equal(r.status, 0)
  t.equal(r.stdout, '__proto__=x\nconstructor=y\n')
})

t.test('durations with a space are refused, as Go refuses them', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  for (const d of [' 5s', '5s ', '5 s', '\t5s']) {
    const r = podctl(dir, ['gc', '--grace-period', d])
    t.equal(r.status, 2, JSON.stringify(d))
    t.match(r.stderr, /^podctl: invalid --grace-period/)
  }
  t.equal(podctl(dir, ['gc', '--grace-period', '+5s']).status, 0, 'a sign, which Go accepts, is accepted')
})

t.test('gc says each pod as it is deleted: a killed gc has said what it did', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  for (let i = 0; i < 400; i++) {
    const pod = await createPod(dir, { apiVersion: 'podctl/v1', apps: [{ name: 'a', exec: ['true'] }] }, { sync: false })
    pod.toRun({ sync: false })
    pod.unlock()
  }
  const child = spawnTracked(t, '/usr/bin/env', ['-u', 'NODE_OPTIONS', process.execPath, BIN, '--dir', dir, 'gc', '--grace-period', '0s'])
  const said: string[] = []
  const exited = new Promise((r) => child.once('exit', r))
  await new Promise<void>((resolve) => {
    readline.createInterface({ input: child.stdout! }).on('line', (l) => {
      said.push(l)
      if (said.length === 20) {
        child.kill('SIGKILL')
        resolve()
      }
    })
    child.once('exit', () => resolve())
  })
  await exited
  t.ok(said.length >= 20, `gc said ${said.length} pods before it was killed`)
  for (const l of said) {
    const uuid = /^deleted ([0-9a-f-]{36})$/.exec(l)?.[1]
    t.ok(uuid !== undefined, l)
    t.notOk(fs.readdirSync(path.join(dir, 'pods')).some((d) => fs.existsSync(path.join(dir, 'pods', d, uuid ?? 'x'))), `${uuid} is gone`)
  }
  const rest = podctl(dir, ['gc', '--grace-period', '0s'])
  t.equal(rest.status, 0, 'another gc finishes the work')
})

t.test("a user's volume rm of root's volume says permission denied", { skip: process.getuid?.() === 0 ? false : 'needs root, to have a volume that is not the user\'s' }, async (t) => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-perm-'))
  t.teardown(() => fs.rmSync(base, { recursive: true, force: true }))
  fs.chmodSync(base, 0o755)
  const dir = path.join(base, 'data')
  await exitedPod(dir) // root's data dir
  t.equal(podctl(dir, ['volume', 'create', 'db']).status, 0)
  fs.chmodSync(dir, 0o755) // others may look in, not into volumes/
  const r = podctl(dir, ['volume', 'rm', 'db'], { uid: 65534, gid: 65534 })
  t.equal(r.status, 1)
  t.match(r.stderr, /permission denied/)
  t.notMatch(r.stderr, /no persistent volume/)
  t.notMatch(r.stderr, STACK_RE)
})
