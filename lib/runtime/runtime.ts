/**
 * Which OCI runtime runs isolated pods (CONTRACT §12): `--runtime NAME|PATH`
 * or PODCTL_RUNTIME, else the first of crun and runc on PATH that works on
 * this host. crun 1.8 refuses hosts with hybrid cgroups (v1 controllers
 * beside an empty v2 tree), where runc works. A pod keeps the runtime it
 * was prepared with; its state lives under the data dir (the runtime's
 * `--root`), one directory per runtime, so two data dirs never share it.
 */
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { cgroupLayout } from '../proc/cgroups.js'
import { findProgram } from '../proc/executable.js'

export interface RuntimeRef {
  /** What `status` shows: the program's file name (runc, crun). */
  name: string
  /** The program that was found. */
  path: string
}

/** The runtimes tried in order when none is named, as podman's default list has them. */
const DEFAULT_RUNTIMES = ['crun', 'runc'] as const

const INSTALL_HINT = 'install one: apt-get install runc (or crun, where the host has pure cgroup v2), or name one with --runtime PATH'

/** Why `name` cannot run containers on this host, or undefined if it can. */
const unusableHere = (name: string): string | undefined =>
  name === 'crun' && cgroupLayout().mode === 'hybrid' ? 'crun refuses hosts with hybrid cgroups (v1 controllers beside cgroup v2), as this one has' : undefined

/**
 * The runtime to prepare a pod with: `wanted` (a name on PATH or a path),
 * else the first default that works here. EFAILED, naming the packages,
 * when there is none.
 */
export const findRuntime = (wanted: string | undefined = process.env.PODCTL_RUNTIME || undefined): RuntimeRef => {
  if (wanted !== undefined) {
    const p = wanted.includes('/') ? path.resolve(wanted) : findProgram(wanted)
    const found = p !== undefined && findProgram(path.basename(p), { PATH: path.dirname(p) }) === p ? p : undefined
    if (found === undefined) throw new PodctlError('EFAILED', `no OCI runtime ${JSON.stringify(wanted)}: not an executable file${wanted.includes('/') ? '' : ' on PATH'}`, INSTALL_HINT)
    const name = path.basename(found)
    const why = unusableHere(name)
    if (why !== undefined) throw new PodctlError('EFAILED', `the OCI runtime ${name} cannot be used here: ${why}`, 'use runc: --runtime runc')
    return { name, path: found }
  }
  const skipped: string[] = []
  for (const name of DEFAULT_RUNTIMES) {
    const p = findProgram(name)
    if (p === undefined) continue
    const why = unusableHere(name)
    if (why === undefined) return { name, path: p }
    skipped.push(why)
  }
  throw new PodctlError('EFAILED', `no OCI runtime to isolate pods with: neither crun nor runc is usable on this host${skipped.length > 0 ? ` (${skipped.join('; ')})` : ''}`, INSTALL_HINT)
}

/** Where a runtime keeps the state of a data dir's containers (its `--root`). */
export const runtimeRoot = (dataDir: string, runtime: Pick<RuntimeRef, 'name'>): string => path.join(dataDir, 'runtime', runtime.name)

/** The container ids of a pod: its infra's, and each app's beside it. */
export const infraId = (uuid: string): string => uuid
export const appId = (uuid: string, app: string): string => `${uuid}.${app}`
