// One contender of a race, for test/pod/race.ts and test/pod/lock.ts.
// Loads the pod (through the built library), says "ready", waits for a line
// "go" on stdin, performs one operation and prints its outcome as one JSON
// line: {"ok":true,...} or {"ok":false,"code":...,"name":...,"message":...};
// anything that is not a PodctlError is reported with "crash":true.
//
// usage: node transition.mjs DATA_DIR UUID OP [hold|exit]
// OP: toRun | toGarbage | toExitedGarbage | toExitedGarbage+remove |
//     toGarbage+remove | tryLock | remove
// hold: after the outcome, keep every lock until stdin ends (or a line
//   "exit" comes); exit: leave at once (locks are released on exit, the
//   way proper-lockfile cleans up, or left dead if the process is killed).
import { dist } from './dist.mjs'
const lib = { ...(await dist('errors.js')), ...(await dist('pod/pod.js')), ...(await dist('pod/locks.js')) }

const [dir, uuid, op, after = 'exit'] = process.argv.slice(2)

const out = (o) => process.stdout.write(`${JSON.stringify({ pid: process.pid, ...o })}\n`)
const describe = (er) =>
  er instanceof lib.PodctlError
    ? { ok: false, code: er.code, name: er.name, message: er.message, hint: er.hint ?? null }
    : { ok: false, crash: true, message: String(er?.message ?? er), stack: String(er?.stack ?? '') }

let pod
let lock
try {
  if (op !== 'tryLock') pod = lib.podFromUUIDString(dir, uuid)
} catch (er) {
  out({ phase: 'load', ...describe(er) })
  process.exit(0)
}
out({ ready: true, state: pod?.state ?? null })

let buf = ''
let started = false
process.stdin.setEncoding('utf8')
process.stdin.on('data', (s) => {
  buf += s
  const lines = buf.split('\n')
  if (!started && lines.includes('go')) {
    started = true
    run()
  }
  if (lines.includes('exit')) process.exit(0)
})
process.stdin.on('end', () => process.exit(0))

function run() {
  try {
    switch (op) {
      case 'tryLock':
        lock = lib.tryLock(dir, uuid)
        out({ ok: lock !== undefined })
        break
      case 'toRun':
        pod.toRun()
        out({ ok: true, state: pod.state, dir: pod.dir })
        break
      case 'toGarbage':
        pod.toGarbage()
        out({ ok: true, state: pod.state, dir: pod.dir })
        break
      case 'toGarbage+remove':
        pod.toGarbage()
        pod.remove()
        out({ ok: true, removed: pod.removed })
        break
      case 'toExitedGarbage':
        pod.toExitedGarbage()
        out({ ok: true, state: pod.state, dir: pod.dir })
        break
      case 'toExitedGarbage+remove':
        pod.toExitedGarbage()
        pod.remove()
        out({ ok: true, removed: pod.removed })
        break
      case 'remove':
        pod.remove()
        out({ ok: true, removed: pod.removed })
        break
      default:
        out({ ok: false, crash: true, message: `unknown op ${op}` })
    }
  } catch (er) {
    out(describe(er))
  }
  if (after !== 'hold') process.exit(0)
}
