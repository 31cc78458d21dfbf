/**
 * Changing the apps of a running mutable pod (rkt's app sandbox): the
 * manifest changes only under the manifest lock and by atomic replace;
 * start and stop are requests to the supervisor. Each call waits until the
 * supervisor has acted, polling the pod record every 100 ms.
 */
import { PodChangedStateError, PodctlError, shortId } from '../errors.js'
import type { App } from '../pod/manifest.js'
import type { Pod } from '../pod/pod.js'
import { newAppRecord, writeRecord, type AppRecord } from '../pod/record.js'
import { ManifestLock, sandboxManifest } from '../pod/sandbox.js'
import { poll } from '../poll.js'
import { writeRequest } from './requests.js'

/** A mutable pod's apps may change while it is prepared or running. */
const assertChangeable = (pod: Pod): void => {
  sandboxManifest(pod) // throws ErrImmutable
  if (pod.state !== 'running' && pod.state !== 'prepared') {
    throw new PodctlError('EBADSTATE', `pod ${shortId(pod.uuid)} is ${pod.state}; apps change only in a running (or prepared) mutable pod`)
  }
}

const assertRunning = (pod: Pod): void => {
  sandboxManifest(pod)
  if (pod.state !== 'running') {
    throw new PodctlError('EBADSTATE', `pod ${shortId(pod.uuid)} is ${pod.state}; apps start and stop only in a running pod`)
  }
}

/** Polls the record until `done` says so; ETIMEOUT after `timeoutMs`. */
const waitRecord = async (pod: Pod, what: string, timeoutMs: number, done: (apps: AppRecord[]) => boolean): Promise<void> => {
  const happened = await poll(
    () => {
      pod.refresh()
      if (done(pod.record().apps)) return true
      if (pod.state !== 'running' && pod.state !== 'prepared') {
        throw new PodctlError('EBADSTATE', `pod ${shortId(pod.uuid)} is ${pod.state}; ${what} did not happen`)
      }
      return undefined
    },
    { timeoutMs },
  )
  if (!happened) throw new PodctlError('ETIMEOUT', `timed out waiting for ${what} in pod ${shortId(pod.uuid)}`)
}

/**
 * Adds an app to a mutable pod's manifest, under the manifest lock (so
 * that concurrent adds never lose each other). The app is created, not
 * started: `app start` runs it. Waits until a running supervisor has seen it.
 */
export const addApp = async (pod: Pod, app: App, timeoutMs = 30_000): Promise<void> => {
  assertChangeable(pod)
  const lock = ManifestLock.take(pod, timeoutMs)
  try {
    const m = sandboxManifest(pod)
    if (m.apps.some((a) => a.name === app.name)) {
      throw new PodctlError('EBADSTATE', `pod ${shortId(pod.uuid)} already has an app named ${app.name}`, `remove it first: podctl app rm ${shortId(pod.uuid)} ${app.name}`)
    }
    lock.update({ ...m, apps: [...m.apps, app] })
    syncPreparedRecord(pod, (apps) => [...apps.filter((a) => a.name !== app.name), newAppRecord(app)])
  } finally {
    lock.release()
  }
  if (pod.state === 'running') await waitRecord(pod, `app ${app.name} to appear`, timeoutMs, (apps) => apps.some((a) => a.name === app.name))
}

/** Removes an app from a mutable pod; a running app is stopped first by the supervisor. */
export const removeApp = async (pod: Pod, name: string, timeoutMs = 30_000): Promise<void> => {
  assertChangeable(pod)
  const lock = ManifestLock.take(pod, timeoutMs)
  try {
    const m = sandboxManifest(pod)
    if (!m.apps.some((a) => a.name === name)) throw noSuchApp(pod, name)
    lock.update({ ...m, apps: m.apps.filter((a) => a.name !== name) })
    syncPreparedRecord(pod, (apps) => apps.filter((a) => a.name !== name))
  } finally {
    lock.release()
  }
  if (pod.state === 'running') await waitRecord(pod, `app ${name} to be removed`, timeoutMs, (apps) => !apps.some((a) => a.name === name))
}

/**
 * A running pod's supervisor follows manifest changes into pod.json; a
 * prepared pod has none, so the change is written here, under the pod's
 * lock (the rule for pod.json writers). If the lock is taken, the pod is
 * being run or removed right now: the supervisor builds its record from
 * the manifest, which already has the change.
 */
const syncPreparedRecord = (pod: Pod, change: (apps: AppRecord[]) => AppRecord[]): void => {
  if (pod.state !== 'prepared') return
  try {
    if (!pod.tryExclusiveLock()) return
  } catch (er) {
    if (er instanceof PodChangedStateError) return
    throw er
  }
  try {
    pod.refresh()
    if (pod.dir !== 'prepared') return
    const r = pod.record()
    const next = { ...r, apps: change(r.apps) }
    writeRecord(pod.path, next)
    pod.setCachedRecord(next)
  } finally {
    pod.unlock()
  }
}

const noSuchApp = (pod: Pod, name: string): PodctlError =>
  new PodctlError('ENOPOD', `pod ${shortId(pod.uuid)} has no app named ${JSON.stringify(name)}`, `see podctl app list ${shortId(pod.uuid)}`)

const findApp = (pod: Pod, name: string): void => {
  if (!sandboxManifest(pod).apps.some((a) => a.name === name)) throw noSuchApp(pod, name)
}

/** Asks the supervisor to start an app and waits until it runs (or ran and ended). */
export const startApp = async (pod: Pod, name: string, timeoutMs = 30_000): Promise<void> => {
  assertRunning(pod)
  findApp(pod, name)
  const before = pod.record().apps.find((a) => a.name === name)?.started_at ?? null
  if (pod.record().apps.find((a) => a.name === name)?.state === 'running') return
  writeRequest(pod.path, { op: 'start', app: name })
  try {
    await waitRecord(pod, `app ${name} to start`, timeoutMs, (apps) => {
      const a = apps.find((x) => x.name === name)
      return a !== undefined && a.started_at !== before && a.started_at !== null
    })
  } catch (er) {
    if (!(er instanceof PodctlError) || er.code !== 'ETIMEOUT') throw er
    // The request is not withdrawn: a supervisor that is only slow still starts the app.
    throw new PodctlError(
      'ETIMEOUT',
      `app ${name} of pod ${shortId(pod.uuid)} has not started after ${Math.round(timeoutMs / 1000)}s; the request stays with the pod's supervisor, which may still start it`,
      `see whether it did: podctl app status ${shortId(pod.uuid)} ${name}`,
    )
  }
}

/** Asks the supervisor to stop an app (SIGTERM, SIGKILL after stopTimeoutMs) and waits until it has. */
export const stopApp = async (pod: Pod, name: string, stopTimeoutMs = 10_000): Promise<void> => {
  assertRunning(pod)
  findApp(pod, name)
  if (pod.record().apps.find((a) => a.name === name)?.state !== 'running') return
  writeRequest(pod.path, { op: 'stop', app: name, timeoutMs: stopTimeoutMs })
  await waitRecord(pod, `app ${name} to stop`, stopTimeoutMs + 10_000, (apps) => apps.find((x) => x.name === name)?.state !== 'running')
}
