// Moves pods on while a test lists them: for every UUID given (prepared
// pods), prepared → run → (unlock: exited) → exited-garbage → (unlock),
// through the built library. Prints "done <n>" at the end.
// usage: node mover.mjs DATA_DIR UUID...
import { dist } from './dist.mjs'
const { podFromUUIDString } = await dist('pod/pod.js')
const [dir, ...uuids] = process.argv.slice(2)
let n = 0
for (const uuid of uuids) {
  const pod = podFromUUIDString(dir, uuid)
  pod.toRun({ sync: false })
  pod.unlock()
  pod.toExitedGarbage({ sync: false })
  pod.unlock()
  n++
}
process.stdout.write(`done ${n}\n`)
