/**
 * An isolated pod's runtime around its life (CONTRACT §12): what prepare
 * checks of this host before the pod is made (a usable runtime, the
 * default seccomp profile, mount points it can make), which runtime a
 * prepared pod runs on, and what rm and gc delete with it (the runtime's
 * containers, then its volumes).
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { removeEmptyCgroups } from '../proc/cgroups.js'
import { usernsOf, type PodManifest } from '../pod/manifest.js'
import type { BeforeDelete, Pod } from '../pod/pod.js'
import { HOST_DIRS } from './generate/root.js'
import { podMountsTeardown } from '../image/app-root.js'
import type { PodRecord } from '../pod/record.js'
import { tearDownPodVolumes } from '../volume/pod-volumes.js'
import { normalizeMountPath } from '../volume/plan.js'
import { RuntimeDriver } from './driver.js'
import { BUNDLES_DIR } from './pod-containers.js'
import { podCgroup } from './generate/resources.js'
import { limitsRefused } from './pod-facts.js'
import { findInfraProgram } from './infra.js'
import { findRuntime, type RuntimeRef } from './runtime.js'
import { containersCommonProfile, userSeccomp } from './seccomp.js'
import { privateIdRange } from './userns.js'

const under = (p: string, dir: string): boolean => p === dir || p.startsWith(`${dir}/`)

/** The kernel's file systems in a pod's root (its /proc, /sys, /dev), and podctl's own place there: no volume goes there. */
const KERNEL_DIRS = ['/proc', '/sys', '/dev', '/run/podctl'] as const

/**
 * Mount paths the pod's root cannot hold: the host's own directories are
 * bound into it read-only, so a mount point below them must already exist
 * there (anything else, `/srv/data` or `/data`, is made in the pod's root).
 */
export const mountPathProblems = (m: PodManifest): string[] => {
  const problems: string[] = []
  m.apps.forEach((a, i) =>
    (a.mounts ?? []).forEach((mt, j) => {
      const p = normalizeMountPath(mt.path)
      const kernel = KERNEL_DIRS.find((d) => under(p, d))
      if (kernel !== undefined) {
        problems.push(`apps[${i}].mounts[${j}].path: ${JSON.stringify(mt.path)} is in ${kernel}, which is ${kernel === '/run/podctl' ? "podctl's own" : "the kernel's own"} in the pod; mount the volume elsewhere`)
        return
      }
      const host = HOST_DIRS.find((d) => under(p, d))
      if (host === undefined || p === host) {
        if (p === host) problems.push(`apps[${i}].mounts[${j}].path: ${JSON.stringify(mt.path)} is one of the host's directories the pod's root binds (${HOST_DIRS.join(', ')}); mount the volume below another path`)
        return
      }
      if (!fs.existsSync(p)) problems.push(`apps[${i}].mounts[${j}].path: ${JSON.stringify(mt.path)} is below ${host}, which the pod's root binds read-only from the host, and does not exist there; mount the volume elsewhere (such as /srv or /data)`)
    }),
  )
  return problems
}

/**
 * What an isolated pod needs of this host, checked before it is made:
 * the runtime (`wanted`, else the default), the default seccomp profile
 * when an app uses it, the users' own profiles, its mount points and, for
 * `userns: private`, the id range; for limits, cgroups this user can
 * make. Returns the runtime to record.
 */
export const checkIsolatedPod = (m: PodManifest, wanted?: string): RuntimeRef => {
  const problems = mountPathProblems(m)
  if (problems.length > 0) throw new PodctlError('EUSAGE', `invalid manifest: ${problems.join('; ')}`, 'see Documentation/manifest.md, "Isolation"')
  for (const a of m.apps) {
    if (a.privileged === true || a.seccomp === 'unconfined') continue
    if (a.seccomp === undefined || a.seccomp === 'default') containersCommonProfile()
    else userSeccomp(a.seccomp)
  }
  if (usernsOf(m) === 'private') {
    if (process.geteuid?.() !== 0) throw new PodctlError('EUSAGE', 'invalid manifest: userns: "private" is for pods run by root; a pod run by another user has a user namespace of its own already')
    privateIdRange()
  }
  const refused = limitsRefused(m, 'the pod')
  if (refused) throw refused
  findInfraProgram()
  return findRuntime(wanted)
}

/** The runtime an isolated pod was prepared with, from its record (none recorded: the default). */
export const recordedRuntime = (r: Pick<PodRecord, 'runtime' | 'runtime_path'>): { runtime?: RuntimeRef } =>
  r.runtime && r.runtime_path ? { runtime: { name: r.runtime, path: r.runtime_path } } : {}

/**
 * What goes with a pod of `dataDir` just before its directory is deleted
 * (the BeforeDelete of rm, gc and a creator giving up, under the pod's
 * lock): the containers its runtime still keeps (a supervisor or runtime
 * killed midway leaves them) and the empty cgroups a runtime killed while
 * it made a container leaves with no container to delete, the overlays of
 * its apps' image roots, then its volumes. Made once per pass: the mount table is read once.
 */
export const podTeardown = (dataDir: string): BeforeDelete => {
  const unmountRoots = podMountsTeardown(dataDir)
  return (pod) => {
    if (fs.existsSync(path.join(pod.path, BUNDLES_DIR))) {
      const runtime = recordedRuntime(pod.record()).runtime
      if (runtime) new RuntimeDriver(pod.dataDir, runtime).deletePod(pod.uuid)
      removeEmptyCgroups(podCgroup(pod.uuid))
    }
    unmountRoots(pod)
    tearDownPodVolumes(pod)
  }
}

/** podTeardown for one pod. */
export const tearDownPod = (pod: Pod): void => podTeardown(pod.dataDir)(pod)
