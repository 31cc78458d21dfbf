// The infra's guardian (lib/runtime/infra.ts, infraSpawnArgs): a host `sh`
// that execs the runtime's `run` and, when the supervisor's socket on fd 3
// closes, kills the infra by the pid the runtime wrote, asking the runtime
// (`kill ID KILL`) only while no pid is written. A stand-in runtime (a
// shell script) plays `run`: it starts the "infra" (a sleep) as its own
// child and writes its pid as runc does, without a newline; its `kill`
// only logs, so the test sees which way the guardian took.
import t from 'tap'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { INFRA_GUARD_FD, infraSpawnArgs } from '../../lib/runtime/infra.js'
import { pollUntil } from '../helpers/common.js'
import type { Test } from '../helpers/common.js'

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** 'ended', or 'hung' when the guardian has not ended the infra long after its last try (100 tries 0.1 s apart). */
const ended = (closed: Promise<void>): Promise<'ended' | 'hung'> =>
  Promise.race([closed.then(() => 'ended' as const), new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 30_000).unref())])

/** A stand-in runtime in `dir`: `kill` is logged; `run PIDFILE` starts a sleep, writes its pid (no newline) after `delay`, and waits on it. */
const standIn = (dir: string): { program: string; log: string } => {
  const log = path.join(dir, 'calls')
  const program = path.join(dir, 'runtime')
  fs.writeFileSync(
    program,
    [
      '#!/bin/sh',
      `echo "$*" >> ${log}`,
      'case "$3" in',
      '  run) sleep 300 & infra=$!; sleep "$5"; printf %s "$infra" > "$4"; wait "$infra"; exit 137 ;;',
      '  kill) exit 1 ;;',
      'esac',
    ].join('\n'),
    { mode: 0o755 },
  )
  return { program, log }
}

/** Starts the guardian as the supervisor does: fd 3 a socket only this process holds the other end of. */
const guard = (t: Test, dir: string, delay: string) => {
  const { program, log } = standIn(dir)
  const pidFile = path.join(dir, 'pid')
  const [sh, args] = infraSpawnArgs([program, '--root', dir, 'run', pidFile, delay], { runtime: program, root: dir, id: 'infra-x', pidFile })
  const child = spawn(sh, args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe'], detached: true })
  t.teardown(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL')
    } catch {
      // gone
    }
  })
  t.equal(INFRA_GUARD_FD, 3)
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()))
  return { child, pidFile, log, closed, cut: () => (child.stdio[3] as unknown as { destroy(): void }).destroy() }
}

t.test('the guardian kills the infra by the pid the runtime wrote without a newline, and never asks the runtime', async (t) => {
  const dir = t.testdir()
  const g = guard(t, dir, '0')
  await pollUntil('the pid file', () => fs.existsSync(g.pidFile) && fs.readFileSync(g.pidFile, 'utf8') !== '')
  const infra = Number(fs.readFileSync(g.pidFile, 'utf8'))
  t.ok(alive(infra), 'the infra runs')
  g.cut()
  t.equal(await ended(g.closed), 'ended', 'the guardian and its runtime end')
  t.notOk(alive(infra), 'the socket closed: the infra is killed, and its runtime has ended')
  t.same(fs.readFileSync(g.log, 'utf8').split('\n').filter((l) => l !== '').map((l) => l.split(' ')[2]), ['run'], 'the runtime was run, and not asked to kill')
})

t.test('before the pid is written the guardian asks the runtime, and takes the pid once it is there', async (t) => {
  const dir = t.testdir()
  const g = guard(t, dir, '0.5')
  await pollUntil('the runtime started', () => fs.existsSync(g.log))
  g.cut()
  t.equal(await ended(g.closed), 'ended', 'the guardian and its runtime end')
  const calls = fs.readFileSync(g.log, 'utf8').split('\n').filter((l) => l !== '').map((l) => l.split(' ').slice(2).join(' '))
  t.equal(calls[0]?.split(' ')[0], 'run')
  t.ok(calls.slice(1).length >= 1 && calls.slice(1).every((c) => c === 'kill infra-x KILL'), `asked the runtime to kill the container it is making: ${calls.join(', ')}`)
  t.notOk(alive(Number(fs.readFileSync(g.pidFile, 'utf8'))), 'then killed the infra by its pid')
})
