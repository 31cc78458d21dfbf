/**
 * Processes that left their app's process group (setsid, a daemon's double
 * fork) escape the group kills of the supervisor and the guardian. Without
 * cgroups (podctl runs unprivileged) the one mark they still carry is the
 * environment the supervisor gave every app, which their descendants
 * inherit: PODCTL_POD_UUID and PODCTL_APP_NAME. A process that rewrote its
 * environment is out of reach; Documentation/devel/supervisor.md says so.
 */
import fs from 'node:fs'
import { procStart, sameProcess } from './owner.js'

/**
 * Pids of live processes whose environment names the pod (and the app, if
 * given), with their start times; with `startedSince` (a /proc start time)
 * only processes started since then. Never this process or its parent: a
 * podctl command run from inside an app carries the same environment.
 */
export const podProcesses = (uuid: string, app?: string, startedSince?: string | null): { pid: number; start: string }[] => {
  // A descendant of the app started after it: reading the environment of
  // older processes (most of a machine's) can be skipped.
  const since = startedSince ? Number(startedSince) : 0
  let names: string[]
  try {
    names = fs.readdirSync('/proc')
  } catch {
    return [] // no /proc: nothing to find
  }
  const podMark = `PODCTL_POD_UUID=${uuid}`
  const appMark = app === undefined ? undefined : `PODCTL_APP_NAME=${app}`
  const found: { pid: number; start: string }[] = []
  const self = process.pid
  const parent = process.ppid
  for (const name of names) {
    const pid = Number(name)
    if (!Number.isInteger(pid) || pid <= 1 || pid === self || pid === parent) continue
    const start = procStart(pid)
    if (start === undefined || Number(start) < since) continue
    let env: string[]
    try {
      env = fs.readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0')
    } catch {
      continue // gone, or not ours to read
    }
    if (env.includes(podMark) && (appMark === undefined || env.includes(appMark))) found.push({ pid, start })
  }
  return found
}

/** SIGKILLs the pod's (or one app's) escaped processes (started since `startedSince`); returns how many. */
export const killEscaped = (uuid: string, app?: string, startedSince?: string | null): number => {
  let killed = 0
  for (const p of podProcesses(uuid, app, startedSince)) {
    if (!sameProcess(p.pid, p.start)) continue // the pid was reused meanwhile
    try {
      process.kill(p.pid, 'SIGKILL')
      killed++
    } catch {
      // gone, or not ours
    }
  }
  return killed
}
