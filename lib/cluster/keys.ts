/** podctl's keys in etcd below the cluster prefix, named in one place (Documentation/fleet.md has their values and lifetimes). */
export const KEYS = {
  /** The leader's key, bound to its lease: while it exists, commands leave provisioning to it. */
  election: 'election/controller',
  /** What outlives a leader: transitions, and who led last. */
  history: 'election/history',
  /** The name of the fleet's default class. */
  defaultClass: 'class-default',
  classes: 'classes/',
  claims: 'claims/',
  volumes: 'volumes/',
  /** Which nodes' pods use a claim (storage/fleet/attachments.ts). */
  attachments: 'attachments/',
  /** `locks/<kind>.<name>`, bound to the holder's session lease (session.ts). */
  locks: 'locks/',
  /** `nodes/<node>`, bound to the node's controller's lease: present while it lives. */
  nodes: 'nodes/',
  nodeInfo: 'node-info/',
  /** `pods/<node>/<uuid>`: a pod's summary. */
  pods: 'pods/',
} as const

/** A value read from etcd if it is a JSON object, else undefined: etcd's contents are not trusted to be podctl's (its fields are not checked here). */
export const parseObject = <T extends object>(text: string | undefined): T | undefined => {
  try {
    const v = text === undefined ? undefined : (JSON.parse(text) as unknown)
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as T) : undefined
  } catch {
    return undefined
  }
}
