// A program run with bounds it cannot escape (lib/proc/bounded-child.ts),
// with real shell programs: its answer and exit status; the time limit
// kills its whole process group, children included, and does not wait for
// pipes they hold; a process left holding stdout after a clean exit holds
// nothing; too much output, an abort, and a program that cannot start.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { runBounded } from '../../lib/proc/bounded-child.js'
import { pollUntil, type Test } from '../helpers/common.js'
import { alive } from '../helpers/run-util.js'

const sh = (dir: string, body: string): string => {
  const file = path.join(dir, `p${fs.readdirSync(dir).length}.sh`)
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 })
  return file
}
const base = { input: '', timeoutMs: 30_000, maxStdoutBytes: 1024 }
/** The pid a program wrote into `file`, killed at teardown should it still live. */
const pidIn = (t: Test, file: string): number => {
  const pid = Number(fs.readFileSync(file, 'utf8'))
  t.teardown(() => {
    if (alive(pid)) process.kill(pid, 'SIGKILL')
  })
  return pid
}

t.test('stdin in, stdout, the end of stderr and the exit status out', async (t) => {
  const dir = t.testdir({})
  const r = await runBounded(sh(dir, 'read line; echo "got $line $1"; echo oops >&2; exit 3'), ['verb'], { ...base, input: 'hello\n' })
  t.equal(r.status, 3)
  t.equal(r.signal, null)
  t.equal(r.stdout.toString(), 'got hello verb\n')
  t.equal(r.stderr, 'oops\n')
  t.equal(r.killedFor, undefined)
})

t.test('the time limit kills the whole group and does not wait for a child that holds stdout', async (t) => {
  const dir = t.testdir({})
  const pidFile = path.join(dir, 'child.pid')
  const started = Date.now()
  const r = await runBounded(sh(dir, `sleep 30 & echo $! > ${pidFile}; wait`), [], { ...base, timeoutMs: 300 })
  const took = Date.now() - started
  t.match(r.killedFor, /took longer than 0.3s and was killed/)
  t.ok(took < 10_000, `it returned ${took} ms after the start, not when the child's 30 s were over`)
  const child = pidIn(t, pidFile)
  await pollUntil('the child dead', () => !alive(child), { intervalMs: 20, polls: 100 })
  t.pass('the child died with the group')
})

t.test('a clean exit that leaves a process holding stdout: the answer is taken, the process not waited for', async (t) => {
  const dir = t.testdir({})
  const pidFile = path.join(dir, 'daemon.pid')
  const started = Date.now()
  const r = await runBounded(sh(dir, `sleep 30 & echo $! > ${pidFile}; printf answer`), [], base)
  const took = Date.now() - started
  t.equal(r.status, 0)
  t.equal(r.stdout.toString(), 'answer')
  t.equal(r.killedFor, undefined)
  t.ok(took < 10_000, `it returned ${took} ms after the start`)
  t.ok(alive(pidIn(t, pidFile)), 'what it left behind is not killed: only a time limit kills')
})

t.test('more output than allowed kills it; an abort kills it; a missing program says so', async (t) => {
  const dir = t.testdir({})
  const loud = await runBounded(sh(dir, 'yes'), [], { ...base, maxStdoutBytes: 10_000 })
  t.match(loud.killedFor, /printed more than 10000 bytes and was killed/)
  t.equal(loud.stdout.length, 0, 'what it said is not kept')

  const ac = new AbortController()
  const running = runBounded(sh(dir, 'sleep 30'), [], { ...base, signal: ac.signal })
  setTimeout(() => ac.abort(), 100)
  t.match((await running).killedFor, /was stopped/)
  t.match((await runBounded(sh(dir, 'true'), [], { ...base, signal: AbortSignal.abort() })).killedFor, /was stopped/, 'aborted before it starts')

  t.equal((await runBounded(path.join(dir, 'nope'), [], base)).startError, 'no such file')
  const notExec = path.join(dir, 'plain')
  fs.writeFileSync(notExec, 'echo hi\n', { mode: 0o644 })
  t.equal((await runBounded(notExec, [], base)).startError, 'not executable')
})

t.test('an environment of its own; its pid as soon as it is spawned, the leader of its group; a throwing onSpawn kills it', async (t) => {
  const dir = t.testdir({})
  let seen: number | undefined
  const r = await runBounded(sh(dir, `echo "$ONLY_HERE $$ $(cut -d' ' -f5 /proc/$$/stat)"; echo "\${HOME:-nohome}"`), [], {
    ...base,
    env: { ONLY_HERE: 'yes', PATH: process.env.PATH },
    onSpawn: (pid) => {
      seen = pid
    },
  })
  const [first, second] = r.stdout.toString().trim().split('\n')
  t.equal(first, `yes ${seen} ${seen}`, 'its environment, and the pid told is its own and its group')
  t.equal(second, 'nohome', "nothing of this process's environment")
  const pidFile = path.join(dir, 'pid')
  const killed = await runBounded(sh(dir, `echo $$ > ${pidFile}; sleep 30`), [], {
    ...base,
    onSpawn: () => {
      throw new Error('cannot record it')
    },
  })
  t.match(killed.killedFor, /was killed: cannot record it/)
})
