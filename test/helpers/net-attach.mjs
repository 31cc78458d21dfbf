// Makes a pod's network namespace and attaches it to networks through the
// built library: what the crash tests kill at random moments. It loads
// first and prints "ready", then starts on the first line of stdin and
// prints "attached" when done, so that the moment it is killed falls in
// the attach, not in Node's start.
// usage: node net-attach.mjs DATA_DIR UUID CONFIG_DIR NETWORK[:HOSTPORT]...
import readline from 'node:readline'
import { dist } from './dist.mjs'
const { attach, createPodNetns } = await dist('network/attach.js')
const { networkEnv } = await dist('network/layout.js')
const [dataDir, uuid, configDir, ...nets] = process.argv.slice(2)
const env = networkEnv({ configDir })
const networks = nets.map((n) => {
  const [name, port] = n.split(':')
  return { name, ...(port ? { ports: [{ hostPort: Number(port), containerPort: 80, protocol: 'tcp', hostIP: '' }] } : {}) }
})
process.stdout.write('ready\n')
const lines = readline.createInterface({ input: process.stdin })
await new Promise((resolve) => lines.once('line', resolve))
lines.close()
const netns = await createPodNetns(dataDir, uuid)
await attach(dataDir, { uuid, netns, networks, hostname: uuid.slice(0, 8) }, env)
process.stdout.write('attached\n')
