/**
 * The claims of a pod that is made or started (lib/run): those its
 * manifest makes, and every claim it names bound before it runs. With a
 * fleet (--cluster), a claim the fleet has is the fleet's: bound there,
 * copied into this node's data dir (marked `fleet`), where the pod's volumes
 * are set up from as any other, and attached to this node (CONTRACT §11).
 */
import type { Guard } from '../cluster/client.js'
import { KEYS } from '../cluster/keys.js'
import { PodctlError, shortId } from '../errors.js'
import type { PodManifest } from '../pod/manifest.js'
import { sleep } from '../poll.js'
import { backoffMs, createManifestClaims, ensureClaimsBound, type WaitOptions } from './binder.js'
import { CLAIM, type VolumeClaim } from './claims.js'
import { localEntry, readAttachment, withEntry } from './fleet/attachments.js'
import { openFleet, type FleetRef, type FleetStore } from './fleet/store.js'
import { findClaim, LocalStore } from './local/store.js'
import { volumeExists, writeNewVolume } from './local/volumes.js'
import { writeObject } from './objects.js'
import { Conflict } from './store.js'
import { newVolumeRecord } from './volume-record.js'

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

/** Copies bound fleet claim `c` and its volume here; EBADSTATE (exit 4) for a local volume of another node, or a local claim of the name. */
const copyToNode = async (store: FleetStore, c: VolumeClaim): Promise<void> => {
  const s = c.volume === null ? undefined : await store.findVolume(c.volume)
  if (!s) throw new PodctlError('EBADSTATE', `volume claim ${c.name} lost its volume ${c.volume}`, `remove the claim and make it again: podctl volume claim rm --cluster ${c.name}`)
  const v = s.value
  const node = v.provisioned?.node
  if (node && node !== store.node) {
    throw new PodctlError('EBADSTATE', `volume claim ${c.name} is bound to volume ${v.name}, a local volume of node ${node}; this is node ${store.node}`, `run the pod on node ${node}`)
  }
  const dataDir = store.dataDir
  // The fleet's policy applies, in the fleet: the copy is retained. Another pod of this node may make it meanwhile.
  if (!volumeExists(dataDir, v.name)) {
    writeNewVolume(dataDir, newVolumeRecord(v.name, { reclaim: 'retain', accessMode: v.access_mode, sizeLimitBytes: v.size_limit_bytes, ...(v.claim_ref ? { claimRef: v.claim_ref } : {}), ...(v.provisioned ? { provisioned: { ...v.provisioned, fleet: true } } : {}) }))
  }
  await new LocalStore(dataDir).withLock('claim', c.name, undefined, async () => {
    const old = findClaim(dataDir, c.name)
    if (old && !old.fleet) throw new PodctlError('EBADSTATE', `this node's data dir has a volume claim ${c.name} of its own: the fleet's claim of that name cannot be used here`, `remove or rename the local claim: podctl volume claim rm ${c.name}`)
    if (old?.uid !== c.uid || old.volume !== c.volume) writeObject(dataDir, CLAIM, c.name, { ...c, fleet: true, events: [] })
  })
}

/**
 * Records pod `pod` in fleet claim `name`'s attachment, requiring the claim
 * unchanged; EBADSTATE (exit 4) when it is ReadWriteOnce and another node
 * that is alive runs a pod with it.
 */
const attach = async (store: FleetStore, name: string, pod: string): Promise<void> => {
  for (let tries = 1; ; tries++) {
    const s = await store.readClaim(name)
    const { a, guard } = await readAttachment(store.cluster, s.value)
    const guards: Guard[] = [guard, { key: `${KEYS.claims}${name}`, mod: s.rev }]
    for (const [node, e] of s.value.access_mode === 'ReadWriteOnce' ? Object.entries(a.nodes) : []) {
      if (node === store.node || e.running.length === 0) continue
      if (await store.cluster.get(`${KEYS.nodes}${node}`)) {
        throw new PodctlError(
          'EBADSTATE',
          `volume claim ${name} is ReadWriteOnce and in use on node ${node} by running pod ${e.running[0]}`,
          `stop that pod first (podctl stop ${shortId(e.running[0]!)} on node ${node}), or give the claim ReadWriteMany`,
        )
      }
      // A lost node's pods hold nothing, unless it comes back before this is written.
      guards.push({ key: `${KEYS.nodes}${node}`, created: '0' })
    }
    if (await store.cluster.commit(guards, [withEntry(a, store.node, localEntry(store.dataDir, name, a.nodes[store.node]?.running ?? [], pod))])) return
    if (tries === 10) throw new Conflict(`volume claim ${name}`)
    await sleep(backoffMs(tries, { minMs: 50, maxMs: 500 }))
  }
}
