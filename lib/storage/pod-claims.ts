/**
 * The claims of a pod that is made or started (lib/run): those its
 * manifest makes (class, size), and every claim it names bound before it
 * runs. With a fleet (--cluster), a claim the fleet has is the fleet's:
 * bound there, copied into this node's data dir (where the pod's volumes
 * are set up from) and attached to this node (fleet/copies.ts).
 */
import type { PodManifest } from '../pod/manifest.js'
import { createManifestClaims, ensureClaimsBound, type WaitOptions } from './binder.js'
import { attach, copyToNode } from './fleet/copies.js'
import { openFleet, type FleetRef, type FleetStore } from './fleet/store.js'
import { LocalStore } from './local/store.js'

export type { FleetRef, FleetStore }

export interface EnsureBoundOptions extends WaitOptions {
  /** With --cluster: the fleet, whose claims the manifest's are. */
  fleet?: FleetRef
}

const persistent = (m: PodManifest) => (m.volumes ?? []).flatMap((v) => (v.kind === 'persistent' ? [v] : []))

/**
 * Runs `fn` with the fleet's store when the command names a fleet
 * (`opts.fleet`) and the manifest has persistent volumes, connected for
 * that long; with undefined otherwise (nothing touches the network).
 */
export const withPodFleet = async <T>(dataDir: string, m: PodManifest, opts: EnsureBoundOptions | undefined, fn: (fleet: FleetStore | undefined) => Promise<T>): Promise<T> => {
  const fleet = opts?.fleet && persistent(m).length > 0 ? await openFleet(opts.fleet, dataDir, opts.identity) : undefined
  try {
    return await fn(fleet)
  } finally {
    fleet?.close()
  }
}

/** The manifest's claims the fleet has, or that the manifest makes there (class, size): the data dir need not have them. */
export const fleetClaimsOf = async (fleet: FleetStore, m: PodManifest): Promise<Set<string>> => {
  const out = new Set<string>()
  for (const v of persistent(m)) if (v.class !== undefined || v.size !== undefined || (await fleet.findClaim(v.claim))) out.add(v.claim)
  return out
}

/** Makes the claims a manifest asks for, in the fleet or the data dir. */
export const createPodClaims = (dataDir: string, m: PodManifest, fleet: FleetStore | undefined): Promise<void> => createManifestClaims(fleet ?? new LocalStore(dataDir), m)

/** Before pod `pod` runs: its fleet claims bound, copied here and attached to this node; then the data dir's bound. */
export const bindPodClaims = async (pod: { dataDir: string; uuid: string }, m: PodManifest, opts: EnsureBoundOptions, fleet: FleetStore | undefined): Promise<void> => {
  if (fleet) {
    await ensureClaimsBound(fleet, m, opts)
    for (const v of persistent(m)) {
      const c = (await fleet.findClaim(v.claim))?.value
      if (c === undefined) continue // the data dir's
      await copyToNode(fleet, c)
      await attach(fleet, c.name, pod.uuid)
    }
  }
  await ensureClaimsBound(new LocalStore(pod.dataDir), m, opts)
}
