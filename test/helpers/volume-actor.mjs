// A real podctl-like process for the volume tests: runs one volume
// operation through the built library, reports on stdout (written with
// fs.writeSync, so a line is out even while the process then blocks), and
// holds what it took until stdin says "release" or closes.
//
// usage: node volume-actor.mjs COMMAND ARGS...
//   hold-key DATA UUID VOLUME       take the executor's key lock of (pod, volume)
//                                   -> "held <pid>"
//   claim DATA NAME UUID [MODE]     take the pod's lock, then claim persistent volume NAME
//                                   -> "claimed <pid>" | "refused <exit code> <message>"
//   unmount-wait DATA UUID VOLUME   unmount through the executor, waiting for a pending
//                                   operation -> "waiting <holder pid>" (if it had to), then "done <torn down>"
//   mount DATA UUID                 take the pod's lock and set up its volumes from its manifest
//                                   (failpoints apply) -> "mounted <pid>"
// The process exits when stdin ends (the test went away), releasing everything.
import fs from 'node:fs'
import { dist as lib } from './dist.mjs'

const say = (line) => fs.writeSync(1, `${line}\n`)

const [cmd, ...args] = process.argv.slice(2)
const held = []

const hold = () => {
  let buf = ''
  process.stdin.setEncoding('utf8')
  process.stdin.on('data', (s) => {
    buf += s
    if (buf.split('\n').includes('release')) {
      for (const h of held.reverse()) h()
      say('released')
      process.exit(0)
    }
  })
  process.stdin.on('end', () => process.exit(0))
}

try {
  switch (cmd) {
    case 'hold-key': {
      const [dir, uuid, volume] = args
      const { tryLockAt } = await lib('lock/lock.js')
      const { opLockPath } = await lib('volume/layout.js')
      const { volumeLocksDir } = await lib('storage/local/layout.js')
      fs.mkdirSync(volumeLocksDir(dir), { recursive: true })
      const l = tryLockAt(opLockPath(dir, uuid, volume))
      if (!l) {
        say('busy')
        process.exit(3)
      }
      held.push(() => l.release())
      say(`held ${process.pid}`)
      hold()
      break
    }
    case 'claim': {
      const [dir, name, uuid, mode] = args
      const { tryLock } = await lib('pod/locks.js')
      const { bindVolume } = await lib('volume/plugins/persistent.js')
      const l = tryLock(dir, uuid)
      if (!l) {
        say('pod-busy')
        process.exit(3)
      }
      held.push(() => l.release())
      try {
        bindVolume(dir, name, uuid, mode ? { mode } : {})
        say(`claimed ${process.pid}`)
      } catch (er) {
        say(`refused ${er.exitCode ?? 1} ${er.message}`)
      }
      hold()
      break
    }
    case 'unmount-wait': {
      const [dir, uuid, volume] = args
      const { podFromUUIDString } = await lib('pod/pod.js')
      const { OperationExecutor } = await lib('volume/executor.js')
      const pod = podFromUUIDString(dir, uuid)
      const done = new OperationExecutor(pod).unmountVolume(volume, { wait: true, timeoutMs: 600_000, onWait: (pid) => say(`waiting ${pid}`) })
      say(`done ${done}`)
      process.exit(0)
      break
    }
    case 'mount': {
      const [dir, uuid] = args
      const { podFromUUIDString } = await lib('pod/pod.js')
      const { setUpPodVolumes } = await lib('volume/pod-volumes.js')
      const pod = podFromUUIDString(dir, uuid)
      if (!pod.tryExclusiveLock()) {
        say('pod-busy')
        process.exit(3)
      }
      held.push(() => pod.unlock())
      setUpPodVolumes(pod, pod.podManifest().manifest)
      say(`mounted ${process.pid}`)
      hold()
      break
    }
    default:
      say(`unknown command ${cmd}`)
      process.exit(2)
  }
} catch (er) {
  say(`error ${er.exitCode ?? 1} ${er.message}`)
  process.exit(1)
}
