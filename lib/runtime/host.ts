/**
 * Pods of host processes (`"isolation": "host"`, CONTRACT §3): each app is
 * a child of the supervisor in a process group of its own, started under
 * a guardian that kills the group should the supervisor die.
 */
import { spawn } from 'node:child_process'
import os from 'node:os'
import type { App } from '../pod/manifest.js'
import type { Pod } from '../pod/pod.js'
import { GUARDIAN_FD, guardedSpawnArgs } from '../proc/guardian.js'
import { killGroup } from '../proc/signal.js'
import { appLaunch } from './app-launch.js'
import type { AppProcess, PodRuntime, StartOptions } from './types.js'

/** The exit code of a process that died of a signal: 128 + its number. */
export const signalExitCode = (signal: NodeJS.Signals): number => 128 + (os.constants.signals[signal] ?? 0)

export class HostRuntime implements PodRuntime {
  readonly #pod: Pod
  readonly #httpProxy: boolean

  /** `httpProxy` false: the caller's proxy variables do not pass to the apps (CONTRACT §15). */
  constructor(pod: Pod, opts: { httpProxy: boolean } = { httpProxy: true }) {
    this.#pod = pod
    this.#httpProxy = opts.httpProxy
  }

  startApp(app: App, opts: StartOptions): AppProcess {
    const { cwd, env, user } = appLaunch(this.#pod, app, { httpProxy: this.#httpProxy })
    // Each app leads its own process group, so that a signal reaches the
    // app's children too and the terminal's Ctrl-C reaches only podctl,
    // which forwards it. Its guardian is born with it (lib/proc/guardian.ts).
    const child = spawn(...guardedSpawnArgs(app.exec[0]!, app.exec.slice(1)), {
      cwd,
      env,
      detached: true,
      stdio: [opts.interactive && app.stdin === true ? 'inherit' : 'ignore', 'pipe', 'pipe', 'pipe'],
      ...(user ? { uid: user.uid, gid: user.gid } : {}),
    })
    // A spawn that failed at once (EMFILE, EAGAIN) has no pipes; its 'error' event follows.
    const guardianPipe = child.stdio?.[GUARDIAN_FD]
    guardianPipe?.on('error', () => {}) // it only ever ends
    const running = new Promise<number>((resolve, reject) => {
      child.once('spawn', () => resolve(child.pid!))
      child.once('error', (er) => reject(er))
    })
    running.catch(() => {})
    return {
      child,
      running,
      contained: false,
      signal: (signal) => killGroup(child.pid, signal),
      ended: async (code, signal) => {
        // Whatever the app left behind in its group goes with it, its guardian included.
        killGroup(child.pid, 'SIGKILL')
        guardianPipe?.destroy()
        return { exitCode: code ?? signalExitCode(signal ?? 'SIGKILL') }
      },
    }
  }

  async close(): Promise<void> {}
}
