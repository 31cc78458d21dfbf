// A large store, fast: a few real pods made through the library, then
// copied under new UUIDs (the pod's directory, its record's "uuid"
// rewritten), so that list and gc see exactly what podctl writes without
// paying createPod's fsyncs 100,000 times.
//
//   node bench/lib/clone-store.js DATA_DIR COUNT
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { createExited } from './population.js'

/** Grows `dataDir` to `count` exited pods: 10 made by podctl, the rest their copies. */
export const cloneStore = async (dataDir, count) => {
  const templates = []
  for (let i = 0; i < Math.min(10, count); i++) templates.push(await createExited(dataDir, i))
  const runDir = path.join(dataDir, 'pods', 'run')
  const files = templates.map((uuid) => {
    const dir = path.join(runDir, uuid)
    return { record: fs.readFileSync(path.join(dir, 'pod.json'), 'latin1'), manifest: fs.readFileSync(path.join(dir, 'manifest')), apps: fs.readdirSync(path.join(dir, 'apps')), uuid }
  })
  for (let i = templates.length; i < count; i++) {
    const t = files[i % files.length]
    const uuid = randomUUID()
    const dir = path.join(runDir, uuid)
    fs.mkdirSync(path.join(dir, 'apps'), { recursive: true, mode: 0o750 })
    for (const a of t.apps) fs.mkdirSync(path.join(dir, 'apps', a), { mode: 0o750 })
    fs.writeFileSync(path.join(dir, 'manifest'), t.manifest, { mode: 0o640 })
    fs.writeFileSync(path.join(dir, 'pod.json'), t.record.replace(t.uuid, uuid), { encoding: 'latin1', mode: 0o640 })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [dir, count] = process.argv.slice(2)
  await cloneStore(path.resolve(dir), Number(count))
}
