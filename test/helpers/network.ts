// What the network tests share: whether this machine can attach pods to
// CNI networks (root, the plugins, ip, iptables), a data dir whose bridges,
// firewall chains and namespaces are removed after the test, and looks at
// the host that do not go through the library (ip, iptables-save).
import { spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { ensureDataDir } from '../../lib/pod/layout.js'
import { bridgeOf } from '../../lib/network/config.js'
import { DEFAULT_PLUGIN_DIRS, networkEnv, type NetworkEnv } from '../../lib/network/layout.js'
import { ownNetworks } from '../../lib/network/networks.js'
import { allRecords } from '../../lib/network/records.js'
import { gcNetworks } from '../../lib/network/attach.js'
import { findPlugin } from '../../lib/network/cni.js'
import { toolPath } from '../../lib/network/tool.js'
import { defaultRouteDevice } from '../../lib/network/host.js'
import { portHolder } from '../../lib/network/ports.js'
import { podctl } from './cli-util.js'
import { nodeCommand } from './launcher.js'
import { removeNetworkingOf } from './network-sweep.js'
import { killPodsIn } from './containers.js'
import type { Test } from './common.js'

const run = (cmd: string, args: string[], input?: string) => spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, PATH: toolPath() }, ...(input !== undefined ? { input } : {}) })

/** Undefined when pods can be attached to CNI networks here; else what is missing, in words. */
export const networkMissing = (): string | undefined => {
  if (process.getuid?.() !== 0) return 'the test does not run as root'
  for (const p of ['bridge', 'host-local', 'portmap']) if (findPlugin(p, DEFAULT_PLUGIN_DIRS) === undefined) return `no CNI plugin ${p} (Debian: containernetworking-plugins)`
  for (const [cmd, args] of [['ip', ['-V']], ['iptables-restore', ['--version']], ['iptables-save', ['--version']]] as const) {
    if (run(cmd, [...args]).status !== 0) return `no ${cmd} here`
  }
  return undefined
}

const bases = new WeakMap<Test, string>()
/**
 * The test's own directory, made once (t.testdir empties it on each call),
 * and the data dir in it, whose networking is taken down after the test:
 * registered before the directory, so that it runs before tap removes it.
 */
export const scratch = (t: Test): string => {
  let base = bases.get(t)
  if (base === undefined) {
    const dir = path.join(t.testdirName, 'data')
    t.teardown(() => teardownNetworking(dir))
    base = t.testdir({})
    bases.set(t, base)
  }
  return base
}

/** The network environment of the tests: the default plugins, an empty config dir of the test's own, a shorter plugin timeout. */
export const testEnv = (t: Test): NetworkEnv => {
  const configDir = path.join(scratch(t), 'net.d')
  fs.mkdirSync(configDir, { recursive: true })
  return { ...networkEnv({ configDir }, {}), timeoutMs: 30_000 }
}

/**
 * A data dir (its parent the test's own) whose networking is taken down
 * after the test: the namespaces of its records, its bridges, its firewall
 * chains and their jumps.
 */
export const netDataDir = (t: Test): string => {
  const dir = path.join(scratch(t), 'data')
  ensureDataDir(dir)
  return dir
}

export const teardownNetworking = async (dir: string): Promise<void> => {
  if (!fs.existsSync(path.join(dir, 'networks'))) return // never had a network, nor rules
  // Whatever a failed test left attached: DEL from the records (portmap's rules, the addresses).
  await gcNetworks(dir, networkEnv({ configDir: '/nonexistent' }, {}), { alive: () => false }).catch(() => {})
  for (const rec of allRecords(dir)) if (rec.netns.startsWith('/run/netns/podctl-')) run('ip', ['netns', 'del', path.basename(rec.netns)])
  const bridges = ownNetworks(dir).flatMap((n) => ('damaged' in n ? [] : (bridgeOf(n.conflist) ?? [])))
  removeNetworkingOf(dir, bridges)
}

/** Every line of iptables-save (v4 and v6) that holds `text`. */
export const ruleLines = (text: string): string[] =>
  [run('iptables-save', []).stdout, run('ip6tables-save', []).stdout].join('\n').split('\n').filter((l) => l.includes(text))

/**
 * Deletes every iptables rule (v4 and v6, nat and filter) that holds `text`,
 * and the chains of CNI's own they jumped to: what the bridge plugin leaves
 * of a pod's ipMasq when its DEL no longer finds the pod's namespace (a test
 * of that case cleans up after itself with it).
 */
export const removeRulesHolding = (text: string): void => {
  for (const cmd of ['iptables', 'ip6tables']) {
    for (const table of ['nat', 'filter']) {
      const chains = new Set<string>()
      // -w: CNI plugins and other tests change the same tables at once; without it a busy lock fails the command.
      for (const line of run(cmd, ['-w', '-t', table, '-S']).stdout.split('\n')) {
        if (!line.startsWith('-A ') || !line.includes(text)) continue
        const target = / -j (CNI-[0-9a-f]+)$/.exec(line)?.[1]
        if (target !== undefined) chains.add(target)
        // -S quotes a comment as a shell would read it.
        run('sh', ['-c', `${cmd} -w -t ${table} -D ${line.slice('-A '.length)}`])
      }
      for (const chain of chains) {
        run(cmd, ['-w', '-t', table, '-F', chain])
        run(cmd, ['-w', '-t', table, '-X', chain])
      }
    }
  }
}

/** The network namespaces `ip netns` lists. */
export const netnsNames = (): string[] => {
  try {
    return fs.readdirSync('/run/netns')
  } catch {
    return []
  }
}

/** Runs a command in a namespace (ip netns exec NAME ...). */
export const inNetns = (netns: string, cmd: string[], input?: string) => run('ip', ['netns', 'exec', path.basename(netns), ...cmd], input)

/** The host's own first IPv4 address that is not loopback and not a podctl bridge's. */
export const hostAddress = (): string | undefined => {
  for (const [name, addrs] of Object.entries(os.networkInterfaces())) {
    if (name.startsWith('podctl') || name.startsWith('cni') || name.startsWith('veth')) continue
    const a = addrs?.find((x) => x.family === 'IPv4' && !x.internal)
    if (a) return a.address
  }
  return undefined
}

/** The host's IPv4 address on the interface of its default route: where other hosts reach it. */
export const defaultRouteAddress = (): string | undefined => {
  const dev = defaultRouteDevice()
  return dev === undefined ? undefined : os.networkInterfaces()[dev]?.find((a) => a.family === 'IPv4' && !a.internal)?.address
}

/** A host port (tcp) nobody holds now, and no pod of `records` publishes. */
export const freeHostPort = (): number => {
  for (;;) {
    const p = 20000 + Math.floor(Math.random() * 20000)
    if (portHolder({ hostPort: p, containerPort: 1, protocol: 'tcp', hostIP: '' }, []) === undefined) return p
  }
}

/**
 * A data dir for pods on networks, in a sticky /tmp (CONTRACT §10), whose
 * pods are stopped after the test (what is left of them killed), then its
 * networking taken down (DEL from its records, its bridges, its chains),
 * then removed.
 */
export const podsDataDir = (t: Test): string => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-net-'))
  const dir = path.join(base, 'data')
  t.teardown(async () => {
    const r = podctl(dir, ['list', '--format', 'json'])
    if (r.status === 0) {
      const running = (JSON.parse(r.stdout) as { uuid: string; state: string }[]).filter((p) => p.state === 'running').map((p) => p.uuid)
      if (running.length > 0) podctl(dir, ['stop', '--force', ...running])
    }
    killPodsIn(dir)
    await teardownNetworking(dir)
    fs.rmSync(base, { recursive: true, force: true })
  })
  return dir
}

/** What a TCP connection to host:port reads before the other end closes (trimmed), or the error's code ('timeout' after `ms`). */
export const fetchText = (host: string, port: number, ms = 3000): Promise<string> =>
  new Promise((resolve) => {
    const s = net.connect({ host, port, timeout: ms })
    let got = ''
    s.on('data', (b) => (got += b.toString()))
    s.on('end', () => resolve(got.trim()))
    s.on('timeout', () => {
      s.destroy()
      resolve('timeout')
    })
    s.on('error', (er: NodeJS.ErrnoException) => resolve(er.code ?? 'error'))
  })

/**
 * A TCP server on `host` (an ephemeral port) that answers `answer`, in a
 * process of its own (the test's event loop waits while a pod runs
 * through spawnSync); killed at teardown. Its port and pid.
 */
export const hostServer = async (t: Test, host: string, answer: string): Promise<{ port: number; pid: number }> => {
  const js = `require('net').createServer((c) => c.end(${JSON.stringify(answer)})).listen(0, ${JSON.stringify(host)}, function () { console.log(this.address().port) })`
  const [node, argv] = nodeCommand(['-e', js])
  const child = spawn(node, argv, { stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(() => void child.kill('SIGKILL'))
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.once('data', (b: Buffer) => resolve(Number(b.toString().trim())))
    child.once('exit', (code) => reject(new Error(`the host's server exited with ${code}`)))
  })
  return { port, pid: child.pid! }
}
