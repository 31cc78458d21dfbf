// The guardian (lib/proc/guardian.ts): an app started through guardedSpawnArgs
// keeps its pid, and its guardian kills the app's group when the pipe closes.
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import type { Socket } from 'node:net'
import { GUARDIAN_FD, guardedSpawnArgs } from '../../lib/proc/guardian.js'
import { pollUntil, type Test } from '../helpers/common.js'
import { alive, appMembers, groupMembers, guardianOf, procStat } from '../helpers/run-util.js'

/** Starts `sh -c script` as the supervisor does: its own group, under a guardian. Killed at teardown. */
const guarded = (t: Test, script: string): { child: ChildProcess; pipe: Socket; output: () => string } => {
  const [file, args] = guardedSpawnArgs('sh', ['-c', script])
  const child = spawn(file, args, { detached: true, stdio: ['ignore', 'pipe', 'ignore', 'pipe'] })
  let out = ''
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()))
  const pipe = child.stdio[GUARDIAN_FD] as Socket
  pipe.on('error', () => {})
  t.teardown(() => {
    pipe.destroy()
    try {
      process.kill(-child.pid!, 'SIGKILL')
    } catch {
      // gone
    }
  })
  return { child, pipe, output: () => out }
}

const cmdline = (pid: number): string[] => fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').slice(0, -1)

t.test('the app keeps the spawned pid and its argv; its guardian is in its group but not its child', async (t) => {
  const { child } = guarded(t, 'sleep 1000 & sleep 1000')
  const pid = child.pid!
  const members = await pollUntil('sh and its two sleeps', () => (appMembers(pid).length >= 3 ? appMembers(pid) : undefined))
  t.same(cmdline(pid), ['sh', '-c', 'sleep 1000 & sleep 1000'], 'the spawned pid is the app itself, argv[0] as given')
  const g = guardianOf(pid)
  t.ok(g, 'a guardian is in the group')
  t.not(procStat(g!)!.ppid, pid, 'the guardian is not a child of the app')
  t.equal(procStat(g!)!.pgrp, pid)
  t.equal(members.length, 3, 'besides it: the app and its two children')
})

t.test('when its pipe closes, it SIGKILLs the group, children included, and itself', async (t) => {
  const { child, pipe } = guarded(t, 'sleep 1000 & sleep 1000')
  const pid = child.pid!
  const members = await pollUntil('sh and its two sleeps', () => (appMembers(pid).length >= 3 ? appMembers(pid) : undefined))
  const g = guardianOf(pid)!
  pipe.destroy() // the end of file a dead supervisor gives it
  const exit = await new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)))
  t.equal(exit, 'SIGKILL', 'the app was SIGKILLed')
  await pollUntil('the group to die', () => [...members, g].every((p) => !alive(p)))
  t.same(groupMembers(pid), [], 'nothing is left in the group')
})

t.test('SIGTERM, SIGINT, SIGHUP and SIGQUIT to the group reach the app, not the guardian', async (t) => {
  const { child, pipe, output } = guarded(t, 'trap "echo TERM" TERM; trap "echo INT" INT; trap "echo HUP" HUP; trap "echo QUIT" QUIT; echo ready; while :; do sleep 0.05; done')
  const pid = child.pid!
  await pollUntil('the app to be ready', () => output().includes('ready\n'))
  const g = guardianOf(pid)!
  for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT'] as const) {
    process.kill(-pid, s)
    await pollUntil(`the app to see ${s}`, () => output().includes(`${s.slice(3)}\n`))
  }
  t.ok(alive(g), 'the guardian is still there')
  pipe.destroy()
  await pollUntil('the group to die', () => !alive(pid) && !alive(g))
  t.pass('and still does its job')
})

t.test('the app does not inherit the guardian pipe', async (t) => {
  // `[` is a dash builtin: the test opens no fd of its own.
  const { child, output } = guarded(t, `if [ -e /proc/$$/fd/${GUARDIAN_FD} ]; then echo inherited; else echo closed; fi`)
  await new Promise((resolve) => child.once('exit', resolve))
  await pollUntil('the output', () => output().endsWith('\n'))
  t.equal(output(), 'closed\n')
})

t.test('the app exits with its own status', async (t) => {
  const { child } = guarded(t, 'exit 7')
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)))
  t.equal(code, 7)
})
