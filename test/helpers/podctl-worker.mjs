// The thread behind podctl-thread.ts: runs the built CLI's main() (the
// bundles bin/podctl loads, with their code cache) for one command line at
// a time, with an Io that keeps what it printed, and wakes the test's
// thread, which waits on `flag`, once the answer is posted. JavaScript, not
// TypeScript: the thread starts without the tests' loaders.
import { createRequire } from 'node:module'
import { workerData } from 'node:worker_threads'

const require = createRequire(import.meta.url)
const { loader } = require('../../bin/load-bundle.js')
const { port, flag } = workerData

// Each command runs the bundles afresh (compiled once), as a process of its
// own would: podctl keeps what it has checked once per process (a data
// dir's layout and trust), and tests change such things between commands.
const freshMain = () => loader()('main.js').main

/** What a command may change of the process: its listeners, and what signal-exit (proper-lockfile's) patches. */
const processState = () => ({
  emit: process.emit,
  reallyExit: process.reallyExit,
  listeners: new Map(process.eventNames().map((e) => [e, process.listeners(e)])),
})

/**
 * Does for what a command left behind what its process's end would:
 * signal-exit's exit handlers run (proper-lockfile's removes any lock
 * still held), and the listeners and patches of that command's copy of the
 * bundles go, so that they neither pile up nor act on the next command.
 */
const endAsAProcess = (before, status) => {
  const exits = process.__signal_exit_emitter__
  delete process.__signal_exit_emitter__
  exits?.emit('exit', status, null)
  process.emit = before.emit
  process.reallyExit = before.reallyExit
  for (const event of process.eventNames()) {
    const kept = before.listeners.get(event) ?? []
    for (const l of process.listeners(event)) if (!kept.includes(l)) process.removeListener(event, l)
  }
}

/** What was written, as bytes: decoded once at the end, so that a character split between writes stays whole. */
const bytes = (s) => (typeof s === 'string' ? Buffer.from(s, 'utf8') : Buffer.from(s))

/** Gives the thread the environment `env` until the returned function puts the one it had back. */
const withEnv = (env) => {
  if (env === undefined) return () => {}
  const had = { ...process.env }
  const become = (e) => {
    for (const k of Object.keys(process.env)) delete process.env[k]
    Object.assign(process.env, e)
  }
  become(env)
  return () => become(had)
}

/** The command running, if one is: ends it as its process would have ended. */
let running
// A leftover of a command that has ended (a timer, a stream) that throws: the next answer says so.
let thrownBetween = ''

// An exception nothing caught (an unhandled rejection too) would end a
// podctl process with exit 1 and the stack on stderr: so it ends the command.
process.on('uncaughtException', (er) => {
  const text = `${er?.stack ?? er}\n`
  if (running) running.end(1, text)
  else thrownBetween += `podctl-worker: thrown after a command ended: ${text}`
})

port.on('message', async ({ argv, colour, env, merged }) => {
  const out = []
  const err = merged ? out : []
  err.push(Buffer.from(thrownBetween))
  thrownBetween = ''
  const io = {
    out: (s) => void out.push(bytes(s)),
    err: (s) => void err.push(bytes(s)),
    errIsTTY: false,
    colour,
  }
  const before = processState()
  const restoreEnv = withEnv(env)
  const command = {
    end: (status, more = '') => {
      if (running !== command) return // ended already
      running = undefined
      err.push(bytes(more))
      endAsAProcess(before, status)
      restoreEnv()
      port.postMessage({ status, stdout: Buffer.concat(out).toString('utf8'), stderr: merged ? '' : Buffer.concat(err).toString('utf8') })
      Atomics.store(flag, 0, 1)
      Atomics.notify(flag, 0)
    },
  }
  running = command
  try {
    command.end(await freshMain()(argv, io))
  } catch (er) {
    // main() turns every error into an exit code; this is a bug of ours.
    command.end(70, `podctl-worker: main() threw: ${er?.stack ?? er}\n`)
  }
})
