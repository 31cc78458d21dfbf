/**
 * Preparing a pod: from a validated manifest to a pod in prepared/, with
 * nothing left behind if anything fails on the way.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { syncDir, writeFileAtomic } from '../fs/atomic.js'
import { DIR_MODE } from '../fs/modes.js'
import { lookPath } from '../proc/executable.js'
import { execSizeProblem } from '../proc/limits.js'
import { appUserProblems } from './app-user.js'
import { isolationOf, type App, type ManifestProblem, type PodManifest } from './manifest.js'
import { formatProblems } from './manifest.js'
import { newPod, type BeforeDelete, type Pod } from './pod.js'
import { MANIFEST_FILE, initialRecord, writeRecord } from './record.js'

/** Where an app's working root is inside its pod. */
export const appRoot = (podPath: string, appName: string): string => path.join(podPath, 'apps', appName)

/**
 * What an isolated app of host programs finds in its pod's root: the
 * PATH it starts with and the host's directories bound there (the runtime
 * room's facts, handed in by the caller).
 */
export interface IsolatedRoot {
  path: string
  dirs: readonly string[]
}

const below = (p: string, dir: string): boolean => p === dir || p.startsWith(`${dir.replace(/\/+$/, '')}/`)

/** The environment an app runs with, as far as it is known before the pod runs (PATH decides its program). */
export const appEnv = (app: App, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv => ({ ...base, ...(app.env ?? {}) })

/**
 * Checks that every app's program can be found by the rules the app will
 * be started with (lib/proc/executable.ts): an absolute path must be an
 * executable file, a bare name must be on the PATH of the app's
 * environment. An app's working directory does not exist before the pod
 * runs, so an empty PATH entry finds nothing here.
 */
export const execProblems = (m: PodManifest, base: NodeJS.ProcessEnv = process.env, root?: IsolatedRoot): ManifestProblem[] => {
  const problems: ManifestProblem[] = []
  const isolated = isolationOf(m) === 'namespaces'
  m.apps.forEach((a, i) => {
    // An image app's program is the image's: it is looked for in the image's root when it starts.
    if (a.image !== undefined) return
    const cmd = a.exec[0]!
    // An isolated app starts with a PATH of its own, not podctl's, and may run a program from one of its volumes.
    const env = appEnv(a, isolated && root ? { PATH: root.path } : base)
    const inVolume = isolated && cmd.startsWith('/') && (a.mounts ?? []).some((mt) => below(cmd, mt.path))
    // The pod's root holds the host's directories and the app's volumes, nothing else: a program elsewhere on the host is not there.
    if (isolated && root && cmd.startsWith('/') && !inVolume && !root.dirs.some((d) => below(cmd, d))) {
      problems.push({ path: `apps[${i}].exec[0]`, problem: `${JSON.stringify(cmd)} is not in the pod's root, which holds the host's ${root.dirs.join(', ')} and the app's volumes; mount its directory as a volume` })
      return
    }
    try {
      if (!inVolume) lookPath(cmd, undefined, env)
    } catch (er) {
      const how = cmd.startsWith('/') ? 'is not an executable file' : (er as NodeJS.ErrnoException).code === 'EACCES' ? 'was found on PATH but is not executable' : 'was not found on PATH'
      problems.push({ path: `apps[${i}].exec[0]`, problem: `${JSON.stringify(cmd)} ${how}` })
    }
    // Checked now, not at exec: a detached pod would only record a 126.
    const tooBig = execSizeProblem(a.exec, env)
    if (tooBig !== undefined) problems.push({ path: `apps[${i}]`, problem: tooBig })
  })
  return problems
}

/** Throws EUSAGE if an app's program cannot be found, or it could not be given its arguments and environment. */
export const checkExecs = (m: PodManifest, base?: NodeJS.ProcessEnv, root?: IsolatedRoot): void => {
  const problems = execProblems(m, base, root)
  if (problems.length > 0) {
    const hint = problems.some((p) => p.path.endsWith('.exec[0]'))
      ? 'give an absolute path or a program on PATH'
      : 'pass less in the environment (a files volume holds large values)'
    throw new PodctlError('EUSAGE', `invalid manifest: ${formatProblems(problems)}`, hint)
  }
}

/** Throws EUSAGE if an app names a user or group this host does not know, or one podctl may not switch to. */
export const checkAppUsers = (m: PodManifest): void => {
  const problems = appUserProblems(m)
  if (problems.length > 0) {
    throw new PodctlError('EUSAGE', `invalid manifest: ${formatProblems(problems)}`, 'name a user and group of this host (getent passwd, getent group); only root runs apps as another user')
  }
}

export interface CreateOptions {
  /** Creation time to record (default: now). */
  now?: Date
  /**
   * fsync files and directories (default true). Only bulk creators that
   * can afford to lose pods in a power failure (benchmarks, tests) turn
   * it off.
   */
  sync?: boolean
  /** The OCI runtime an isolated pod is prepared with (CONTRACT §12), recorded with it. */
  runtime?: { name: string; path: string }
  /** The name each image app's image was given by (CONTRACT §13: list shows it), null for a digest. */
  imageNames?: ReadonlyMap<string, string | null>
}

/**
 * Creates a pod from a validated manifest and leaves it in preparing,
 * locked by this process, with its manifest, record and app roots written
 * and synced. On failure the half-made pod is deleted and the error
 * rethrown. What the manifest asks of the host (volume sources) is the
 * caller's to check first.
 */
export const createPod = async (dataDir: string, manifest: PodManifest, opts: CreateOptions = {}): Promise<Pod> => {
  const sync = opts.sync !== false
  const pod = await newPod(dataDir, { sync })
  try {
    writeFileAtomic(pod.path, MANIFEST_FILE, JSON.stringify(manifest), { sync })
    const record = initialRecord(pod.uuid, manifest, opts.now ?? new Date(), opts.runtime, opts.imageNames)
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

/**
 * Deletes a pod its creator gives up on; `beforeDelete` undoes what was
 * set up for it (volumes). If that fails too, gc finds it as an aborted
 * prepare.
 */
export const discard = (pod: Pod, beforeDelete?: BeforeDelete): void => {
  try {
    pod.toGarbage()
    pod.remove(beforeDelete)
  } catch {
    pod.close()
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
