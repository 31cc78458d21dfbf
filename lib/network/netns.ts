/**
 * Network namespaces podctl makes for pods, as `ip netns add` makes them:
 * a namespace bound at /run/netns/podctl-<uuid>, which outlives every
 * process in it. A runtime can start a pod's infra in it (the OCI spec's
 * namespace path), and DEL then always finds the pod's interfaces where
 * ADD put them, crash or no crash: nothing that lived in the namespace is
 * left to the kernel's tear-down order. /run is gone after a reboot, and
 * so are the namespaces.
 */
import fs from 'node:fs'
import { PodctlError } from '../errors.js'
import { mustRun, runTool } from './tool.js'

export const NETNS_DIR = '/run/netns'

/** The name `ip netns` shows for a pod's namespace. */
export const podNetnsName = (uuid: string): string => `podctl-${uuid}`
export const podNetnsPath = (uuid: string): string => `${NETNS_DIR}/${podNetnsName(uuid)}`

/** Makes the pod's namespace (loopback up); its path. EFAILED if it exists already. */
export const makePodNetns = async (uuid: string): Promise<string> => {
  const name = podNetnsName(uuid)
  if (fs.existsSync(podNetnsPath(uuid))) throw new PodctlError('EFAILED', `the network namespace ${name} exists already`, `remove it if its pod is gone: ip netns del ${name}`)
  await mustRun('ip', ['netns', 'add', name])
  await mustRun('ip', ['-n', name, 'link', 'set', 'lo', 'up'])
  return podNetnsPath(uuid)
}

/** Removes a namespace podctl made (unbinds and unlinks it); nothing if it is gone. */
export const removePodNetns = async (path: string): Promise<void> => {
  const name = path.startsWith(`${NETNS_DIR}/`) ? path.slice(NETNS_DIR.length + 1) : undefined
  if (name === undefined || !name.startsWith('podctl-') || !fs.existsSync(path)) return
  const r = await runTool('ip', ['netns', 'del', name])
  if (r.status !== 0 && fs.existsSync(path)) throw new PodctlError('EFAILED', `cannot remove the network namespace ${name}: ${r.stderr.trim()}`, `remove it by hand: ip netns del ${name}`)
}

/**
 * A namespace held open by this process: `path` names it through the fd
 * (`/proc/<pid>/fd/<n>`), which keeps it, and every interface in it,
 * whole while its last process ends, so that a DEL that must work in it
 * (an operator's ipMasq, firewall or tuning) still finds what ADD made.
 * Undefined when it cannot be opened (its process gone).
 */
export interface HeldNetns {
  path: string
  release(): void
}

export const holdNetns = (nsPath: string): HeldNetns | undefined => {
  let fd: number
  try {
    fd = fs.openSync(nsPath, 'r')
  } catch {
    return undefined
  }
  let open = true
  return {
    path: `/proc/${process.pid}/fd/${fd}`,
    release: () => {
      if (open) fs.closeSync(fd)
      open = false
    },
  }
}
