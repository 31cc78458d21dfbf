// Whether this machine can run isolated pods (CONTRACT §12): an OCI
// runtime and the default seccomp profile. Tests that need them say why
// they cannot run instead of failing where the parts are missing.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { findInfraProgram } from '../../lib/runtime/infra.js'
import { findRuntime } from '../../lib/runtime/runtime.js'
import { podctl } from './cli-util.js'
import type { Who } from './oci-util.js'
import { allPods, type Test } from './common.js'
import { alive, allPids } from './run-util.js'
import { containersCommonProfile } from '../../lib/runtime/seccomp.js'
import { cgroupMounts as hierarchies } from '../../lib/proc/cgroups.js'

/** Undefined when isolated pods can run here; else what is missing, in words. */
export const containersMissing = (): string | undefined => {
  try {
    findRuntime()
    containersCommonProfile()
    findInfraProgram()
    return undefined
  } catch (er) {
    return (er as Error).message
  }
}

// The unprivileged user is oci-util.ts's; re-exported for the suites that import it from here.
export { TEST_USER, unprivileged, type Who } from './oci-util.js'

/** A data dir the user owns, in a sticky /tmp (CONTRACT §10 trusts it). */
export const dataDirFor = (t: Test, who: Who): string => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'podctl-iso-'))
  fs.chmodSync(base, 0o755)
  fs.chownSync(base, who.uid, who.gid)
  const dir = path.join(base, 'data')
  t.teardown(() => {
    killPodsIn(dir)
    fs.rmSync(base, { recursive: true, force: true })
  })
  return dir
}

/** What `/proc/PID/FILE` says, or '' (gone, or not ours to read). */
const procText = (pid: number, file: string): string => {
  try {
    return fs.readFileSync(`/proc/${pid}/${file}`, 'latin1')
  } catch {
    return ''
  }
}

/** Where process `pid` has its root, or '' (read as root; a non-dumpable process hides it from others). */
const procRoot = (pid: number): string => {
  try {
    return fs.readlinkSync(`/proc/${pid}/root`)
  } catch {
    return ''
  }
}

/**
 * Processes that belong to a pod of `dir`: its apps (by their environment:
 * the pod's UUID, or a host app's root in the dir), what runs its
 * containers (by their arguments), and its infra (catatonit, which shows
 * neither: by its cgroup, which holds the pod's UUID where the pod has
 * cgroups, or by its root, which is in the data dir).
 */
export const podProcesses = (dir: string, uuid?: string): number[] => {
  const uuids = uuid === undefined ? allPods(dir) : [uuid]
  return allPids().filter((p) => {
    const cmd = procText(p, 'cmdline')
    const env = procText(p, 'environ')
    const cgroup = procText(p, 'cgroup')
    const mark =
      uuids.some((u) => cmd.includes(u) || env.includes(`PODCTL_POD_UUID=${u}`) || cgroup.includes(`/${u}`)) ||
      (uuid === undefined && (cmd.includes(`${dir}/pods/`) || env.includes(`PODCTL_APP_ROOT=${dir}/`) || procRoot(p).startsWith(`${dir}/`)))
    return mark && !cmd.includes('supervisor-main') && alive(p)
  })
}

export const killPodsIn = (dir: string): void => {
  for (const p of podProcesses(dir)) {
    try {
      process.kill(p, 'SIGKILL')
    } catch {
      // gone
    }
  }
  const r = podctl(dir, ['list', '--format', 'json'])
  if (r.status === 0) {
    for (const pod of JSON.parse(r.stdout) as { state: string; pid: number | null }[]) {
      if (pod.state === 'running' && pod.pid) {
        try {
          process.kill(pod.pid, 'SIGKILL')
        } catch {
          // gone
        }
      }
    }
  }
}

/** Every cgroup hierarchy mounted here, once each (their mount points). */
export const cgroupMounts = (): string[] => hierarchies().map((m) => m.mountPoint)

/** Where pod `uuid`'s cgroup is in the hierarchy mounted at `mount` (/podctl/<uuid>, as the runtime makes them). */
export const podCgroupIn = (mount: string, uuid: string): string => path.join(mount, 'podctl', uuid)

/** The hierarchies (mount points) where pod `uuid` still has a cgroup. */
export const podCgroupsLeft = (uuid: string, mounts = cgroupMounts()): string[] => mounts.filter((m) => fs.existsSync(podCgroupIn(m, uuid)))
