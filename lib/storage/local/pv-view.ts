/** Persistent volumes as `volume list` shows them, and a provisioner's delete is given them; `inspect` adds usage (lib/volume/view.ts). */
import type { AccessMode } from '../../pod/manifest.js'
import type { ReclaimPolicy } from '../classes.js'
import type { ObjectEvent } from '../objects.js'
import type { PvRecord } from '../volume-record.js'
import { bindingHolds, readBindings, type PodBinding } from './bindings.js'
import { volumeDataPath } from './volumes.js'

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
  /** Pods bound to the volume (running or not yet removed); `running`: its binding holds. */
  claims: (Omit<PodBinding, 'owner'> & { running: boolean })[]
  /** The running pods among them. */
  in_use_by: string[]
  /** Its claim object, when one is bound to it or released it. */
  claim: string | null
  /** Its last events (a failed delete). */
  events: ObjectEvent[]
}

/** The list view of a volume record. */
export const pvView = (dataDir: string, rec: PvRecord): PvView => {
  const claims = readBindings(dataDir, rec.name).map((b) => ({ pod: b.pod, mode: b.mode, read_only: b.read_only, running: bindingHolds(dataDir, b), claimed_at: b.claimed_at }))
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
