// Building pod populations through the library, so that the layout on disk
// is exactly what podctl itself writes: createPod, then toPrepared() for a
// prepared pod, or toRun() + a finished record + unlock() for an exited one.
import fs from 'node:fs'
import path from 'node:path'
import { createPod, validatePodManifest } from '../../dist/lib/index.js'

/** A two-app pod manifest, like a web server and its sidecar. */
export const manifestFor = (i) => {
  const m = {
    apiVersion: 'podctl/v1',
    name: `bench-${i}`,
    labels: { team: 'bench', tier: i % 2 === 0 ? 'web' : 'worker' },
    annotations: { note: 'created by bench/run.js' },
    apps: [
      { name: 'web', exec: ['/bin/sh', '-c', 'exec sleep 3600'], env: { PORT: '8080' }, workingDirectory: '/' },
      { name: 'sidecar', exec: ['/bin/sh', '-c', 'while :; do sleep 60; done'] },
    ],
  }
  validatePodManifest(m)
  return m
}

// Replaces pod.json the way the library does (temporary file + rename), so a
// reader never sees half a record. The caller holds the pod's lock.
const writeRecordLikeLibrary = (podPath, record) => {
  const tmp = path.join(podPath, `.pod.json.tmp-bench`)
  fs.writeFileSync(tmp, `${JSON.stringify(record)}\n`, { mode: 0o640 })
  fs.renameSync(tmp, path.join(podPath, 'pod.json'))
}

/**
 * What a supervisor leaves behind in pod.json when its pod has run and
 * exited: start and finish times, pids, exit codes.
 */
const finishRecord = (record, i) => {
  const created = Date.parse(record.created_at ?? new Date().toISOString())
  const started = created + 50
  const finished = started + 1_000 + (i % 97) * 10
  const pid = 10_000 + (i % 50_000)
  return {
    ...record,
    started_at: new Date(started).toISOString(),
    pid,
    exit_code: i % 10 === 0 ? 1 : 0,
    apps: record.apps.map((a, k) => ({
      ...a,
      state: 'exited',
      pid: pid + 1 + k,
      started_at: new Date(started + 5 + k).toISOString(),
      finished_at: new Date(finished).toISOString(),
      exit_code: k === 0 && i % 10 === 0 ? 1 : 0,
    })),
  }
}

/** Creates one prepared pod; returns its uuid. */
export const createPrepared = async (dataDir, i) => {
  const pod = await createPod(dataDir, manifestFor(i), { sync: false })
  pod.toPrepared({ sync: false })
  return pod.uuid
}

/** Creates one exited pod (it ran, its apps exited, its lock is released); returns its uuid. */
export const createExited = async (dataDir, i) => {
  const pod = await createPod(dataDir, manifestFor(i), { sync: false })
  pod.toRun({ sync: false })
  writeRecordLikeLibrary(pod.path, finishRecord(pod.record(), i))
  pod.unlock()
  return pod.uuid
}

/**
 * Builds `prepared` prepared pods and `exited` exited pods in `dataDir`,
 * interleaved, printing progress to stderr for big populations.
 * Returns { prepared: [uuid], exited: [uuid] }.
 */
export const buildPopulation = async (dataDir, { prepared = 0, exited = 0, label = dataDir } = {}) => {
  const out = { prepared: [], exited: [] }
  const total = prepared + exited
  const started = Date.now()
  let last = started
  for (let i = 0; i < total; i++) {
    // Alternate kinds so that both are spread over the whole creation time.
    const wantExited = out.exited.length < exited && (out.prepared.length >= prepared || i % 2 === 1)
    if (wantExited) out.exited.push(await createExited(dataDir, i))
    else out.prepared.push(await createPrepared(dataDir, i))
    const now = Date.now()
    if (total >= 1000 && (now - last > 2000 || i + 1 === total)) {
      last = now
      process.stderr.write(`bench: ${label}: ${i + 1}/${total} pods (${((now - started) / 1000).toFixed(1)} s)\n`)
    }
  }
  return out
}

/** The path of a pod's manifest. */
export const manifestPath = (dataDir, stateDir, uuid) => path.join(dataDir, 'pods', stateDir, uuid, 'manifest')
/** The path of a pod's directory. */
export const podDirPath = (dataDir, stateDir, uuid) => path.join(dataDir, 'pods', stateDir, uuid)

/**
 * Builds `n` exited pods in each of `dirs`, pod by pod in turn, so that
 * the populations have the same age structure. This matters on machines
 * that page out idle page cache (e.g. DAMON-based reclaim): populations
 * built one after the other would not be equally cached when timed.
 * Returns one array of uuids per dir.
 */
export const buildExitedPopulations = async (dirs, n, { label = 'populations' } = {}) => {
  const out = dirs.map(() => [])
  const started = Date.now()
  let last = started
  for (let i = 0; i < n; i++) {
    for (const [k, d] of dirs.entries()) out[k].push(await createExited(d, i))
    const now = Date.now()
    if (n * dirs.length >= 1000 && (now - last > 2000 || i + 1 === n)) {
      last = now
      process.stderr.write(`bench: ${label}: ${(i + 1) * dirs.length}/${n * dirs.length} pods (${((now - started) / 1000).toFixed(1)} s)\n`)
    }
  }
  return out
}
