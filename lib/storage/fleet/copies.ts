/**
 * A fleet's claims on the node whose pod uses them (CONTRACT §11). Pods
 * stay local: a node whose pod runs with a bound fleet claim keeps a copy
 * of the claim and of its volume in its data dir (marked `fleet`), which
 * the rest of podctl mounts as it mounts any other, and records the pod in
 * the claim's attachment (attachments.ts), where ReadWriteOnce is held
 * across nodes. The node's controller removes a copy whose volume the
 * fleet deleted (FleetStore.housekeeping).
 */
import { PodctlError, isPodctlError, shortId } from '../../errors.js'
import { KEYS } from '../../cluster/keys.js'
import type { Guard } from '../../cluster/client.js'
import { sleep } from '../../poll.js'
import { backoffMs } from '../binder.js'
import type { VolumeClaim } from '../claims.js'
import { findClaim, LocalStore } from '../local/store.js'
import { writeNewVolume, volumeExists } from '../local/volumes.js'
import { Conflict } from '../store.js'
import { newVolumeRecord } from '../volume-record.js'
import { localEntry, readAttachment, withEntry } from './attachments.js'
import type { FleetStore } from './store.js'

/**
 * Copies bound fleet claim `c` and its volume into this node's data dir,
 * where the pod's volumes are set up from. EBADSTATE (exit 4) for a local
 * volume pinned to another node, or for a local claim of the same name.
 */
export const copyToNode = async (store: FleetStore, c: VolumeClaim): Promise<void> => {
  const s = c.volume === null ? undefined : await store.findVolume(c.volume)
  if (!s) throw new PodctlError('EBADSTATE', `volume claim ${c.name} lost its volume ${c.volume}`, `remove the claim and make it again: podctl volume claim rm --cluster ${c.name}`)
  const v = s.value
  const node = v.provisioned?.node
  if (node && node !== store.node) {
    throw new PodctlError('EBADSTATE', `volume claim ${c.name} is bound to volume ${v.name}, a local volume of node ${node}; this is node ${store.node}`, `run the pod on node ${node}`)
  }
  const dataDir = store.dataDir
  if (!volumeExists(dataDir, v.name)) {
    try {
      // The fleet's policy applies, in the fleet: the copy is retained.
      writeNewVolume(dataDir, newVolumeRecord(v.name, { reclaim: 'retain', accessMode: v.access_mode, sizeLimitBytes: v.size_limit_bytes, ...(v.claim_ref ? { claimRef: v.claim_ref } : {}), ...(v.provisioned ? { provisioned: { ...v.provisioned, fleet: true } } : {}) }))
    } catch (er) {
      if (!(isPodctlError(er) && er.code === 'EBADSTATE' && volumeExists(dataDir, v.name))) throw er // made meanwhile by another pod of this node
    }
  }
  const local = new LocalStore(dataDir)
  await local.withLock('claim', c.name, undefined, async () => {
    const old = findClaim(dataDir, c.name)
    if (old && !old.fleet) throw new PodctlError('EBADSTATE', `this node's data dir has a volume claim ${c.name} of its own: the fleet's claim of that name cannot be used here`, `remove or rename the local claim: podctl volume claim rm ${c.name}`)
    if (old?.uid !== c.uid || old.volume !== c.volume) await local.saveClaim({ value: c, rev: '' }, { ...c, fleet: true, events: [] }, undefined)
  })
}

/**
 * Pod `pod` of this node is about to run with fleet claim `name`:
 * recorded in the claim's attachment, in a transaction that requires the
 * claim unchanged. EBADSTATE (exit 4) naming the node when the claim is
 * ReadWriteOnce and another node that is alive runs a pod with it.
 */
export const attach = async (store: FleetStore, name: string, pod: string): Promise<void> => {
  for (let tries = 1; tries <= 10; tries++) {
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
    await sleep(backoffMs(tries, { minMs: 50, maxMs: 500 }))
  }
  throw new Conflict(`volume claim ${name}`)
}
