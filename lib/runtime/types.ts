/**
 * What the supervisor sees of a pod's isolation (CONTRACT §9, §12): one
 * interface whether its apps are host processes or containers on an OCI
 * runtime, as podman's pod code sees one `OCIRuntime` whatever runs below.
 */
import type { ChildProcess } from 'node:child_process'
import type { App } from '../pod/manifest.js'

/** Why an app ended besides its exit code: the kernel killed it for its memory limit. */
export type AppEndReason = 'oom-killed'

/** One app, started. */
export interface AppProcess {
  /** The process podctl spawned and waits on; its stdout and stderr carry the app's output. */
  readonly child: ChildProcess
  /** Resolves with the app's host pid once it runs; rejects with a spawn-like error (ENOENT: 127, else 126) when it could not start. */
  readonly running: Promise<number>
  /** How an image app's root was made (CONTRACT §13), for its record. */
  readonly rootfs?: 'overlay' | 'copy'
  /** Whether the runtime itself ends what the app started when it exits (a container's cgroup), so no scan of /proc is needed. */
  readonly contained: boolean
  /** Sends `signal` to the app (and, for SIGKILL, whatever it started). */
  signal(signal: NodeJS.Signals): void
  /** Once `child` has exited: the app's exit code and why it ended, with what it left behind killed. */
  ended(code: number | null, signal: NodeJS.Signals | null): Promise<{ exitCode: number; reason?: AppEndReason }>
}

/** How an app is started besides what its manifest says. */
export interface StartOptions {
  /** podctl's own standard input and terminal may be the app's (a foreground run): its `stdin` and `tty` then hold. */
  interactive: boolean
}

/** A running pod's isolation: started before its first app, closed after its last. */
export interface PodRuntime {
  /** Starts `app`; throws a spawn-like error when it cannot even be tried (its user is unknown). */
  startApp(app: App, opts: StartOptions): AppProcess
  /** The pod's first process on the host while it runs (an isolated pod's infra), to record. */
  readonly holder?: { pid: number; start: string | null }
  /** Ends what the pod still runs; resolves once nothing of it is left. */
  close(): Promise<void>
}
