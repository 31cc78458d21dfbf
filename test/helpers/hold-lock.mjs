// A real lock holder for the lifecycle tests. Takes the pod lock of every
// UUID given (through the built library, like any other podctl process)
// and holds them.
//
// usage: node hold-lock.mjs DATA_DIR UUID... [--no-stdin] [--to-run]
// stdout: "locked <pid>" once every lock is held, or "busy <uuid> <pid>"
//   (exit 3) when a live process holds one of them already.
// stdin: a line "release" releases every lock, prints "released" and
//   exits 0; the end of stdin (the test process died) exits at once.
// --no-stdin: stdin is not watched (it may be /dev/null); the process
//   exits when its parent changes (the test went away).
// --to-run: each pod (prepared) is moved to run/ as its supervisor would,
//   so that it is "running" while held and "exited" once released.
import { dist } from './dist.mjs'
const { podFromUUIDString } = await dist('pod/pod.js')
const { tryLock } = await dist('pod/locks.js')

const args = process.argv.slice(2)
const noStdin = args.includes('--no-stdin')
const toRun = args.includes('--to-run')
const [dir, ...uuids] = args.filter((a) => !a.startsWith('--'))

const runPod = (uuid) => {
  const pod = podFromUUIDString(dir, uuid)
  pod.toRun()
  return { release: () => pod.unlock() }
}

const held = []
for (const uuid of uuids) {
  const lock = toRun ? runPod(uuid) : tryLock(dir, uuid)
  if (!lock) {
    for (const h of held) h.release()
    process.stdout.write(`busy ${uuid} ${process.pid}\n`)
    process.exit(3)
  }
  held.push(lock)
}
process.stdout.write(`locked ${process.pid}\n`)

const ppid = process.ppid
setInterval(() => {
  if (process.ppid !== ppid) process.exit(0)
}, 200)

if (!noStdin) {
  let buf = ''
  process.stdin.setEncoding('utf8')
  process.stdin.on('data', (s) => {
    buf += s
    if (buf.split('\n').includes('release')) {
      for (const h of held) h.release()
      process.stdout.write('released\n')
      process.exit(0)
    }
  })
  process.stdin.on('end', () => process.exit(0))
}
