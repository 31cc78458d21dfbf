/**
 * A pod is one set of namespaces (CONTRACT §9, §12): its infra makes them,
 * and every app joins them by path (`/proc/<infra pid>/ns/…`), as podman
 * and CRI-O pods do, with a mount namespace of its own.
 *
 * | namespace     | infra                              | app                    |
 * | pid, ipc, uts | new                                | the infra's            |
 * | mount         | new                                | new                    |
 * | cgroup        | new, with cgroups                  | the infra's; new on v2 |
 * | network       | new unless the host's              | the infra's            |
 * | user          | new with an id map                 | the infra's            |
 */
import type { Linux, Namespace, NamespaceType } from '../oci-spec.js'
import type { PodFacts } from './facts.js'

const NS_FILE: Record<NamespaceType, string> = { pid: 'pid', ipc: 'ipc', uts: 'uts', mount: 'mnt', cgroup: 'cgroup', network: 'net', user: 'user' }

/** The namespaces a pod has of its own besides pid, ipc, uts and mount. */
const podOwn = (pod: PodFacts): NamespaceType[] => [
  ...(pod.cgroups ? (['cgroup'] as const) : []),
  ...(pod.network !== 'host' ? (['network'] as const) : []),
  ...(pod.idMap ? (['user'] as const) : []),
]

/** The infra's: every namespace of the pod, made new. */
export const infraNamespaces = (pod: PodFacts): Namespace[] => (['pid', 'ipc', 'uts', 'mount', ...podOwn(pod)] as const).map((type) => ({ type }))

/** An app's: the infra's, joined by path (`infraPid` on the host), with a mount namespace of its own. */
export const appNamespaces = (pod: PodFacts, infraPid: number): Namespace[] => {
  const join = (type: NamespaceType): Namespace => ({ type, path: `/proc/${infraPid}/ns/${NS_FILE[type]}` })
  // On cgroup v2 an app has a cgroup namespace of its own, rooted at its own cgroup.
  return [join('pid'), join('ipc'), join('uts'), { type: 'mount' }, ...podOwn(pod).map((type) => (type === 'cgroup' && pod.unified ? { type } : join(type)))]
}

/** The id mappings of a pod with a user namespace of its own. */
export const idMappings = (pod: PodFacts): Pick<Linux, 'uidMappings' | 'gidMappings'> => (pod.idMap ? { uidMappings: pod.idMap.uid, gidMappings: pod.idMap.gid } : {})
