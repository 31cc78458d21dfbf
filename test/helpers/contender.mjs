// A reusable race contender for test/pod/race.ts and test/pod/lock.ts: one
// process that takes part in many rounds, so that a race of 8 processes
// does not cost 8 process start-ups per round. Commands come as JSON lines
// on stdin, answers go as JSON lines on stdout:
//   {"cmd":"load","dir":D,"uuid":U,"op":OP,"after":"hold"|"release"}
//       loads the pod (through the built library) → {"ready":true,"state":S}
//   {"cmd":"go"} → performs OP (see transition.mjs) → the outcome; with
//       after "release" every lock is released before answering
//   {"cmd":"release"} → releases every lock held → {"released":true}
// The end of stdin exits 0. Anything that is not a PodctlError is reported
// with "crash":true.
import readline from 'node:readline'
import { dist } from './dist.mjs'
const lib = { ...(await dist('errors.js')), ...(await dist('pod/pod.js')), ...(await dist('pod/locks.js')) }

const out = (o) => process.stdout.write(`${JSON.stringify({ pid: process.pid, ...o })}\n`)
const describe = (er) =>
  er instanceof lib.PodctlError
    ? { ok: false, code: er.code, name: er.name, message: er.message, hint: er.hint ?? null }
    : { ok: false, crash: true, message: String(er?.message ?? er), stack: String(er?.stack ?? '') }

let job
const release = () => {
  job?.pod?.close()
  job?.lock?.release()
}

const perform = (j) => {
  const { pod, op } = j
  switch (op) {
    case 'tryLock':
      j.lock = lib.tryLock(j.dir, j.uuid)
      return { ok: j.lock !== undefined }
    case 'toRun':
    case 'toGarbage':
    case 'toExitedGarbage':
      pod[op]()
      return { ok: true, state: pod.state, dir: pod.dir }
    case 'toGarbage+remove':
      pod.toGarbage()
      pod.remove()
      return { ok: true, removed: pod.removed }
    case 'toExitedGarbage+remove':
      pod.toExitedGarbage()
      pod.remove()
      return { ok: true, removed: pod.removed }
    case 'remove':
      pod.remove()
      return { ok: true, removed: pod.removed }
    default:
      return { ok: false, crash: true, message: `unknown op ${op}` }
  }
}

const rl = readline.createInterface({ input: process.stdin })
rl.on('line', (line) => {
  const c = JSON.parse(line)
  if (c.cmd === 'load') {
    release()
    job = { dir: c.dir, uuid: c.uuid, op: c.op, after: c.after ?? 'hold' }
    try {
      if (c.op !== 'tryLock') job.pod = lib.podFromUUIDString(c.dir, c.uuid)
      out({ ready: true, state: job.pod?.state ?? null })
    } catch (er) {
      out({ ready: false, ...describe(er) })
    }
  } else if (c.cmd === 'go') {
    let o
    try {
      o = perform(job)
    } catch (er) {
      o = describe(er)
    }
    if (job.after === 'release') release()
    out(o)
  } else if (c.cmd === 'release') {
    release()
    out({ released: true })
  }
})
rl.on('close', () => process.exit(0))
