/**
 * An isolated pod's cgroups and limits (CONTRACT §12): the pod's limits on
 * its infra's cgroup, which holds each app's cgroup, so that the kernel
 * counts every app against the pod's limits and each app against its own.
 */
import type { Linux, Resources } from '../oci-spec.js'
import type { ResourceLimits } from './facts.js'

/** A CFS period of 100 ms, the kernel's default and podman's. */
export const CPU_PERIOD_US = 100_000

/**
 * The cgroup of a pod (its infra's) and of each app within it. An app's
 * has a prefix: a cgroup v1 directory holds files (`tasks`) that an
 * app's name could be.
 */
export const podCgroup = (uuid: string): string => `/podctl/${uuid}`
/** The infra's cgroup: the pod's on cgroup v1, a leaf below it on v2, where a cgroup with processes cannot hand controllers to its children. */
export const infraCgroup = (uuid: string, unified: boolean): string => (unified ? `${podCgroup(uuid)}/infra` : podCgroup(uuid))
export const appCgroup = (uuid: string, app: string): string => `${podCgroup(uuid)}/app-${app}`

/** The `linux.resources` of a cgroup with limits `r`; a privileged app's (or its pod's) lets it have the host's devices. */
export const linuxResources = (r: ResourceLimits | undefined, privileged: boolean): Resources => ({
  // Only the devices runc makes itself (null, zero, full, random, urandom, tty, ptmx): no host device.
  devices: [{ allow: privileged, access: 'rwm' }],
  // Memory with no swap beyond it, as rkt's isolator: a memory limit that swap can stretch is no limit.
  ...(r?.memoryBytes !== undefined ? { memory: { limit: r.memoryBytes, swap: r.memoryBytes } } : {}),
  ...(r?.cpuCores !== undefined ? { cpu: { quota: Math.round(r.cpuCores * CPU_PERIOD_US), period: CPU_PERIOD_US } } : {}),
  ...(r?.pids !== undefined ? { pids: { limit: r.pids } } : {}),
})

/** An app's cgroup and its own limits, or nothing where the pod has no cgroups. */
export const appResourcesOf = (cgroups: boolean, uuid: string, app: { name: string; resources?: ResourceLimits; privileged: boolean }): Pick<Linux, 'cgroupsPath' | 'resources'> =>
  cgroups ? { cgroupsPath: appCgroup(uuid, app.name), resources: linuxResources(app.resources, app.privileged) } : {}
