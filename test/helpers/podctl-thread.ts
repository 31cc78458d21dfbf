/**
 * podctl run in a thread of the test process instead of a process of its
 * own, for the command lines where the process is not what a test looks
 * at. A spawned podctl costs about 85 ms of CPU to start and load, nearly
 * all of a short command, and the suite starts thousands
 * (Documentation/performance.md, "npm test"); here the CLI is loaded once
 * per test process and each command costs what it does.
 *
 * The test's thread blocks until the command is done, as spawnSync would.
 * The worker has the environment a spawned podctl gets (without
 * NODE_OPTIONS, so that what it spawns is not put under tap's processinfo,
 * nor NODE_EXTRA_CA_CERTS) and none of the tests' loaders.
 */
import path from 'node:path'
import { MessageChannel, Worker, receiveMessageOnPort, type MessagePort } from 'node:worker_threads'
import { wantsColour } from '../../lib/cli/output.js'
import { ROOT } from './common.js'
import { childEnv } from './launcher.js'

interface Answer {
  status: number
  stdout: string
  stderr: string
}

interface Thread {
  port: MessagePort
  flag: Int32Array
}

/** A command that hangs is a failure of its test, as a hung spawnSync would be, but one that ends. */
const WAIT_MS = 10 * 60_000

let thread: Thread | undefined

const start = (): Thread => {
  const { port1, port2 } = new MessageChannel()
  const flag = new Int32Array(new SharedArrayBuffer(4))
  const worker = new Worker(path.join(ROOT, 'test', 'helpers', 'podctl-worker.mjs'), {
    workerData: { port: port2, flag },
    transferList: [port2],
    env: childEnv(),
    execArgv: [],
  })
  // The thread never keeps the test process alive.
  worker.unref()
  port1.unref()
  return { port: port1, flag }
}

/**
 * Runs `podctl argv...` (argv without node and script) in the thread, with
 * `env` (less what launcher.ts takes out) for the command's time when
 * given; returns what a spawned one would have. `merged`: stderr is written
 * into stdout, in the order written, as with 2>&1.
 */
export const podctlInThread = (argv: string[], env?: NodeJS.ProcessEnv, merged = false): Answer => {
  thread ??= start()
  const { port, flag } = thread
  const commandEnv = env === undefined ? undefined : childEnv(env)
  Atomics.store(flag, 0, 0)
  port.postMessage({ argv, colour: wantsColour(commandEnv ?? childEnv(), false), env: commandEnv, merged })
  if (Atomics.wait(flag, 0, 0, WAIT_MS) === 'timed-out') throw new Error(`podctl ${argv.join(' ')}: no answer from its thread in ${WAIT_MS / 1000} s`)
  const answer = receiveMessageOnPort(port)
  if (answer === undefined) throw new Error(`podctl ${argv.join(' ')}: its thread woke the test without an answer`)
  return answer.message as Answer
}
