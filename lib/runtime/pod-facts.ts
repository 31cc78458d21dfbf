/**
 * What an isolated pod is on this host, gathered once when it starts
 * (lib/runtime/generate/facts.ts, PodFacts): its ids, its cgroups and
 * limits, the host's directories its root binds, its root made.
 */
import fs from 'node:fs'
import os from 'node:os'
import { PodctlError, shortId } from '../errors.js'
import { cpuCores, memoryBytes, networkOf, type PodManifest, type Resources } from '../pod/manifest.js'
import { canMakeCgroups, cgroupLayout } from '../proc/cgroups.js'
import type { PodFacts, ResourceLimits } from './generate/facts.js'
import { HOST_DIRS } from './generate/root.js'
import type { PodIds } from './userns.js'

/** podman's pids_limit: what a pod may have at once when its manifest says nothing (CONTRACT §15). */
export const DEFAULT_POD_PIDS = 2048

/** Each of HOST_DIRS that this host has: a directory to bind, or a link to make the same. */
export const hostDirs = (): { path: string; link?: string }[] => {
  const out: { path: string; link?: string }[] = []
  for (const d of HOST_DIRS) {
    const st = fs.lstatSync(d, { throwIfNoEntry: false })
    if (st?.isSymbolicLink()) out.push({ path: d, link: fs.readlinkSync(d) })
    else if (st?.isDirectory()) out.push({ path: d })
  }
  return out
}

/** A manifest's limits as numbers (validated already); `pids: 0` is no limit. */
export const resourceLimits = (r: Resources | undefined): ResourceLimits | undefined =>
  r === undefined
    ? undefined
    : {
        ...(r.memory !== undefined ? { memoryBytes: memoryBytes(r.memory)! } : {}),
        ...(r.cpu !== undefined ? { cpuCores: cpuCores(r.cpu)! } : {}),
        ...(r.pids !== undefined && r.pids > 0 ? { pids: r.pids } : {}),
      }

/** Whether this podctl can give its pods cgroups: root can; another user only where it may write the hierarchy's root. */
export const mayMakeCgroups = (): boolean => process.geteuid?.() === 0 || canMakeCgroups()

/**
 * Why a pod's limits cannot be had here (EFAILED), or undefined: a user
 * other than root who cannot make cgroups (a rootless runtime on cgroup v1)
 * gets none. Checked at prepare, and again when the pod starts.
 */
export const limitsRefused = (m: PodManifest, which: string): PodctlError | undefined => {
  const asked = (r: Resources | undefined): boolean => r !== undefined && (r.memory !== undefined || r.cpu !== undefined || (r.pids !== undefined && r.pids > 0))
  if (!asked(m.resources) && !m.apps.some((a) => asked(a.resources))) return undefined
  if (mayMakeCgroups()) return undefined
  return new PodctlError('EFAILED', `${which} has resource limits, and this user cannot make cgroups on this host`, 'run it as root, or leave the limits out')
}

/**
 * The limits of the pod's cgroup (its infra's, which holds its apps'):
 * the manifest's, or, for processes, podman's default where it gives
 * none (CONTRACT §15). The number is what an app reads in its pids.max,
 * as in podman; the infra is one process of it.
 */
export const podLimits = (m: PodManifest): ResourceLimits => {
  const l = resourceLimits(m.resources) ?? {}
  const pids = m.resources?.pids === undefined ? DEFAULT_POD_PIDS : l.pids
  return { ...l, ...(pids !== undefined ? { pids } : {}) }
}

export interface PodFactsInput {
  uuid: string
  podRoot: string
  infraRoot: string
  ids: PodIds
}

/** The pod's facts, from its manifest and this host. */
export const podFacts = (m: PodManifest, input: PodFactsInput): PodFacts => {
  const cgroups = mayMakeCgroups()
  return {
    uuid: input.uuid,
    // On the host's network, the host's name, as podman gives it (a pod's own name would resolve to nothing there).
    hostname: m.hostname ?? (networkOf(m) === 'host' ? os.hostname() : (m.name ?? shortId(input.uuid))),
    rootfs: input.podRoot,
    infraRoot: input.infraRoot,
    network: networkOf(m) === 'host' ? 'host' : networkOf(m) === 'none' ? 'none' : 'joined',
    ...(input.ids.map ? { idMap: input.ids.map } : {}),
    cgroups,
    unified: cgroups && cgroupLayout().mode === 'v2',
    hostDirs: hostDirs(),
    privilegedApps: m.apps.some((a) => a.privileged === true),
  }
}

/**
 * The pod's own root: an empty directory where the runtime makes the
 * mount points (so nothing is ever made on the host), with the host's
 * links (/bin → usr/bin) as links; owned by the pod's root.
 */
export const makePodRoot = (facts: PodFacts, owner: { uid: number; gid: number } | undefined): void => {
  fs.mkdirSync(facts.rootfs, { recursive: true, mode: 0o755 })
  fs.chmodSync(facts.rootfs, 0o755)
  if (owner) fs.lchownSync(facts.rootfs, owner.uid, owner.gid)
  for (const d of facts.hostDirs) {
    if (d.link === undefined) continue
    const at = `${facts.rootfs}${d.path}`
    if (fs.lstatSync(at, { throwIfNoEntry: false })) continue
    fs.symlinkSync(d.link, at)
  }
}
