// Makes a prepared pod "running" for the CLI tests: moves it to run/ through
// the built library and holds its lock until stdin closes or a signal comes,
// then unlocks it (the pod is "exited") and exits.
// usage: node cli-hold-lock.mjs DATA_DIR UUID
const { podFromUUIDString } = await import(new URL('../../dist/lib/index.js', import.meta.url).href)

const [dir, uuid] = process.argv.slice(2)
const pod = podFromUUIDString(dir, uuid)
pod.toRun()
process.stdout.write('ready\n')

const done = () => {
  pod.unlock()
  process.exit(0)
}
process.stdin.on('end', done)
process.stdin.on('error', done)
process.stdin.resume()
process.on('SIGTERM', done)
process.on('SIGINT', done)
