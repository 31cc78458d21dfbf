// Black-box tests of mutable pods: `podctl app ...` (CONTRACT §3-5): spawns bin/podctl.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { podRecord, pollUntil, type Test, TIME_RE, UUID_RE } from '../helpers/common.js'
import { podctl, podctlJson, runDetached, startPodctl } from '../helpers/cli-util.js'
import { alive, dataDir } from '../helpers/run-util.js'

const sandbox = async (t: Test, dir: string): Promise<string> => {
  const r = podctl(dir, ['app', 'sandbox', '--detach'])
  t.equal(r.status, 0, 'app sandbox --detach exits 0', { stderr: r.stderr })
  t.match(r.stdout, /^[0-9a-f-]{36}\n$/, 'and prints only the UUID')
  return r.stdout.trim()
}

const spawnSyncOk = (cmd: string, args: string[]): void => {
  const r = spawnSync(cmd, args)
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${String(r.stderr)}`)
}

const ok = async (t: Test, dir: string, args: string[]): Promise<string> => {
  const r = podctl(dir, args)
  t.equal(r.status, 0, `podctl ${args.join(' ')}`, { stderr: r.stderr })
  t.equal(r.stderr, '', 'nothing on stderr')
  return r.stdout
}

t.test('a sandbox takes apps while it runs: add, start, stop, rm, list, status', async (t) => {
  const dir = dataDir(t)
  const uuid = await sandbox(t, dir)
  t.match(uuid, UUID_RE)
  const v0 = await podctlJson(t, dir, ['status', uuid, '--format', 'json'])
  t.match(v0, { state: 'running', mutable: true, apps: [] }, 'a running mutable pod with no apps')
  const supervisor = v0.pid as number
  t.ok(alive(supervisor))
  t.same(await podctlJson(t, dir, ['app', 'list', uuid, '--format', 'json']), [], 'app list: no apps')
  t.equal(await ok(t, dir, ['app', 'list', uuid]), 'NAME   TYPE   STATE   PID   EXIT\n', 'app list: only the header')

  const marker = path.join(dir, 'started')
  await ok(t, dir, ['app', 'add', uuid.slice(0, 8), '--name', 'worker', '--env', `MARK=${marker}`, '--', 'sh', '-c', 'echo "$PODCTL_APP_NAME" > "$MARK"; exec sleep 1000'])
  const m = JSON.parse(await ok(t, dir, ['cat-manifest', uuid]))
  t.match(m.apps, [{ name: 'worker', exec: ['sh', '-c', /exec sleep 1000/], env: { MARK: marker } }], 'in the manifest')
  t.same(await podctlJson(t, dir, ['app', 'list', uuid, '--format', 'json']), [
    { name: 'worker', type: 'regular', state: 'created', pid: null, started_at: null, finished_at: null, exit_code: null },
  ], 'added: created, not started')
  t.equal(await ok(t, dir, ['app', 'status', uuid, 'worker']), 'name=worker\ntype=regular\nstate=created\n')
  t.notOk(fs.existsSync(marker), 'not started by add')

  await ok(t, dir, ['app', 'start', uuid, 'worker'])
  // app start returns once the app runs: no polling.
  const running = await podctlJson(t, dir, ['app', 'status', uuid, 'worker', '--format', 'json'])
  t.match(running, { name: 'worker', type: 'regular', state: 'running', started_at: TIME_RE, finished_at: null, exit_code: null })
  t.ok(alive(running.pid), 'the app process runs')
  await pollUntil('the app to write its marker', () => fs.existsSync(marker) && fs.readFileSync(marker, 'utf8') === 'worker\n')
  const v1 = await podctlJson(t, dir, ['status', uuid, '--format', 'json'])
  t.equal(v1.pid, supervisor, 'the same supervisor started it: no restart')
  t.ok(alive(supervisor))
  const table = await ok(t, dir, ['app', 'list', uuid, '--no-legacy'])
  t.match(table, new RegExp(`^worker\\s+regular\\s+running\\s+${running.pid}\\s+-\\n$`), 'app list table row')

  await ok(t, dir, ['app', 'stop', uuid, 'worker'])
  // app stop returns once the app has exited.
  const stopped = await podctlJson(t, dir, ['app', 'status', uuid, 'worker', '--format', 'json'])
  t.match(stopped, { state: 'exited', exit_code: 143, finished_at: TIME_RE, pid: running.pid })
  await pollUntil('the app process to be gone', () => !alive(running.pid))
  const text = await ok(t, dir, ['app', 'status', uuid, 'worker'])
  t.match(text, /^state=exited$/m)
  t.match(text, /^exit_code=143$/m)
  t.equal(podFromUUIDString(dir, uuid).state, 'running', 'the pod runs on without apps running')

  await ok(t, dir, ['app', 'start', uuid, 'worker'])
  const again = await podctlJson(t, dir, ['app', 'status', uuid, 'worker', '--format', 'json'])
  t.equal(again.state, 'running', 'an exited app starts again')
  t.not(again.pid, running.pid)

  await ok(t, dir, ['app', 'rm', uuid, 'worker'])
  t.same(JSON.parse(await ok(t, dir, ['cat-manifest', uuid])).apps, [], 'gone from the manifest')
  t.same(await podctlJson(t, dir, ['app', 'list', uuid, '--format', 'json']), [], 'gone from app list')
  await pollUntil('the removed running app to be stopped', () => !alive(again.pid))
  const missing = podctl(dir, ['app', 'status', uuid, 'worker'])
  t.equal(missing.status, 3, 'app status of a removed app: 3')
  t.equal(podctl(dir, ['app', 'start', uuid, 'worker']).status, 3, 'app start of an unknown app: 3')
  t.equal((await podctlJson(t, dir, ['status', uuid, '--format', 'json'])).pid, supervisor, 'still the same supervisor')

  t.equal(podctl(dir, ['stop', uuid]).status, 0)
  t.equal(podFromUUIDString(dir, uuid).state, 'exited')
})

t.test('app add of a name already there exits 4', async (t) => {
  const dir = dataDir(t)
  const uuid = await sandbox(t, dir)
  await ok(t, dir, ['app', 'add', uuid, '--name', 'one', '--', 'true'])
  const r = podctl(dir, ['app', 'add', uuid, '--name', 'one', '--', 'true'])
  t.equal(r.status, 4)
  t.match(r.stderr, /already has an app named one/)
  t.equal(JSON.parse(await ok(t, dir, ['cat-manifest', uuid])).apps.length, 1)
})

t.test("an ephemeral app's exit code does not decide the pod's", async (t) => {
  const dir = dataDir(t)
  const uuid = await sandbox(t, dir)
  await ok(t, dir, ['app', 'add', uuid, '--name', 'job', '--ephemeral', '--', 'sh', '-c', 'exit 7'])
  await ok(t, dir, ['app', 'add', uuid, '--name', 'check', '--', 'sh', '-c', 'exit 0'])
  await ok(t, dir, ['app', 'start', uuid, 'job'])
  await ok(t, dir, ['app', 'start', uuid, 'check'])
  await pollUntil('the ephemeral app to exit', () => podRecord(dir, uuid).apps[0].state === 'exited')
  const job = await podctlJson(t, dir, ['app', 'status', uuid, 'job', '--format', 'json'])
  t.match(job, { type: 'ephemeral', state: 'exited', exit_code: 7 })
  t.equal(podctl(dir, ['stop', uuid]).status, 0)
  const v = await podctlJson(t, dir, ['status', uuid, '--format', 'json'])
  t.equal(v.state, 'exited')
  t.match(v.apps, [{ name: 'job', exit_code: 7 }, { name: 'check', exit_code: 0 }])
  t.equal(v.exit_code, 0, 'the pod exit code ignores the ephemeral app')
})

t.test('app add without the UUID says the UUID is missing, not the command', async (t) => {
  const dir = dataDir(t)
  const r = podctl(dir, ['app', 'add', '--name', 'x', '--', '/bin/true'])
  t.equal(r.status, 2)
  t.match(r.stderr, /^podctl: missing pod UUID: "\/bin\/true" is not one\nusage: podctl app add UUID --name NAME -- CMD/)
  const uuid = await runDetached(t, dir, ['--', 'sleep', '1000'])
  const noCommand = podctl(dir, ['app', 'add', uuid, '--name', 'x'])
  t.equal(noCommand.status, 2, 'a UUID and no command: exit 2')
  t.match(noCommand.stderr, /no command given/)
})

t.test('app add to an immutable pod exits 4: "immutable pod"', async (t) => {
  const dir = dataDir(t)
  const uuid = await runDetached(t, dir, ['--', 'sleep', '1000'])
  const r = podctl(dir, ['app', 'add', uuid, '--name', 'extra', '--', 'true'])
  t.equal(r.status, 4)
  t.match(r.stderr, /^podctl: immutable pod/)
  t.equal(r.stdout, '')
  t.same(JSON.parse(await ok(t, dir, ['cat-manifest', uuid])).apps.map((a: any) => a.name), ['sleep'], 'manifest unchanged')
  for (const args of [['app', 'rm', uuid, 'sleep'], ['app', 'start', uuid, 'sleep'], ['app', 'stop', uuid, 'sleep']]) {
    const x = podctl(dir, args)
    t.equal(x.status, 4, `${args[1]}: 4`)
    t.match(x.stderr, /immutable pod/)
  }
  const prepared = podctl(dir, ['prepare', '--', 'true']).stdout.trim()
  const p = podctl(dir, ['app', 'add', prepared, '--name', 'extra', '--', 'true'])
  t.equal(p.status, 4, 'a prepared immutable pod too')
  t.match(p.stderr, /immutable pod/)
})

t.test('20 concurrent app add to one sandbox: all 20 land, the supervisor starts one', async (t) => {
  const dir = dataDir(t)
  const uuid = await sandbox(t, dir)
  const supervisor = (await podctlJson(t, dir, ['status', uuid, '--format', 'json'])).pid
  const names = Array.from({ length: 20 }, (_, i) => `app-${i}`)
  const results = await Promise.all(names.map((n) => startPodctl(t, dir, ['app', 'add', uuid, '--name', n, '--', 'sleep', '1000']).done))
  t.same(results.map((r) => r.status), Array(20).fill(0), 'all exit 0', { stderr: results.map((r) => r.stderr).filter(Boolean) })
  const raw = await ok(t, dir, ['cat-manifest', uuid])
  let m: any
  t.doesNotThrow(() => (m = JSON.parse(raw)), 'the manifest is valid JSON')
  t.same(m.apps.map((a: any) => a.name).sort(), [...names].sort(), 'all 20 apps in the manifest, none lost')
  const list = await podctlJson(t, dir, ['app', 'list', uuid, '--format', 'json'])
  t.same(list.map((a: any) => a.name).sort(), [...names].sort(), 'all 20 apps in app list')
  t.ok(list.every((a: any) => a.state === 'created'))
  await ok(t, dir, ['app', 'start', uuid, 'app-13'])
  const a = await podctlJson(t, dir, ['app', 'status', uuid, 'app-13', '--format', 'json'])
  t.equal(a.state, 'running')
  t.ok(alive(a.pid))
  t.equal((await podctlJson(t, dir, ['status', uuid, '--format', 'json'])).pid, supervisor, 'the same supervisor, never restarted')
})

t.test('app add and app rm on a prepared mutable pod show in app list and status at once', async (t) => {
  const dir = dataDir(t)
  const m = path.join(dir, 'm.json')
  fs.writeFileSync(m, JSON.stringify({ apiVersion: 'podctl/v1', mutable: true, apps: [{ name: 'base', exec: ['true'] }] }))
  const uuid = podctl(dir, ['prepare', '--manifest', m]).stdout.trim()
  t.equal(podctl(dir, ['app', 'add', uuid, '--name', 'extra', '--', 'true']).status, 0)
  const names = async (): Promise<string[]> =>
    ((await podctlJson(t, dir, ['status', uuid, '--format', 'json'])).apps as { name: string }[]).map((a) => a.name)
  t.strictSame(await names(), ['base', 'extra'], 'status shows the added app')
  t.match(podctl(dir, ['app', 'list', uuid]).stdout, /^extra\s+regular\s+created/m, 'app list too')
  t.equal(podctl(dir, ['app', 'status', uuid, 'extra']).status, 0, 'app status finds it')
  t.equal(podctl(dir, ['app', 'rm', uuid, 'extra']).status, 0)
  t.strictSame(await names(), ['base'], 'and no longer after app rm')
})

t.test('what someone else plants among the requests never ends the pod, and goes', async (t) => {
  const dir = dataDir(t)
  const uuid = await sandbox(t, dir)
  const supervisor = (await podctlJson(t, dir, ['status', uuid, '--format', 'json'])).pid as number
  const requests = path.join(dir, 'pods', 'run', uuid, 'requests')
  fs.mkdirSync(requests, { recursive: true })
  const outside = path.join(path.dirname(dir), 'outside')
  fs.mkdirSync(outside)
  fs.writeFileSync(path.join(outside, 'victim.txt'), 'precious')
  // Made aside and renamed in: the supervisor may take each the moment it appears.
  const stage = path.join(path.dirname(dir), 'stage')
  fs.mkdirSync(path.join(stage, '000-dir.json'), { recursive: true })
  fs.writeFileSync(path.join(stage, '000-dir.json', 'inside'), 'x')
  fs.symlinkSync(path.join(outside, 'victim.txt'), path.join(stage, '001-link.json'))
  fs.symlinkSync(outside, path.join(stage, '002-dirlink.json'))
  spawnSyncOk('mkfifo', [path.join(stage, '003-fifo.json')])
  fs.writeFileSync(path.join(stage, '004-garbage.json'), '{"op":')
  for (const n of fs.readdirSync(stage)) fs.renameSync(path.join(stage, n), path.join(requests, n))
  await ok(t, dir, ['app', 'add', uuid, '--name', 'worker', '--', 'sleep', '1000'])
  await ok(t, dir, ['app', 'start', uuid, 'worker'])
  t.equal((await podctlJson(t, dir, ['app', 'status', uuid, 'worker', '--format', 'json'])).state, 'running', 'a real request is still served')
  t.ok(alive(supervisor), 'the supervisor lives on')
  await pollUntil('the planted entries to be gone', () => fs.readdirSync(requests).length === 0)
  t.equal(fs.readFileSync(path.join(outside, 'victim.txt'), 'utf8'), 'precious', 'nothing behind a link was touched')
})

t.test('app start that times out says so, and that the supervisor may still start the app (it does)', async (t) => {
  const { lockOwner } = await import('../../lib/pod/locks.js')
  const { startApp } = await import('../../lib/run/apps.js')
  const dir = dataDir(t)
  const uuid = await sandbox(t, dir)
  await ok(t, dir, ['app', 'add', uuid, '--name', 'late', '--', 'sleep', '60'])
  // A supervisor that is slow to read requests: stopped for now.
  const supervisor = lockOwner(dir, uuid)!.pid
  process.kill(supervisor, 'SIGSTOP')
  t.teardown(() => {
    try {
      process.kill(supervisor, 'SIGCONT')
    } catch {
      // gone
    }
  })
  const er = await startApp(podFromUUIDString(dir, uuid), 'late', 500).then(
    () => undefined,
    (e: unknown) => e as { code: string; message: string; hint?: string },
  )
  t.equal(er?.code, 'ETIMEOUT')
  t.match(er?.message, /^app late of pod [0-9a-f]{8} has not started after 1s; the request stays with the pod's supervisor, which may still start it$/)
  t.match(er?.hint, /^see whether it did: podctl app status [0-9a-f]{8} late$/)
  process.kill(supervisor, 'SIGCONT')
  await pollUntil('the app to start once the supervisor goes on', async () => (await podctlJson<{ state: string }>(t, dir, ['app', 'status', uuid, 'late', '--format', 'json'])).state === 'running', { intervalMs: 100, polls: 100 })
  t.pass('once the supervisor goes on, the app starts, as the message said it might')
  await ok(t, dir, ['stop', uuid])
})
