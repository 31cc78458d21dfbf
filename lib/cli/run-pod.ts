/**
 * What `podctl run`, `run-prepared` and `app sandbox` share once their pod
 * is known: in the foreground this process is the pod's supervisor; with
 * --detach a new process is (lib/run/detach.ts) and this one prints the UUID.
 */
import path from 'node:path'
import { isatty } from 'node:tty'
import { PodctlError, RunFailure, isPodctlError } from '../errors.js'
import { describeFailure } from '../fs/errors.js'
import type { PodManifest } from '../pod/manifest.js'
import type { Pod } from '../pod/pod.js'
import { checkUUIDFileSave } from '../pod/uuid.js'
import { runDetached } from '../run/detach.js'
import { startNewPod } from '../run/new-pod.js'
import type { EnsureBoundOptions, FleetRef } from '../storage/pod-claims.js'
import { Supervisor } from '../run/supervisor.js'
import { terminalOutput } from '../run/terminal-output.js'
import type { Context } from './context.js'
import type { Io } from './output.js'

/**
 * Supervises a running pod in the foreground, its apps' output on podctl's
 * stdout and stderr (`io`); returns the pod's exit code. Errors before the pod runs keep
 * their own exit codes (2, 3, 4); podctl's own failure once it runs is 125
 * (CONTRACT §4).
 */
export const supervise = async (io: Io, pod: Pod, manifest: PodManifest, prefixAlways = false): Promise<number> => {
  const output = terminalOutput(prefixAlways || manifest.apps.length > 1, { stdout: io.out, stderr: io.err })
  try {
    return await new Supervisor(pod, manifest, { output, interactive: true }).run()
  } catch (er) {
    // The hint of what failed (a port taken: publish another) still applies.
    throw new RunFailure(`running pod ${pod.uuid} failed: ${(er as Error).message}`, isPodctlError(er) ? er.hint : undefined, { cause: er })
  }
}

/**
 * A foreground run's exit code is its pod's; podctl's own failure is 125
 * (CONTRACT §4), also before the pod runs (a full disk, too few open
 * files). Refusals keep their codes: bad input 2, no such pod 3, wrong
 * state 4.
 */
export const ownFailureIs125 = async <T>(fn: () => Promise<T>): Promise<T> => {
  try {
    return await fn()
  } catch (er) {
    const failure = isPodctlError(er) ? (er.code === 'EFAILED' ? er : undefined) : describeFailure(er, 'cannot start the pod')
    if (isPodctlError(failure) && !(failure instanceof RunFailure)) throw new RunFailure(failure.message, failure.hint, { cause: er })
    throw er
  }
}

/**
 * An app on a terminal (-t, `tty: true`) in a foreground run takes podctl's
 * own: without one the runtime fails at its start (exit 126). podman makes
 * a terminal of its own there, which needs a descriptor passed over a
 * socket, and Node has no way to receive one; so it is refused before
 * anything is made, in enter's words. The manifest is read only when
 * standard input is not a terminal.
 */
export const refuseTerminalWithoutOne = (manifest: () => PodManifest | undefined): void => {
  if (isatty(0)) return
  const app = manifest()?.apps.find((a) => a.tty === true)
  if (app !== undefined) {
    throw new PodctlError('EUSAGE', `app ${app.name} runs on a terminal (-t), and standard input is not one`, 'leave -t out in a script or a pipe, or run the pod with --detach')
  }
}

/** How run and run-prepared wait for a controller to bind their claims: --timeout, and on a terminal what they wait for. */
export const claimWait = (ctx: Context, timeoutMs: number | undefined, fleet: FleetRef | undefined, provisionersDir: string | undefined): EnsureBoundOptions => {
  let last = ''
  return {
    ...(fleet ? { fleet } : {}),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(provisionersDir !== undefined ? { provisionersDir } : {}),
    onWait: (what) => {
      if (!ctx.io.errIsTTY || what === last) return
      last = what
      ctx.io.err(`podctl: ${what}\n`)
    },
  }
}

/** What a detached supervisor is told of the pod's claims: --timeout and --provisioners-dir. */
export const detachedClaims = (opts: { timeout?: number; provisionersDir?: string }) => ({
  ...(opts.timeout !== undefined ? { claimTimeoutMs: opts.timeout } : {}),
  ...(opts.provisionersDir !== undefined ? { provisionersDir: opts.provisionersDir } : {}),
})

/** The new pod of `run` or `app sandbox`: detached (prints the UUID) or supervised here (sets the exit code). */
export const runNewPod = async (
  ctx: Context,
  dataDir: string,
  manifest: PodManifest,
  opts: { detach?: boolean; uuidFileSave?: string; timeout?: number; runtime?: string; provisionersDir?: string },
  onRunning?: (pod: Pod) => void,
  fleet?: FleetRef,
): Promise<void> => {
  // The detached supervisor runs in / : it gets an absolute path.
  const uuidFileSave = opts.uuidFileSave !== undefined ? path.resolve(opts.uuidFileSave) : undefined
  if (opts.detach) {
    // Checked here too: the detached supervisor's refusal would come after the fork.
    if (uuidFileSave !== undefined) checkUUIDFileSave(uuidFileSave)
    ctx.io.out(`${await runDetached({ dataDir, manifest, ...(uuidFileSave !== undefined ? { uuidFileSave } : {}), ...(opts.runtime !== undefined ? { runtime: opts.runtime } : {}), ...detachedClaims(opts), ...(fleet ? { fleet } : {}) })}\n`)
    return
  }
  refuseTerminalWithoutOne(() => manifest)
  const { pod, manifest: stored } = await ownFailureIs125(() => startNewPod(dataDir, manifest, { uuidFileSave, runtime: opts.runtime, claims: claimWait(ctx, opts.timeout, fleet, opts.provisionersDir) }))
  onRunning?.(pod)
  ctx.state.exitCode = await supervise(ctx.io, pod, stored, onRunning !== undefined)
}
