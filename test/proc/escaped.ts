// processesWithEnv (lib/proc/escaped.ts): finds processes by the pod's mark in
// their environment; with the app's spawn mark it reads only newer pids,
// unless the pid counter could have wrapped since.
import t from 'tap'
import fs from 'node:fs'
import { spawn } from 'node:child_process'
import { forkCount, processesWithEnv } from '../../lib/proc/escaped.js'

const uuid = '0badc0de-0000-4000-8000-00000000e5c4'
const pidMax = Number(fs.readFileSync('/proc/sys/kernel/pid_max', 'latin1'))

t.test('the spawn mark limits the scan to newer pids, and only when no wrap is possible', async (t) => {
  const forksBefore = forkCount()
  t.type(forksBefore, 'number', '/proc/stat gives the fork count')
  const child = spawn('sleep', ['30'], { env: { ...process.env, PODCTL_POD_UUID: uuid, PODCTL_APP_NAME: 'a' }, stdio: 'ignore' })
  t.teardown(() => child.kill('SIGKILL'))
  await new Promise((r) => child.once('spawn', r))
  const pid = child.pid!
  const found = (mark?: { pid: number; forksBefore: number }): number[] => processesWithEnv([`PODCTL_POD_UUID=${uuid}`, 'PODCTL_APP_NAME=a'], { spawnedAt: mark }).map((p) => p.pid)

  t.same(found(), [pid], 'a full scan finds it')
  t.same(found({ pid: pid - 1, forksBefore: forksBefore! }), [pid], 'a process newer than the mark is found')
  t.same(found({ pid, forksBefore: forksBefore! }), [], 'pids up to the mark are not read')
  // As many forks since the mark as it takes to wrap: every pid is read again.
  t.same(found({ pid, forksBefore: forkCount()! - (pidMax - pid) }), [pid], 'a possible wrap means a full scan')
  t.same(processesWithEnv([`PODCTL_POD_UUID=${uuid}`, 'PODCTL_APP_NAME=b'], { spawnedAt: { pid: pid - 1, forksBefore: forksBefore! } }), [], 'another app name does not match')
})
