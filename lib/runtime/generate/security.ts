/**
 * What confines an app (CONTRACT §12): its capabilities (bounding,
 * effective and permitted alike, nothing inheritable or ambient; for a
 * user that is not root, only those added, ambient too, as podman's),
 * `no_new_privs`, its seccomp filter, and the paths of /proc and /sys
 * that podman masks or makes read-only, plus the host's secrets for apps
 * of host programs (lib/runtime/host-secrets.ts). A privileged app gets
 * none of it: it is no boundary, as podman's --privileged is none.
 */
import type { Capabilities, Linux } from '../oci-spec.js'
import type { AppFacts } from './facts.js'

/** What podman masks (CONTRACT §12), and /sys/dev/block, which names the host's disks. */
export const MASKED_PATHS: readonly string[] = [
  '/proc/acpi',
  '/proc/kcore',
  '/proc/keys',
  '/proc/latency_stats',
  '/proc/timer_list',
  '/proc/timer_stats',
  '/proc/sched_debug',
  '/proc/scsi',
  '/sys/firmware',
  '/sys/fs/selinux',
  '/sys/dev/block',
]

/** What podman makes read-only. */
export const READONLY_PATHS: readonly string[] = ['/proc/asound', '/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger']

/** The same set in every place the kernel looks; none inherited or ambient. */
export const capabilitySet = (caps: readonly string[]): Capabilities => ({ bounding: [...caps], effective: [...caps], permitted: [...caps], inheritable: [], ambient: [] })

/**
 * An app's capabilities. A user that is not root loses its effective and
 * permitted sets at execve; as podman does, it gets the capabilities the
 * manifest adds (and only those) in every set, ambient included, so that
 * they survive it; the bounding set stays the app's whole set.
 */
export const appCapabilities = (app: Pick<AppFacts, 'capabilities' | 'addedCapabilities' | 'user' | 'privileged'>): Capabilities => {
  if (app.user.uid === 0 || app.privileged) return capabilitySet(app.capabilities)
  const added = [...app.addedCapabilities]
  return { bounding: [...app.capabilities], effective: added, permitted: [...added], inheritable: [...added], ambient: [...added] }
}

/** The confining part of an app's `linux` section. */
export const securityOf = (app: AppFacts): Pick<Linux, 'maskedPaths' | 'readonlyPaths' | 'seccomp'> =>
  app.privileged
    ? {}
    : {
        maskedPaths: [...MASKED_PATHS, ...app.masked],
        readonlyPaths: [...READONLY_PATHS],
        ...(app.seccomp ? { seccomp: app.seccomp } : {}),
      }
