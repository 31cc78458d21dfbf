/**
 * `--detach`: the supervisor runs in a new process in its own session,
 * with no terminal. The parent hands it the job over a private channel
 * (fd 3), waits until the pod is running (or the child says why not), and
 * returns the UUID; the supervisor lives on.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { PodctlError, type ErrorCode } from '../errors.js'
import type { PodManifest } from '../pod/manifest.js'
import type { Socket } from 'node:net'
import type { FleetRef } from '../storage/pod-claims.js'

export interface DetachJob {
  dataDir: string
  /** A new pod from this manifest (podctl run --detach) ... */
  manifest?: PodManifest
  /** ... or a prepared pod (podctl run-prepared --detach). */
  uuid?: string
  uuidFileSave?: string
  /** How long to wait for a controller to bind the pod's claims (--timeout). */
  claimTimeoutMs?: number
  /** With --cluster: the fleet whose claims the pod uses. */
  fleet?: FleetRef
  /** --runtime, for a new isolated pod. */
  runtime?: string
  /** --provisioners-dir: where this node's exec provisioners are. */
  provisionersDir?: string
}

export type DetachReply =
  | { ok: true; uuid: string }
  | { ok: false; code: ErrorCode; message: string; hint?: string }

const SUPERVISOR_MAIN = fileURLToPath(new URL('./supervisor-main.js', import.meta.url))

/** Starts a detached supervisor for `job`; resolves with the UUID once the pod is running. */
export const runDetached = (job: DetachJob): Promise<string> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SUPERVISOR_MAIN], {
      detached: true,
      cwd: '/',
      stdio: ['ignore', 'ignore', 'ignore', 'pipe'],
    })
    const chan = child.stdio[3] as Socket
    let buf = ''
    let settled = false
    const settle = (fn: () => void): void => {
      if (settled) return
      settled = true
      chan.destroy()
      child.unref()
      fn()
    }
    child.once('error', (er) => settle(() => reject(new PodctlError('EFAILED', `cannot start the supervisor: ${er.message}`))))
    child.once('exit', (code, signal) =>
      settle(() => reject(new PodctlError('EFAILED', `the supervisor exited (${signal ?? code}) before the pod was running`))),
    )
    chan.setEncoding('utf8')
    chan.on('data', (d: string) => {
      buf += d
      const nl = buf.indexOf('\n')
      if (nl < 0) return
      const reply = JSON.parse(buf.slice(0, nl)) as DetachReply
      settle(() => (reply.ok ? resolve(reply.uuid) : reject(new PodctlError(reply.code, reply.message, reply.hint))))
    })
    chan.on('error', () => {})
    chan.write(`${JSON.stringify(job)}\n`)
  })
