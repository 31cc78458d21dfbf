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
import type { Test } from './common.js'
import { alive, allPids } from './run-util.js'
import { containersCommonProfile } from '../../lib/runtime/seccomp.js'

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

/** Processes that belong to a pod of `dir`: its apps (by their environment) and its holder (by its arguments). */
export const podProcesses = (dir: string, uuid?: string): number[] =>
  allPids().filter((p) => {
    try {
      const cmd = fs.readFileSync(`/proc/${p}/cmdline`, 'latin1')
      const env = fs.readFileSync(`/proc/${p}/environ`, 'latin1')
      const mark = uuid === undefined ? cmd.includes(`${dir}/pods/`) || env.includes(`PODCTL_APP_ROOT=${dir}/`) : cmd.includes(uuid) || env.includes(`PODCTL_POD_UUID=${uuid}`)
      return mark && !cmd.includes('supervisor-main') && alive(p)
    } catch {
      return false
    }
  })

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

