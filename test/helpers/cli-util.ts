/**
 * The black-box side of the tests: run podctl's built CLI (to its end, in
 * a thread of the test process or as bin/podctl in a process of its own;
 * or started as bin/podctl and read line by line), check what it printed
 * against the JSON shapes and tables users script against, and make pods
 * in every state through the library. Not a test file (test/helpers/ is
 * excluded from discovery).
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { podFromUUIDString } from '../../lib/pod/pod.js'
import { createPod, preparePod } from '../../lib/pod/prepare.js'
import type { PodManifest } from '../../lib/pod/manifest.js'
import { launcher } from './launcher.js'
import { noteDataDir } from './network-sweep.js'
import { podctlInThread } from './podctl-thread.js'
import { BIN, TIME_RE, UUID_RE, manifest, type Teardown, type Test } from './common.js'

export { launcher }

export interface Result {
  status: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

export interface RunOptions {
  input?: string
  env?: NodeJS.ProcessEnv
  uid?: number
  gid?: number
  cwd?: string
}

export const argvFor = (dir: string | undefined, args: readonly string[]): string[] => {
  if (dir === undefined) return [BIN, ...args]
  noteDataDir(dir)
  return [BIN, '--dir', dir, ...args]
}

/**
 * Words of a command line that needs a process of its own: a controller,
 * enter's and stats' terminal and signals, skopeo's progress (pull, written
 * to the process's stderr), and stdin ("-", -i, -t).
 */
const OWN_PROCESS_WORDS = new Set(['controller', 'enter', 'stats', 'pull', '-', '-i', '--interactive', '-t', '--tty', '-it'])

/** PODCTL_TEST_SPAWN=1 runs every podctl() in a process of its own, as bin/podctl. */
const alwaysSpawn = process.env.PODCTL_TEST_SPAWN === '1'

/** A path to the process's own stdin or descriptors (/dev/stdin, /dev/fd/N, /proc/self/…), alone or as an option's value. */
const OWN_FILE_RE = /(^|[=:])\/(dev\/stdin|dev\/fd\/|proc\/self\/)/

/** Whether a command line needs a process of its own (OWN_PROCESS_WORDS, OWN_FILE_RE), or PODCTL_TEST_SPAWN=1 says every one does. */
export const needsOwnProcess = (args: readonly string[]): boolean => alwaysSpawn || args.some((a) => OWN_PROCESS_WORDS.has(a) || a.endsWith(':-') || OWN_FILE_RE.test(a))

/** Whether podctl() can run this in the test process's podctl thread (podctl-thread.ts): nothing of the process but its environment is asked for. */
const threadable = (args: readonly string[], opts: RunOptions): boolean =>
  opts.uid === undefined && opts.gid === undefined && opts.cwd === undefined && !opts.input && !needsOwnProcess(args)

/**
 * Runs `podctl [--dir dir] args...` synchronously: in the test process's
 * podctl thread when it can (threadable), else as bin/podctl in a process.
 */
export const podctl = (dir: string | undefined, args: string[], opts: RunOptions = {}): Result => {
  if (threadable(args, opts)) return { signal: null, ...podctlInThread(argvFor(dir, args).slice(1), opts.env) }
  // Another user cannot write our coverage dir (node would say so on stderr).
  const [cmd, argv] = launcher(argvFor(dir, args), opts.uid === undefined)
  const r = spawnSync(cmd, argv, {
    encoding: 'utf8',
    input: opts.input ?? '',
    ...(opts.env ? { env: opts.env } : {}),
    ...(opts.uid !== undefined ? { uid: opts.uid } : {}),
    ...(opts.gid !== undefined ? { gid: opts.gid } : {}),
    ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
  })
  if (r.error) throw r.error
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr }
}

/** Why podctl cannot be given a terminal here (util-linux script(1) missing), or false. */
export const noTerminalHere: string | false = spawnSync('script', ['--version']).status === 0 ? false : 'util-linux script(1) is not installed'

/** Runs `podctl [--dir dir] args...` on a terminal of its own (script(1)'s); its stdout is the terminal's output. */
export const podctlOnTerminal = (dir: string | undefined, args: string[]): { status: number | null; stdout: string; stderr: string } => {
  const [cmd, argv] = launcher(argvFor(dir, args))
  const line = [cmd, ...argv].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ')
  const r = spawnSync('script', ['-qec', line, '/dev/null'], { encoding: 'utf8', input: '' })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

/** Spawns a child and kills it at teardown if it is still alive. */
export const spawnTracked = (t: Teardown, cmd: string, args: string[], opts: SpawnOptions = {}): ChildProcess => {
  const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], ...opts })
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  })
  return child
}

/** Collects a child's output and resolves when it has exited and its pipes closed. */
export const finished = (child: ChildProcess): Promise<Result> =>
  new Promise((resolve, reject) => {
    let stdout = ''
    let stderr = ''
    child.stdout?.setEncoding('utf8').on('data', (s: string) => (stdout += s))
    child.stderr?.setEncoding('utf8').on('data', (s: string) => (stderr += s))
    child.on('error', reject)
    child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr }))
  })

/** A running podctl: its process, its output so far, and its end. */
export interface Running {
  child: ChildProcess
  done: Promise<Result>
  /** Resolves with the first stdout line matching `re` (lines already seen count). */
  line(re: RegExp): Promise<string>
}

/** Starts `podctl --dir dir args...` (killed at teardown if still alive). */
export const startPodctl = (t: Teardown, dir: string, args: string[], opts: RunOptions = {}): Running => {
  const [cmd, argv] = launcher(argvFor(dir, args))
  const child = spawnTracked(t, cmd, argv, opts.env ? { env: opts.env } : {})
  const done = finished(child)
  child.stdin?.end(opts.input ?? '')
  const lines: string[] = []
  const waiters: { re: RegExp; resolve: (l: string) => void }[] = []
  let partial = ''
  child.stdout?.on('data', (s: string | Buffer) => {
    const parts = (partial + String(s)).split('\n')
    partial = parts.pop()!
    for (const l of parts) {
      lines.push(l)
      for (const w of [...waiters]) {
        if (w.re.test(l)) {
          waiters.splice(waiters.indexOf(w), 1)
          w.resolve(l)
        }
      }
    }
  })
  const line = (re: RegExp): Promise<string> => {
    const seen = lines.find((l) => re.test(l))
    if (seen !== undefined) return Promise.resolve(seen)
    return new Promise((resolve, reject) => {
      waiters.push({ re, resolve })
      void done.then((r) => reject(new Error(`podctl ${args.join(' ')} ended (${r.status ?? r.signal}) before a line matching ${re}; stdout=${JSON.stringify(r.stdout)} stderr=${JSON.stringify(r.stderr)}`)))
    })
  }
  return { child, done, line }
}

/** Runs `podctl --dir dir args...` as an asynchronous child (killed at teardown). */
export const podctlAsync = (t: Teardown, dir: string, args: string[], opts: RunOptions = {}): Promise<Result> =>
  startPodctl(t, dir, args, opts).done

/** Runs podctl (as podctl() does when it can, else as podctlAsync) and parses its stdout as JSON (asserting exit 0 first). */
export const podctlJson = async <T = any>(t: Test, dir: string, args: string[]): Promise<T> => {
  const r = threadable(args, {}) ? podctl(dir, args) : await podctlAsync(t, dir, args)
  t.equal(r.status, 0, `podctl ${args.join(' ')} exits 0`, { stderr: r.stderr })
  return JSON.parse(r.stdout) as T
}

/** Runs `run --detach` and returns the UUID it printed (asserting the contract). */
export const runDetached = async (t: Test, dir: string, args: string[]): Promise<string> => {
  const r = podctl(dir, ['run', '--detach', ...args])
  t.equal(r.status, 0, 'run --detach exits 0', { stderr: r.stderr })
  t.match(r.stdout, /^[0-9a-f-]{36}\n$/, 'run --detach prints only the UUID')
  return r.stdout.trim()
}

/** A prepared pod, through the library. */
export const preparedPod = async (dir: string, m: PodManifest = manifest(), sync = true): Promise<string> => {
  const pod = await preparePod(dir, m, { sync })
  return pod.uuid
}

/** An exited pod (run/, unlocked), through the library: created, run, unlocked. */
export const exitedPod = async (dir: string, m: PodManifest = manifest(), sync = true): Promise<string> => {
  const pod = await createPod(dir, m, { sync })
  pod.toRun({ sync })
  pod.unlock()
  return pod.uuid
}

/** An aborted prepare (prepare/, unlocked): its creator gave up without cleaning up. */
export const abortedPod = async (dir: string, m: PodManifest = manifest()): Promise<string> => {
  const pod = await createPod(dir, m)
  pod.unlock()
  return pod.uuid
}

/** An exited pod marked garbage (exited-garbage/, unlocked). */
export const exitedGarbagePod = async (dir: string): Promise<string> => {
  const uuid = await exitedPod(dir)
  const pod = podFromUUIDString(dir, uuid)
  pod.toExitedGarbage()
  pod.unlock()
  return uuid
}

/** A prepared pod marked garbage (garbage/, unlocked). */
export const garbagePod = async (dir: string): Promise<string> => {
  const uuid = await preparedPod(dir)
  const pod = podFromUUIDString(dir, uuid)
  pod.toGarbage()
  pod.unlock()
  return uuid
}

/** Keys of the pod JSON object , in any order. */
export const POD_KEYS = [
  'uuid',
  'name',
  'state',
  'created_at',
  'started_at',
  'gc_marked_at',
  'pid',
  'mutable',
  'isolation',
  'network',
  'networks',
  'runtime',
  'exit_code',
  'labels',
  'annotations',
  'apps',
].sort()
export const APP_KEYS = ['name', 'type', 'state', 'pid', 'started_at', 'finished_at', 'exit_code'].sort()
/** App keys present only when they say something (CONTRACT §12). */
export const APP_OPTIONAL_KEYS = ['reason', 'privileged', 'image', 'image_name', 'rootfs']

export const POD_STATES = [
  'embryo',
  'preparing',
  'aborted prepare',
  'prepared',
  'running',
  'exited',
  'exited deleting',
  'exited garbage',
  'deleting',
  'garbage',
]

/** Problems with a pod JSON object; empty when it conforms. */
export const podShapeProblems = (v: unknown): string[] => {
  const p: string[] = []
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return ['not an object']
  const o = v as Record<string, unknown>
  const keys = Object.keys(o).sort()
  if (JSON.stringify(keys) !== JSON.stringify(POD_KEYS)) p.push(`keys ${keys.join(',')}`)
  const time = (k: string, x: unknown): void => {
    if (x !== null && !(typeof x === 'string' && TIME_RE.test(x))) p.push(`${k}=${JSON.stringify(x)} is not RFC 3339 with ms or null`)
  }
  const intOrNull = (k: string, x: unknown): void => {
    if (x !== null && !Number.isInteger(x)) p.push(`${k}=${JSON.stringify(x)} is not an integer or null`)
  }
  const strMap = (k: string, x: unknown): void => {
    if (x === null || typeof x !== 'object' || Array.isArray(x) || Object.values(x).some((s) => typeof s !== 'string')) {
      p.push(`${k} is not a string map`)
    }
  }
  if (typeof o.uuid !== 'string' || !UUID_RE.test(o.uuid)) p.push(`uuid=${JSON.stringify(o.uuid)}`)
  if (o.name !== null && typeof o.name !== 'string') p.push(`name=${JSON.stringify(o.name)}`)
  if (typeof o.state !== 'string' || !POD_STATES.includes(o.state)) p.push(`state=${JSON.stringify(o.state)}`)
  time('created_at', o.created_at)
  time('started_at', o.started_at)
  time('gc_marked_at', o.gc_marked_at)
  intOrNull('pid', o.pid)
  intOrNull('exit_code', o.exit_code)
  if (typeof o.mutable !== 'boolean') p.push(`mutable=${JSON.stringify(o.mutable)}`)
  if (o.isolation !== 'host' && o.isolation !== 'namespaces') p.push(`isolation=${JSON.stringify(o.isolation)}`)
  // host, none, or the (first) network it joins: bridge, or a network's name (CONTRACT §14).
  if (typeof o.network !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/.test(o.network)) p.push(`network=${JSON.stringify(o.network)}`)
  const strOrNull = (x: unknown): boolean => x === null || typeof x === 'string'
  const attachment = (a: unknown): boolean => {
    const x = a as Record<string, unknown>
    return a !== null && typeof a === 'object' && JSON.stringify(Object.keys(x).sort()) === '["iface","ip","ip6","mac","name"]' && typeof x.name === 'string' && typeof x.iface === 'string' && strOrNull(x.ip) && strOrNull(x.ip6) && strOrNull(x.mac)
  }
  if (o.networks !== null && !(Array.isArray(o.networks) && o.networks.every(attachment))) p.push(`networks=${JSON.stringify(o.networks)} is not null or a list of {name, ip, ip6, iface, mac}`)
  if (o.isolation === 'host' ? o.runtime !== null : typeof o.runtime !== 'string') p.push(`runtime=${JSON.stringify(o.runtime)} with isolation ${JSON.stringify(o.isolation)}`)
  strMap('labels', o.labels)
  strMap('annotations', o.annotations)
  if (!Array.isArray(o.apps)) p.push('apps is not an array')
  else {
    o.apps.forEach((a: unknown, i) => {
      if (a === null || typeof a !== 'object' || Array.isArray(a)) {
        p.push(`apps[${i}] is not an object`)
        return
      }
      const ao = a as Record<string, unknown>
      const ak = Object.keys(ao).filter((k) => !APP_OPTIONAL_KEYS.includes(k)).sort()
      if (JSON.stringify(ak) !== JSON.stringify(APP_KEYS)) p.push(`apps[${i}] keys ${ak.join(',')}`)
      if (typeof ao.name !== 'string') p.push(`apps[${i}].name`)
      if (!['init', 'regular', 'ephemeral'].includes(ao.type as string)) p.push(`apps[${i}].type=${JSON.stringify(ao.type)}`)
      if (!['created', 'running', 'exited', 'unknown'].includes(ao.state as string)) p.push(`apps[${i}].state=${JSON.stringify(ao.state)}`)
      intOrNull(`apps[${i}].pid`, ao.pid)
      intOrNull(`apps[${i}].exit_code`, ao.exit_code)
      time(`apps[${i}].started_at`, ao.started_at)
      time(`apps[${i}].finished_at`, ao.finished_at)
    })
  }
  return p
}

/** The JSON error objects  among the lines of stderr. */
export const jsonErrors = (stderr: string): unknown[] =>
  stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as unknown)

/**
 * Parses podctl's table output (columns aligned under the header) into rows
 * of header → cell. Cells may contain single spaces ("exited garbage").
 */
export const parseTable = (out: string): Record<string, string>[] => {
  const lines = out.split('\n').filter((l) => l !== '')
  const header = lines[0] ?? ''
  const cols = [...header.matchAll(/\S+/g)].map((m) => ({ name: m[0], start: m.index! }))
  return lines.slice(1).map((l) =>
    Object.fromEntries(cols.map((c, i) => [c.name, l.slice(c.start, cols[i + 1]?.start ?? l.length).trim()])),
  )
}

/** A pod locked by this (test) process; released at teardown. */
export interface Held {
  uuid: string
  close(): void
}

const held = (t: Teardown, pod: { uuid: string; close(): void }): Held => {
  t.teardown(() => pod.close())
  return { uuid: pod.uuid, close: () => pod.close() }
}

/** "preparing": created, still locked by its creator (this process). */
export const preparingPod = async (t: Teardown, dir: string): Promise<Held> => held(t, await createPod(dir, manifest()))

/** "exited deleting": in exited-garbage/, locked by this process. */
export const exitedDeletingPod = async (t: Teardown, dir: string): Promise<Held> => {
  const pod = podFromUUIDString(dir, await exitedPod(dir))
  pod.toExitedGarbage()
  return held(t, pod)
}

/** "deleting": in garbage/, locked by this process. */
export const deletingPod = async (t: Teardown, dir: string): Promise<Held> => {
  const pod = podFromUUIDString(dir, await preparedPod(dir))
  pod.toGarbage()
  return held(t, pod)
}
