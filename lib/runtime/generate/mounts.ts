/**
 * An app's mounts (CONTRACT §12, §15), in the order the runtime makes
 * them: the kernel's file systems (/proc, a private /dev, /sys and the
 * cgroup tree, read-only), its temporary directories, its root's own
 * (lib/runtime/generate/root.ts: the host's directories, or an overlay),
 * its own directory and volumes, then the files podctl generates for the
 * pod (/etc/hosts, /etc/hostname, /etc/resolv.conf, /run/.containerenv).
 */
import type { Mount } from '../oci-spec.js'
import type { AppFacts, Bind, PodFacts } from './facts.js'

const PROC: Mount = { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] }

/** podman's /dev: a tmpfs where the runtime makes the standard devices, noexec. */
export const DEV_TMPFS: Mount = { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'noexec', 'strictatime', 'mode=755', 'size=65536k'] }

export const bindMount = (b: Bind, privileged = false): Mount => ({
  destination: b.target,
  type: 'bind',
  source: b.source,
  options: ['rbind', ...(privileged ? [] : ['nosuid', 'nodev']), ...(b.readOnly ? ['ro'] : [])],
})

const tmpfs = (destination: string, mode: string): Mount => ({ destination, type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'nodev', `mode=${mode}`] })

/** The kernel's file systems: the pod's /proc, a private /dev, /sys and the cgroup tree. */
export const systemMounts = (pod: PodFacts, privileged: boolean): Mount[] => {
  const ro = privileged ? [] : ['ro']
  const mounts: Mount[] = [
    PROC,
    privileged ? { destination: '/dev', type: 'bind', source: '/dev', options: ['rbind'] } : DEV_TMPFS,
    // A pts gid other than one the user namespace maps would be refused.
    { destination: '/dev/pts', type: 'devpts', source: 'devpts', options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620', ...(pod.idMap ? [] : ['gid=5'])] },
    // podman's shm_size "65536k" is read in decimal kilobytes: 65,536,000 bytes (`size=64000k` in /proc/mounts).
    { destination: '/dev/shm', type: 'tmpfs', source: 'shm', options: ['nosuid', 'noexec', 'nodev', 'mode=1777', 'size=65536000'] },
    { destination: '/dev/mqueue', type: 'mqueue', source: 'mqueue', options: ['nosuid', 'noexec', 'nodev'] },
  ]
  // A new sysfs shows the network namespace of whoever mounts it; a user
  // namespace may mount one only in a network namespace of its own.
  const hostSys = pod.idMap !== undefined && pod.network === 'host'
  if (hostSys) mounts.push({ destination: '/sys', type: 'bind', source: '/sys', options: ['rbind', 'nosuid', 'noexec', 'nodev', 'ro'] })
  else mounts.push({ destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', ...ro] })
  if (pod.cgroups) mounts.push({ destination: '/sys/fs/cgroup', type: 'cgroup', source: 'cgroup', options: ['nosuid', 'noexec', 'nodev', 'relatime', ...ro] })
  // `ro` makes only the top of a recursive bind read-only, and the host's
  // cgroup mounts below it stay writable where the host delegated a cgroup
  // to this user; runc 1.1 has no `rro`, so the whole tree is masked (CONTRACT §12a).
  else if (hostSys && !privileged) mounts.push({ destination: '/sys/fs/cgroup', type: 'tmpfs', source: 'tmpfs', options: ['ro', 'nosuid', 'noexec', 'nodev', 'size=0', 'mode=555'] })
  return mounts
}

/**
 * A tmpfs as podman's --read-only-tmpfs mounts it: the image's own
 * files there copied in (runc's `tmpcopyup`), with the mode the image's
 * directory has.
 */
const tmpfsCopyUp = (destination: string): Mount => ({ destination, type: 'tmpfs', source: 'tmpfs', options: ['rw', 'rprivate', 'nosuid', 'nodev', 'tmpcopyup'] })

/**
 * Where an app may write besides its volumes (CONTRACT §15): an app of
 * host programs, whose root is the pod's read-only one, gets a private
 * /tmp; an image app keeps its image's own /tmp, unless its root is
 * read-only: then /tmp, /var/tmp and /run are tmpfs, as podman's
 * --read-only-tmpfs gives them.
 */
export const writableMounts = (app: AppFacts): Mount[] => {
  if (app.root.kind === 'pod') return [tmpfs('/tmp', '1777')]
  return app.readOnlyRootFilesystem ? ['/tmp', '/var/tmp', '/run'].map(tmpfsCopyUp) : []
}

/** Binds, parents before what is mounted in them. */
export const byDepth = (binds: readonly Bind[]): Bind[] => [...binds].sort((a, b) => a.target.split('/').length - b.target.split('/').length)
