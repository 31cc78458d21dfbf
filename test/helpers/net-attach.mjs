// Makes a pod's network namespace and attaches it to networks through the
// built library, printing "attached" when done: what the crash tests kill
// at random moments. usage: node net-attach.mjs DATA_DIR UUID CONFIG_DIR NETWORK[:HOSTPORT]...
const { attach, createPodNetns } = await import(new URL('../../dist/lib/network/attach.js', import.meta.url).href)
const { networkEnv } = await import(new URL('../../dist/lib/network/layout.js', import.meta.url).href)
const [dataDir, uuid, configDir, ...nets] = process.argv.slice(2)
const env = networkEnv({ configDir })
const netns = await createPodNetns(dataDir, uuid)
const networks = nets.map((n) => {
  const [name, port] = n.split(':')
  return { name, ...(port ? { ports: [{ hostPort: Number(port), containerPort: 80, protocol: 'tcp', hostIP: '' }] } : {}) }
})
await attach(dataDir, { uuid, netns, networks, hostname: uuid.slice(0, 8) }, env)
process.stdout.write('attached\n')
