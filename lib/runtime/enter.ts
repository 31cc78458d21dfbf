/**
 * Into a running isolated pod (CONTRACT §12, rkt enter, podman exec): a
 * command run by the pod's runtime inside one app's container, so with
 * that app's namespaces, root, user, capabilities, seccomp filter and
 * cgroup, and the caller's standard input, output and error.
 */
import fs from 'node:fs'
import { isatty } from 'node:tty'
import path from 'node:path'
import { PodctlError, shortId } from '../errors.js'
import { writeFileAtomic } from '../fs/atomic.js'
import { readOwnText } from '../fs/read.js'
import { isolationOf, type PodManifest } from '../pod/manifest.js'
import type { Pod } from '../pod/pod.js'
import { waitReady } from '../pod/wait.js'
import { signalExitCode } from './host.js'
import { RuntimeDriver, notFound, runtimeError } from './driver.js'
import { BUNDLES_DIR } from './pod-containers.js'
import { recordedRuntime } from './pod-runtime.js'
import { appId } from './runtime.js'

export interface EnterOptions {
  /** The app whose container the command joins; default: the pod's only running app. */
  app?: string
  /** Give the command a terminal (-t). */
  tty?: boolean
}

/** Which app's container to enter: the one named, or the only one running. EUSAGE listing them when it is not clear. */
const chooseApp = (pod: Pod, wanted: string | undefined): string => {
  const short = shortId(pod.uuid)
  const apps = pod.record().apps
  if (wanted !== undefined) {
    const a = apps.find((x) => x.name === wanted)
    if (!a) throw new PodctlError('EUSAGE', `pod ${short} has no app ${JSON.stringify(wanted)}`, `its apps: ${apps.map((x) => x.name).join(', ') || 'none'}`)
    if (a.state !== 'running') throw new PodctlError('EBADSTATE', `app ${wanted} of pod ${short} is ${a.state}, not running`, `start it: podctl app start ${short} ${wanted}`)
    return wanted
  }
  const running = apps.filter((a) => a.state === 'running')
  if (running.length === 1) return running[0]!.name
  if (running.length === 0) throw new PodctlError('EBADSTATE', `pod ${short} has no running app to enter`)
  throw new PodctlError('EUSAGE', `pod ${short} runs several apps: ${running.map((a) => a.name).join(', ')}`, `name one: podctl enter ${short} --app ${running[0]!.name} -- CMD`)
}

/** The exit code of a command the runtime could not start, as a shell gives it: 127 not found, else 126. */
const notStarted = (said: string | undefined): number => (notFound(said) ? 127 : 126)

/** How long enter waits for a pod's apps to start before it looks for the one to enter. */
const READY_WAIT_MS = 10_000

/** The runtime's own failure is exit 255 from runc and crun alike; any other code is the command's. */
const RUNTIME_FAILED = 255

/**
 * Runs `command` in `pod` (locked in run/ by its supervisor) and resolves
 * with its exit code (128 + n for a signal). EBADSTATE for a pod that is
 * not running or has no namespaces.
 */
export const enterPod = async (pod: Pod, manifest: PodManifest, command: readonly string[], opts: EnterOptions = {}): Promise<number> => {
  const short = shortId(pod.uuid)
  if (pod.state !== 'running') throw new PodctlError('EBADSTATE', `pod ${short} is ${pod.state}; only a running pod can be entered`, pod.state === 'prepared' ? `run it first: podctl run-prepared ${short}` : undefined)
  if (isolationOf(manifest) !== 'namespaces') {
    throw new PodctlError('EBADSTATE', `pod ${short} runs its apps as host processes: it has no namespaces to enter`, 'run a command beside them on the host instead; a pod with "isolation": "namespaces" can be entered')
  }
  if (command.length === 0) throw new PodctlError('EUSAGE', 'no command given', `usage: podctl enter ${short} [--app NAME] [-t] -- CMD [ARG...]`)
  if (opts.tty && !isatty(0)) throw new PodctlError('EUSAGE', '-t gives the command a terminal, and standard input is not one', 'leave -t out in a script or a pipe')
  // Just after `run --detach` the apps may still be starting: enter once they run.
  if (!pod.record().ready_at) await waitReady(pod, { signal: AbortSignal.timeout(READY_WAIT_MS) }).catch(() => {})
  pod.refresh()
  const app = chooseApp(pod, opts.app)
  const runtime = recordedRuntime(pod.record()).runtime
  if (!runtime) throw new PodctlError('EFAILED', `pod ${short} records no OCI runtime`)
  const bundle = path.join(pod.path, BUNDLES_DIR, app)
  const config = readOwnText(path.join(bundle, 'config.json'))
  if (config === undefined) throw new PodctlError('EBADSTATE', `app ${app} of pod ${short} has no container yet`)
  // The app's own process, with the command in the place of its arguments.
  const proc = { ...(JSON.parse(config) as { process: Record<string, unknown> }).process, args: command, terminal: opts.tty === true }
  const name = `exec-${process.pid}-${Date.now().toString(36)}`
  writeFileAtomic(bundle, `${name}.json`, JSON.stringify(proc))
  const log = path.join(bundle, `${name}.log`)
  try {
    const child = new RuntimeDriver(pod.dataDir, runtime).exec(appId(pod.uuid, app), path.join(bundle, `${name}.json`), { tty: opts.tty === true, log, stdio: 'inherit' })
    // The terminal's Ctrl-C reaches the runtime itself (one process group),
    // which passes it on: podctl only must not die of it. A signal sent to
    // podctl alone (kill PID, a process manager) is passed to the runtime,
    // which passes it to the command.
    const keep = (): void => {}
    const pass = (s: NodeJS.Signals) => (): void => {
      try {
        child.kill(s)
      } catch {
        // gone
      }
    }
    const handlers = [['SIGINT', keep], ...(['SIGTERM', 'SIGHUP', 'SIGQUIT'] as const).map((s) => [s, pass(s)])] as [NodeJS.Signals, () => void][]
    for (const [s, h] of handlers) process.on(s, h)
    try {
      const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
        child.once('error', (er) => reject(new PodctlError('EFAILED', `cannot run ${runtime.path}: ${er.message}`)))
        child.once('exit', (c, s) => resolve([c, s]))
      })
      if (signal !== null) return signalExitCode(signal)
      if (code === RUNTIME_FAILED) {
        const said = runtimeError(log)
        // The pod or its app ended meanwhile: the container is gone.
        if (said !== undefined && /container .* does not exist|not running|stopped/.test(said)) throw new PodctlError('EBADSTATE', `app ${app} of pod ${short} is no longer running`)
        return notStarted(said)
      }
      return code ?? 126
    } finally {
      for (const [s, h] of handlers) process.off(s, h)
    }
  } finally {
    fs.rmSync(path.join(bundle, `${name}.json`), { force: true })
    fs.rmSync(log, { force: true })
  }
}
