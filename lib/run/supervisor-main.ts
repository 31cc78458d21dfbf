/**
 * The entry point of a detached supervisor (see detach.ts): reads its job
 * from fd 3, makes the pod running, replies on fd 3, then supervises the
 * pod until it ends and exits with the pod's exit code.
 */
import net from 'node:net'
import { PodctlError, isPodctlError } from '../errors.js'
import type { PodManifest } from '../pod/manifest.js'
import { keepInspectorClosed } from '../proc/inspector.js'
import { podFromUUIDString, type Pod } from '../pod/pod.js'
import type { DetachJob, DetachReply } from './detach.js'
import { startNewPod } from './new-pod.js'
import { startPrepared } from './start.js'
import { Supervisor } from './supervisor.js'

keepInspectorClosed()

const chan = new net.Socket({ fd: 3, readable: true, writable: true })

const readJob = (): Promise<DetachJob> =>
  new Promise((resolve, reject) => {
    let buf = ''
    chan.setEncoding('utf8')
    chan.on('data', (d: string) => {
      buf += d
      const nl = buf.indexOf('\n')
      if (nl >= 0) resolve(JSON.parse(buf.slice(0, nl)) as DetachJob)
    })
    chan.on('end', () => reject(new Error('no job on fd 3')))
    chan.on('error', reject)
  })

const reply = (r: DetachReply): Promise<void> => new Promise((resolve) => chan.end(`${JSON.stringify(r)}\n`, () => resolve()))

const replyFailure = (er: unknown, pod?: Pod): Promise<void> => {
  const e = isPodctlError(er) ? er : new PodctlError('EFAILED', (er as Error).message)
  // A pod that exists but did not start is named: it waits for rm or gc.
  const message = pod ? `pod ${pod.uuid} did not start: ${e.message}` : e.message
  return reply({ ok: false, code: e.code, message, ...(e.hint ? { hint: e.hint } : {}) })
}

const start = async (job: DetachJob): Promise<{ pod: Pod; manifest: PodManifest }> => {
  const claims = {
    ...(job.claimTimeoutMs !== undefined ? { timeoutMs: job.claimTimeoutMs } : {}),
    ...(job.fleet ? { fleet: job.fleet } : {}),
    ...(job.provisionersDir !== undefined ? { provisionersDir: job.provisionersDir } : {}),
  }
  if (job.manifest) {
    return startNewPod(job.dataDir, job.manifest, { uuidFileSave: job.uuidFileSave, runtime: job.runtime, claims })
  }
  return startPrepared(podFromUUIDString(job.dataDir, job.uuid!), claims)
}

const main = async (): Promise<number> => {
  const job = await readJob()
  let started: { pod: Pod; manifest: PodManifest }
  try {
    started = await start(job)
  } catch (er) {
    await replyFailure(er)
    return 1
  }
  // The caller hears once the pod's isolation is up, or why it could not be.
  let replied: Promise<void> | undefined
  const onRuntimeStarted = (): void => void (replied = reply({ ok: true, uuid: started.pod.uuid }))
  try {
    return await new Supervisor(started.pod, started.manifest, { onRuntimeStarted }).run()
  } catch (er) {
    if (replied === undefined) await replyFailure(er, started.pod)
    return 125 // recorded in the pod by Supervisor.run: `podctl status` shows it
  } finally {
    await replied
  }
}

// No top-level await: the built CLI runs this file as CommonJS (lib/build/bundle.ts).
void main().then((code) => {
  process.exitCode = code
})
