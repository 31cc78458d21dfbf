/**
 * Persistent volumes as `volume list` and `volume inspect` show them. The
 * list leaves out usage (a walk per volume); inspect adds it.
 */
import type { AccessMode } from '../pod/manifest.js'
import { volumeMetrics } from './metrics.js'
import { claimViews, readVolume, volumeDataPath, type PvRecord, type ReclaimPolicy } from './persistent.js'
import { oneLine } from '../errors.js'
import type { ObjectEvent } from './objects.js'
import type { Metrics } from './types.js'

export interface ClaimSummary {
  pod: string
  mode: AccessMode
  read_only: boolean
  /** The claim holds: the pod is running under the supervisor that claimed. */
  running: boolean
  claimed_at: string
}

export interface PvView {
  name: string
  kind: 'persistent'
  path: string
  created_at: string
  reclaim: ReclaimPolicy
  access_mode: AccessMode
  size_limit_bytes: number | null
  /** As in Kubernetes: "bound" while any pod holds a claim, else the record's phase. */
  phase: PvRecord['phase'] | 'bound'
  /** Pods bound to the volume (running or not yet removed). */
  claims: ClaimSummary[]
  /** The running pods among them. */
  in_use_by: string[]
  /** Its claim object, when one is bound to it or released it. */
  claim: string | null
  /** Its last events (a failed delete). */
  events: ObjectEvent[]
}

export interface PvInspectView extends PvView, Metrics {
  /** null without a size limit or when usage is unknown. */
  over_size_limit: boolean | null
}

/** The list view of a volume record. */
export const pvView = (dataDir: string, rec: PvRecord): PvView => {
  const claims = claimViews(dataDir, rec.name).map((c) => ({ pod: c.pod, mode: c.mode, read_only: c.read_only, running: c.running, claimed_at: c.claimed_at }))
  return {
    name: rec.name,
    kind: 'persistent',
    path: volumeDataPath(dataDir, rec),
    created_at: rec.created_at,
    reclaim: rec.reclaim,
    access_mode: rec.access_mode,
    size_limit_bytes: rec.size_limit_bytes,
    phase: rec.phase === 'available' && claims.length > 0 ? 'bound' : rec.phase,
    claims,
    in_use_by: claims.filter((c) => c.running).map((c) => c.pod),
    claim: rec.claim_ref?.name ?? null,
    events: rec.events ?? [],
  }
}

/** `volume inspect`: the list view plus usage. ENOVOLUME if there is no such volume. */
export const pvInspect = (dataDir: string, name: string): PvInspectView => {
  const v = pvView(dataDir, readVolume(dataDir, name))
  const m = volumeMetrics(v.path, true, { followRoot: false })
  const over = v.size_limit_bytes === null || m.used_bytes === null ? null : m.used_bytes > v.size_limit_bytes
  return { ...v, ...m, over_size_limit: over }
}

const dash = (x: unknown): string => (x === null || x === undefined ? '-' : String(x))

/** key=value lines, like `podctl status`; each value one line (a path may be a provisioner's answer). */
export const pvInspectLines = (v: PvInspectView): string => {
  const lines = [
    `name=${v.name}`,
    `kind=${v.kind}`,
    `path=${v.path}`,
    `created=${v.created_at}`,
    `reclaim=${v.reclaim}`,
    `access-mode=${v.access_mode}`,
    `size-limit-bytes=${dash(v.size_limit_bytes)}`,
    `phase=${v.phase}`,
    `volume-claim=${v.claim ?? '-'}`,
    `used-bytes=${dash(v.used_bytes)}`,
    `used-inodes=${dash(v.used_inodes)}`,
    `capacity-bytes=${dash(v.capacity_bytes)}`,
    `available-bytes=${dash(v.available_bytes)}`,
    `in-use-by=${v.in_use_by.join(',') || '-'}`,
  ]
  const last = v.events.at(-1)
  if (last) lines.push(`last-event=${last.time} ${last.type} ${last.reason}: ${oneLine(last.message)}`)
  for (const c of v.claims) lines.push(`claim-${c.pod}=${c.mode}${c.read_only ? ',read-only' : ''},${c.running ? 'running' : 'not-running'}`)
  return `${lines.map(oneLine).join('\n')}\n`
}
