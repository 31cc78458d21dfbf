/**
 * A real etcd cluster of a test's own, on loopback ports nobody else uses
 * (never 2379/2380, so a developer's etcd is safe), with data dirs under a
 * fresh temporary dir. Members can be SIGKILLed and restarted to take the
 * quorum away and give it back. Needs etcd and etcdctl 3.4 or later
 * (Debian: etcd-server, etcd-client); without them `etcdMissing` says why
 * and the tests skip. Not a test file (test/helpers/ is excluded from
 * discovery).
 */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { promisify } from 'node:util'
import { GUARDIAN_FD, guardedSpawnArgs } from '../../lib/proc/guardian.js'
import type { Teardown } from './common.js'

export interface EtcdMember {
  name: string
  clientUrl: string
  peerUrl: string
  dataDir: string
  running(): boolean
}

export interface EtcdCluster {
  /** Comma-separated client URLs of all members, e.g. "http://127.0.0.1:23791,http://127.0.0.1:23793,...". */
  endpoints: string
  members: EtcdMember[]
  /** SIGKILLs member i (0-based); resolves once its process has exited. */
  kill(i: number): Promise<void>
  /** Starts member i again with its existing data dir (rejoins the cluster); resolves once it answers /health. */
  restart(i: number): Promise<void>
  /** Stops member i with SIGSTOP: its connections stay open and nothing answers on them (a hung member). */
  pause(i: number): void
  /** Lets a paused member i go on (SIGCONT). */
  resume(i: number): void
  /** Stops every member (SIGKILL) and removes the data dirs. Safe to call twice. */
  stop(): Promise<void>
}

/** How long a member (or the whole cluster) may take to become healthy. */
const READY_MS = 20_000
const POLL_MS = 100
/** How much of a member's stderr is kept for error messages. */
const TAIL_CHARS = 4_096

/**
 * The members' and etcdctl's environment: etcd reads ETCD_* (and etcdctl
 * ETCDCTL_*) as flags, and refuses to start when one of them shadows a
 * flag we pass; a developer's ETCDCTL_ENDPOINTS would point etcdctl at
 * their cluster.
 */
const etcdEnv = (): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {}
  for (const [k, v] of Object.entries(process.env)) if (!/^ETCD(CTL)?_/.test(k)) env[k] = v
  env.ETCDCTL_API = '3'
  return env
}

const versionOf = (cmd: string, args: string[], re: RegExp): string | undefined => {
  const r = spawnSync(cmd, args, { encoding: 'utf8', env: etcdEnv(), timeout: 10_000 })
  return r.error || r.status !== 0 ? undefined : re.exec(r.stdout)?.[1]
}

// 3.4 is the first with --log-level and --logger zap, and its /health
// answers only when the member's cluster has a quorum (a read through raft).
const missing = (): string | undefined => {
  const hint = '(Debian: apt-get install etcd-server etcd-client)'
  const etcd = versionOf('etcd', ['--version'], /^etcd Version: (\S+)/m)
  if (etcd === undefined) return `no etcd on PATH ${hint}`
  if (versionOf('etcdctl', ['version'], /^etcdctl version: (\S+)/m) === undefined) return `no etcdctl on PATH ${hint}`
  const [major = 0, minor = 0] = etcd.split('.').map(Number)
  if (major < 3 || (major === 3 && minor < 4)) return `etcd ${etcd} is older than 3.4`
  return undefined
}

/** Why etcd tests cannot run here (no etcd binary), or undefined. Tests pass it as tap's `skip` so the reason is printed. */
export const etcdMissing: string | undefined = missing()

/**
 * A free loopback port: bind port 0, read the port the kernel chose, close.
 * Linux hands out odd ports to bind(0) and even ones to connect(), so the
 * members' own outgoing connections rarely take a port we chose; another
 * process can still take it before etcd binds it, which startEtcd retries.
 */
const freePort = async (): Promise<number> => {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const srv = net.createServer()
      srv.once('error', reject)
      srv.listen({ host: '127.0.0.1', port: 0, exclusive: true }, () => {
        const { port } = srv.address() as net.AddressInfo
        srv.close(() => resolve(port))
      })
    })
    if (port !== 2379 && port !== 2380) return port
  }
}

/** GET url; the status and body, or undefined on any error. No keep-alive: nothing lingers once a member is killed. */
const httpGet = (url: string, timeoutMs: number): Promise<{ status: number; body: string } | undefined> =>
  new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: timeoutMs }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (s: string) => (body += s))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
      res.on('error', () => resolve(undefined))
    })
    req.on('timeout', () => req.destroy())
    req.on('error', () => resolve(undefined))
  })

const healthy = async (clientUrl: string): Promise<boolean> => {
  const r = await httpGet(`${clientUrl}/health`, 1_000)
  if (r?.status !== 200) return false
  try {
    return (JSON.parse(r.body) as { health?: unknown }).health === 'true'
  } catch {
    return false
  }
}

const execFileP = promisify(execFile)

/** `etcdctl --endpoints url args...`; its stdout, or it throws (with etcdctl's stderr). */
const etcdctl = async (url: string, args: string[]): Promise<string> =>
  (await execFileP('etcdctl', ['--endpoints', url, '--command-timeout=2s', ...args], { env: etcdEnv(), encoding: 'utf8', timeout: 10_000 })).stdout

/**
 * The process groups of members alive now. A member's guardian kills it
 * when this process dies however it dies; this 'exit' handler only makes
 * that immediate on an ordinary exit.
 */
const liveGroups = new Set<number>()
process.on('exit', () => {
  for (const pgid of liveGroups) killGroup(pgid)
})

const killGroup = (pgid: number): void => {
  try {
    process.kill(-pgid, 'SIGKILL')
  } catch {
    // already gone
  }
}

/** A started etcd process. */
interface Proc {
  child: ChildProcess
  exited: Promise<void>
  /** The last TAIL_CHARS of its stderr. */
  tail(): string
  /** Why it exited, once it has: "code 1", "signal SIGKILL". */
  exit?: string
}

/**
 * Spawns etcd through lib/proc/guardian.ts's `sh`: etcd keeps the pid we
 * spawned and leads its own process group, and a guardian in that group
 * SIGKILLs the group once our end of its pipe closes, that is, when this
 * process dies, even by SIGKILL (a tap timeout). So no member outlives the
 * test, and killing the group kills the guardian too.
 */
const spawnEtcd = (args: string[]): Proc => {
  const [file, argv] = guardedSpawnArgs('etcd', args)
  const child = spawn(file, argv, { detached: true, stdio: ['ignore', 'ignore', 'pipe', 'pipe'], env: etcdEnv() })
  child.stdio[GUARDIAN_FD]?.on('error', () => {}) // it only ever ends
  let tail = ''
  child.stderr?.setEncoding('utf8').on('data', (s: string) => (tail = (tail + s).slice(-TAIL_CHARS)))
  const proc: Proc = {
    child,
    tail: () => tail,
    exited: new Promise<void>((resolve) => {
      // 'error' alone (no 'exit') when the spawn itself failed.
      child.once('error', (e) => {
        proc.exit ??= e.message
        resolve()
      })
      child.once('exit', (code, signal) => {
        proc.exit = signal ? `signal ${signal}` : `code ${code}`
        if (child.pid !== undefined) liveGroups.delete(child.pid)
        resolve()
      })
    }),
  }
  if (child.pid !== undefined) liveGroups.add(child.pid)
  return proc
}

const isRunning = (p: Proc | undefined): boolean => p !== undefined && p.exit === undefined

/** A startup failure; `retry` when a port we chose was taken meanwhile. */
class StartError extends Error {
  constructor(
    message: string,
    readonly retry = false,
  ) {
    super(message)
  }
}

/** How it exited, if it has, and the end of its stderr. */
const report = (p: Proc): string => {
  const tail = p.tail().trim()
  return `${p.exit ? `it exited (${p.exit}); ` : ''}its stderr ends: ${tail === '' ? '(nothing)' : `\n${tail}`}`
}

/** Waits until `p` answers /health, or fails at once if it exits. */
const waitHealthy = async (name: string, url: string, p: Proc, deadline: number): Promise<void> => {
  for (;;) {
    if (!isRunning(p)) {
      throw new StartError(`etcd ${name} did not start: ${report(p)}`, p.tail().includes('address already in use'))
    }
    if (await healthy(url)) return
    if (Date.now() > deadline) throw new StartError(`etcd ${name} did not answer /health within ${READY_MS} ms: ${report(p)}`)
    await delay(POLL_MS)
  }
}

/** One attempt at a cluster on fresh ports and a fresh dir; stops it and throws if it does not come up. */
const tryStart = async (size: number): Promise<EtcdCluster> => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-etcd-'))
  const ports: number[] = []
  // Chosen one by one while each probe is closed, so no two are equal.
  while (ports.length < 2 * size) {
    const p = await freePort()
    if (!ports.includes(p)) ports.push(p)
  }
  const members: EtcdMember[] = []
  const procs: Array<Proc | undefined> = []
  for (let i = 0; i < size; i++) {
    const m: EtcdMember = {
      name: `m${i}`,
      clientUrl: `http://127.0.0.1:${ports[2 * i]}`,
      peerUrl: `http://127.0.0.1:${ports[2 * i + 1]}`,
      dataDir: path.join(root, `m${i}`),
      running: () => isRunning(procs[i]),
    }
    members.push(m)
  }
  const initialCluster = members.map((m) => `${m.name}=${m.peerUrl}`).join(',')
  const token = `podctl-${randomUUID()}`
  // A fast heartbeat and election (etcd's defaults: 100 and 1000 ms) make
  // a new leader come within a second of the old one's death.
  const argsOf = (m: EtcdMember, state: 'new' | 'existing'): string[] => [
    ...['--name', m.name, '--data-dir', m.dataDir],
    ...['--listen-client-urls', m.clientUrl, '--advertise-client-urls', m.clientUrl],
    ...['--listen-peer-urls', m.peerUrl, '--initial-advertise-peer-urls', m.peerUrl],
    ...['--initial-cluster', initialCluster, '--initial-cluster-state', state, '--initial-cluster-token', token],
    ...['--heartbeat-interval', '50', '--election-timeout', '500'],
    // zap: under capnslog, 3.4's default logger, etcd warns that it is deprecated.
    ...['--logger', 'zap', '--log-outputs', 'stderr', '--log-level', 'error'],
  ]

  let stopping: Promise<void> | undefined
  const check = (i: number): EtcdMember => {
    const m = members[i]
    if (m === undefined) throw new RangeError(`no etcd member ${i} (the cluster has ${size})`)
    if (stopping) throw new Error('the etcd cluster is stopped')
    return m
  }
  const kill = async (i: number): Promise<void> => {
    const p = procs[i]
    if (p === undefined) return
    if (p.child.pid !== undefined) killGroup(p.child.pid)
    await p.exited
  }
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      await Promise.all(members.map((_, i) => kill(i)))
      fs.rmSync(root, { recursive: true, force: true })
    })())

  const cluster: EtcdCluster = {
    endpoints: members.map((m) => m.clientUrl).join(','),
    members,
    kill: async (i) => {
      check(i)
      await kill(i)
    },
    pause: (i) => {
      check(i)
      const pid = procs[i]?.child.pid
      if (pid !== undefined) process.kill(-pid, 'SIGSTOP')
    },
    resume: (i) => {
      check(i)
      const pid = procs[i]?.child.pid
      if (pid !== undefined) process.kill(-pid, 'SIGCONT')
    },
    restart: async (i) => {
      const m = check(i)
      if (isRunning(procs[i])) throw new Error(`etcd ${m.name} is running; kill it first`)
      const p = (procs[i] = spawnEtcd(argsOf(m, 'existing')))
      await waitHealthy(m.name, m.clientUrl, p, Date.now() + READY_MS)
    },
    stop,
  }

  try {
    const deadline = Date.now() + READY_MS
    members.forEach((m, i) => (procs[i] = spawnEtcd(argsOf(m, 'new'))))
    await Promise.all(members.map((m, i) => waitHealthy(m.name, m.clientUrl, procs[i]!, deadline)))
    // Healthy members have a leader; that every one of them serves the
    // same data is seen only through a write and reads everywhere.
    const key = `podctl-etcd-ready-${token}`
    for (let why = ''; ; await delay(POLL_MS)) {
      if (Date.now() > deadline) throw new StartError(`a put through etcd m0 was not read back from every member within ${READY_MS} ms: ${why}`)
      try {
        await etcdctl(members[0]!.clientUrl, ['put', key, token])
        const got = await Promise.all(members.map((m) => etcdctl(m.clientUrl, ['get', key, '--print-value-only'])))
        if (got.every((v) => v.trim() === token)) break
        why = `read ${JSON.stringify(got.map((v) => v.trim()))}`
      } catch (e) {
        why = (e as Error).message.trim()
      }
    }
    return cluster
  } catch (e) {
    await stop()
    throw e
  }
}

/**
 * Starts an etcd cluster of `size` members (default 3) on free loopback
 * ports; resolves once the cluster is healthy (a put through one member is
 * read from every member). Registers t.teardown(stop).
 */
export const startEtcd = async (t: Teardown, size = 3): Promise<EtcdCluster> => {
  if (etcdMissing !== undefined) throw new Error(etcdMissing)
  for (let attempt = 1; ; attempt++) {
    try {
      const cluster = await tryStart(size)
      t.teardown(cluster.stop)
      return cluster
    } catch (e) {
      if (!(e instanceof StartError && e.retry && attempt < 3)) throw e
    }
  }
}
