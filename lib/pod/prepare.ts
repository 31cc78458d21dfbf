/**
 * Preparing a pod: from a validated manifest to a pod in prepared/, with
 * nothing left behind if anything fails on the way.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { DIR_MODE, syncDir } from './layout.js'
import type { ManifestProblem, PodManifest } from './manifest.js'
import { formatProblems } from './manifest.js'
import { newPod, type Pod } from './pod.js'
import { MANIFEST_FILE, initialRecord, writeFileAtomic, writeRecord } from './record.js'

/** Where an app's working root is inside its pod. */
export const appRoot = (podPath: string, appName: string): string => path.join(podPath, 'apps', appName)

const isExecutable = (p: string): boolean => {
  try {
    const st = fs.statSync(p)
    if (!st.isFile()) return false
    fs.accessSync(p, fs.constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** Looks a program name up on PATH as execvp would. */
export const findOnPath = (name: string, envPath = process.env.PATH ?? ''): string | undefined => {
  for (const dir of envPath.split(path.delimiter)) {
    if (dir === '') continue
    const p = path.join(dir, name)
    if (isExecutable(p)) return p
  }
  return undefined
}

/**
 * Checks that every app's program exists: an absolute path must be an
 * executable file, a bare name must be found on PATH.
 */
export const execProblems = (m: PodManifest, envPath?: string): ManifestProblem[] => {
  const problems: ManifestProblem[] = []
  m.apps.forEach((a, i) => {
    const cmd = a.exec[0]!
    const at = `apps[${i}].exec[0]`
    if (cmd.startsWith('/')) {
      if (!isExecutable(cmd)) problems.push({ path: at, problem: `${JSON.stringify(cmd)} is not an executable file` })
    } else if (!findOnPath(cmd, envPath)) {
      problems.push({ path: at, problem: `${JSON.stringify(cmd)} was not found on PATH` })
    }
  })
  return problems
}

/** Throws EUSAGE if an app's program cannot be found. */
export const checkExecs = (m: PodManifest, envPath?: string): void => {
  const problems = execProblems(m, envPath)
  if (problems.length > 0) {
    throw new PodctlError('EUSAGE', `invalid manifest: ${formatProblems(problems)}`, 'give an absolute path or a program on PATH')
  }
}

/**
 * Creates a pod from a validated manifest and leaves it in preparing,
 * locked by this process, with its manifest, record and app roots written
 * and synced. On failure the half-made pod is deleted and the error
 * rethrown.
 */
export interface CreateOptions {
  /** Creation time to record (default: now). */
  now?: Date
  /**
   * fsync files and directories (default true). Only bulk creators that
   * can afford to lose pods in a power failure (benchmarks, tests) turn
   * it off.
   */
  sync?: boolean
}

export const createPod = async (dataDir: string, manifest: PodManifest, opts: CreateOptions = {}): Promise<Pod> => {
  const sync = opts.sync !== false
  // Host sources and persistent volumes must exist: checked before anything is written.
  // Loaded only for pods with volumes (most have none, and every run pays
  // for what it loads). Loading it also registers the volume tear-down
  // that discard() needs for a pod whose volumes were set up.
  if (manifest.volumes?.length) (await import('../volume/pod-volumes.js')).checkVolumeSources(dataDir, manifest)
  const pod = await newPod(dataDir, { sync })
  try {
    writeFileAtomic(pod.path, MANIFEST_FILE, JSON.stringify(manifest), { sync })
    const record = initialRecord(pod.uuid, manifest, opts.now ?? new Date())
    writeRecord(pod.path, record, { sync })
    pod.setCachedRecord(record) // a run that follows at once need not read it back
    fs.mkdirSync(path.join(pod.path, 'apps'), { mode: DIR_MODE })
    for (const a of manifest.apps) fs.mkdirSync(appRoot(pod.path, a.name), { mode: DIR_MODE })
    if (sync) syncDir(pod.path)
    return pod
  } catch (er) {
    discard(pod)
    throw er
  }
}

/** Deletes a pod its creator gives up on. */
export const discard = (pod: Pod): void => {
  try {
    pod.toGarbage()
    pod.remove()
  } catch {
    pod.close() // gc will find it as an aborted prepare
  }
}

/** createPod, then prepare → prepared (unlocked). */
export const preparePod = async (dataDir: string, manifest: PodManifest, opts: CreateOptions = {}): Promise<Pod> => {
  const pod = await createPod(dataDir, manifest, opts)
  try {
    pod.toPrepared({ sync: opts.sync !== false })
  } catch (er) {
    discard(pod)
    throw er
  }
  return pod
}
