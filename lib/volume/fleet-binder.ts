/**
 * Binding, provisioning and reclaiming through the fleet's store (CONTRACT
 * §11): lib/volume/binder.ts's steps, each decision one etcd transaction.
 *
 * Exactly once across nodes. A claim's work runs under its fleet lock
 * (fleet-store.ts), so one worker in the fleet calls its provisioner at a
 * time; before the call the claim records the volume's name
 * ("provisioning"), so a worker that died is followed by one that asks
 * for the same volume again; and the volume's record and the claim's bind
 * are written by one transaction that requires the volume not to exist
 * yet, the claim unchanged and the lock still held. A released volume is
 * deleted under its own fleet lock, its record removed by a transaction
 * that requires it unchanged.
 *
 * Pods stay local: a node whose pod uses a bound claim keeps a copy of the
 * claim and of its volume in its data dir (marked `fleet`), which the rest
 * of podctl mounts as it mounts any other; a copy whose volume the fleet
 * deleted is removed by the node's controller (sweepFleetCopies).
 */
import { PodctlError, isPodctlError } from '../errors.js'
import { LockBusyError } from '../lock/lock.js'
import type { PodManifest } from '../pod/manifest.js'
import { isoTime } from '../pod/record.js'
import { sleep } from '../poll.js'
import { accessModeOf } from './access-modes.js'
import { backoffMs, createManifestClaims, DEFAULT_FAILED_THRESHOLD, ensureClaimsBound, podsUsingClaim, provisionerFor, type BinderOptions, type EnsureBoundOptions, type SyncResult } from './binder.js'
import { parseBytes } from '../bytes.js'
import { CLAIM, findClaim, saveClaim, withClaimLock, type VolumeClaim } from './claims.js'
import type { Guard, Write } from '../cluster/client.js'
import { FleetConflict, openFleet, type FleetStore, type FleetVolume, type Stored } from './fleet-store.js'
import { removeObject, withEvent } from './objects.js'
import { createVolume, listVolumes, removeFleetCopy, volumeExists, type ReclaimOutcome } from './persistent.js'
import { pvView } from './pv-view.js'
import { CallStopped, IgnoredError, tooSmall, type ProvisionRequest } from './provisioner.js'
import type { VolumeClass } from './classes.js'

const MIN_BACKOFF_MS = 1000

/** The claim bound to volume `v`. */
const boundTo = (c: VolumeClaim, v: FleetVolume): VolumeClaim => ({
  ...c,
  phase: 'bound',
  volume: v.name,
  bound_at: isoTime(),
  provisioned_by: v.provisioned?.by ?? null,
  provisioning: null,
  failures: 0,
  retry_at: null,
})

/** The volume provisioned for claim `c`, if there is one yet. */
const ownVolume = async (store: FleetStore, c: VolumeClaim): Promise<Stored<FleetVolume> | undefined> => {
  const v = await store.findVolume(c.provisioning?.volume ?? `pvc-${c.uid}`)
  return v?.value.claim_ref?.uid === c.uid ? v : undefined
}

/**
 * One step toward binding the fleet's claim `name` (syncClaim's steps):
 * LockBusyError when another worker of the fleet is on it.
 */
export const syncFleetClaim = (store: FleetStore, dataDir: string, name: string, opts: BinderOptions = {}): Promise<SyncResult> =>
  store.withLock('claim', name, async (lock): Promise<SyncResult> => {
    let s = await store.readClaim(name)
    const save = async (next: VolumeClaim, event?: Parameters<FleetStore['saveClaim']>[3]): Promise<VolumeClaim> => {
      s = await store.saveClaim(next, s.rev, lock, event)
      return s.value
    }
    const c = s.value
    if (c.phase === 'bound') {
      if (c.volume !== null && !(await store.findVolume(c.volume))) {
        return { claim: await save({ ...c, phase: 'lost' }, { type: 'Warning', reason: 'ProvisioningFailed', message: `volume ${c.volume} disappeared` }), outcome: 'bound' }
      }
      return { claim: c, outcome: 'bound' }
    }
    if (c.phase === 'lost') return { claim: c, outcome: 'bound' }
    // Read together: both are needed for a claim still pending, the common case.
    const [mine, cls] = await Promise.all([ownVolume(store, c), c.class === null ? undefined : store.findClass(c.class)])
    if (mine) return { claim: await save(boundTo(c, mine.value), { type: 'Normal', reason: 'ProvisioningSucceeded', message: `bound to volume ${mine.value.name}` }), outcome: 'provisioned' }
    if (c.class === null) return { claim: c, outcome: 'no-class' }
    const threshold = opts.failedProvisionThreshold ?? DEFAULT_FAILED_THRESHOLD
    if (threshold > 0 && c.failures >= threshold) return { claim: c, outcome: 'given-up' }
    if (c.retry_at !== null && Date.parse(c.retry_at) > Date.now()) return { claim: c, outcome: 'waiting' }
    return provision(store, dataDir, s, cls, lock, opts)
  })

const provision = async (store: FleetStore, dataDir: string, claim: Stored<VolumeClaim>, cls: Stored<VolumeClass> | undefined, lock: Guard, opts: BinderOptions): Promise<SyncResult> => {
  let s = claim
  const save = async (next: VolumeClaim, event: Parameters<FleetStore['saveClaim']>[3]): Promise<VolumeClaim> => {
    s = await store.saveClaim(next, s.rev, lock, event)
    return s.value
  }
  const identity = opts.identity ?? store.identity
  const started = performance.now()
  const failed = async (error: PodctlError): Promise<SyncResult> => {
    const c = s.value
    const failures = c.failures + 1
    const threshold = opts.failedProvisionThreshold ?? DEFAULT_FAILED_THRESHOLD
    const givenUp = threshold > 0 && failures >= threshold
    const next = { ...c, failures, retry_at: givenUp ? null : new Date(Date.now() + backoffMs(failures, opts.exponentialBackoff ?? true)).toISOString() }
    const saved = await save(next, { type: 'Warning', reason: 'ProvisioningFailed', message: `${givenUp ? `gave up after ${failures} failures: ` : ''}${error.message}` })
    return { claim: saved, outcome: 'failed', error, provisionMs: performance.now() - started }
  }
  if (!cls) return failed(new PodctlError('EFAILED', `volume class ${s.value.class} does not exist in the fleet`))
  const pinned = cls.value.provisioner === 'local' ? cls.value.parameters.node : undefined
  if (cls.value.provisioner === 'local' && pinned === undefined) {
    return failed(new PodctlError('EFAILED', `class ${cls.value.name} uses the local provisioner without --param node=NAME: its volumes would be on no node in particular`))
  }
  const provisioner = provisionerFor(opts, { node: store.node })(cls.value)
  const volumeName = s.value.provisioning?.volume ?? `pvc-${s.value.uid}`
  const req: ProvisionRequest = { volumeName, claim: { name: s.value.name, size_bytes: s.value.size_bytes, access_mode: s.value.access_mode }, class: cls.value, dataDir }
  if (provisioner.shouldProvision && !provisioner.shouldProvision(req)) return { claim: s.value, outcome: 'waiting' }
  if (s.value.provisioning === null) {
    await save({ ...s.value, provisioning: { volume: volumeName, started_at: isoTime() } }, {
      type: 'Normal',
      reason: 'Provisioning',
      message: `provisioner ${cls.value.provisioner} is provisioning volume ${volumeName} for claim ${s.value.name} (${identity})`,
    })
  }
  const ctx = { signal: opts.signal }
  let result
  try {
    result = await provisioner.provision(req, ctx)
    const small = result.state === 'Finished' ? await tooSmall(provisioner, req, result.volume, ctx) : undefined
    if (small) throw small
  } catch (er) {
    if (er instanceof CallStopped) return { claim: s.value, outcome: 'waiting' } // left "provisioning", as a crash leaves it
    return failed(isPodctlError(er) ? er : new PodctlError('EFAILED', (er as Error).message, undefined, { cause: er }))
  }
  const provisionMs = performance.now() - started
  if (result.state !== 'Finished') {
    const c = await save({ ...s.value, retry_at: new Date(Date.now() + MIN_BACKOFF_MS).toISOString() }, { type: 'Normal', reason: 'ExternalProvisioning', message: result.message })
    return { claim: c, outcome: 'waiting', provisionMs }
  }
  const c = s.value
  const v: FleetVolume = {
    version: 1,
    name: volumeName,
    created_at: isoTime(),
    reclaim: cls.value.reclaim,
    access_mode: c.access_mode,
    size_limit_bytes: result.volume.path === undefined ? result.volume.capacityBytes : null,
    phase: 'available',
    recycled_at: null,
    claim_ref: { name: c.name, uid: c.uid },
    provisioned: {
      class: cls.value.name,
      provisioner: cls.value.provisioner,
      parameters: cls.value.parameters,
      path: result.volume.path ?? null,
      capacity_bytes: result.volume.capacityBytes,
      by: identity,
      node: pinned ?? null,
    },
  }
  const event = { type: 'Normal' as const, reason: 'ProvisioningSucceeded' as const, message: `successfully provisioned volume ${volumeName}` }
  const bound = boundTo(c, v)
  const withEv = { ...bound, events: withEvent(bound.events, event.type, event.reason, event.message) }
  // The volume and the bind in one transaction: both or neither, and only if nobody made the volume or changed the claim.
  const wrote = await store.cluster.commit(
    [{ key: `claims/${c.name}`, mod: s.rev }, lock, { key: `volumes/${volumeName}`, created: '0' }],
    [{ put: `volumes/${volumeName}`, value: JSON.stringify(v) }, { put: `claims/${c.name}`, value: JSON.stringify(withEv) }, store.releaseWrite(lock)],
  )
  if (wrote) store.released(lock)
  else {
    // A volume made by an earlier try whose bind did not happen: bind it now.
    const existing = await ownVolume(store, c)
    if (!existing) throw new FleetConflict(`volume claim ${c.name}`)
    return { claim: await save(boundTo(c, existing.value), event), outcome: 'provisioned', provisionMs }
  }
  return { claim: withEv, outcome: 'provisioned', provisionMs }
}

/**
 * `volume claim rm --cluster`: removes the claim (EBADSTATE while a pod
 * of this node uses it) and releases its volume in one transaction; with
 * `reclaim` (no controller leads), applies its reclaim policy now.
 */
export const removeFleetClaim = async (store: FleetStore, dataDir: string, name: string, opts: BinderOptions & { reclaim: boolean }): Promise<{ volume: string | null; reclaim?: ReclaimOutcome }> => {
  const volume = await store.withLock('claim', name, async (lock) => {
    const s = await store.readClaim(name)
    const pods = podsUsingClaim(dataDir, name)
    if (pods.length > 0) {
      throw new PodctlError('EBADSTATE', `volume claim ${name} is used by pods of this node: ${pods.slice(0, 3).join(', ')}`, `remove them first: podctl rm ${pods.slice(0, 3).map((u) => u.slice(0, 8)).join(' ')}`)
    }
    const v = await ownVolume(store, s.value)
    const guards: Guard[] = [{ key: `claims/${name}`, mod: s.rev }, lock]
    const writes: Write[] = [{ delete: `claims/${name}` }]
    if (v) {
      guards.push({ key: `volumes/${v.value.name}`, mod: v.rev })
      writes.push({ put: `volumes/${v.value.name}`, value: JSON.stringify({ ...v.value, phase: 'released' }) })
    }
    if (!(await store.cluster.commit(guards, writes))) throw new FleetConflict(`volume claim ${name}`)
    return v?.value.name ?? null
  })
  if (!opts.reclaim || volume === null) return { volume }
  try {
    return { volume, reclaim: await reclaimFleetVolume(store, dataDir, volume, opts) }
  } catch (er) {
    throw new PodctlError('EFAILED', `volume claim ${name} is removed, but deleting its volume ${volume} failed: ${(er as Error).message}`, 'the volume stays released: a controller of the fleet tries the delete again', { cause: er })
  }
}

/**
 * Applies a released fleet volume's reclaim policy, once, under its
 * lock: `retain` leaves it released (the storage stays, as a Kubernetes
 * PersistentVolume stays Released); `delete` asks its provisioner to
 * delete the storage, then removes the record. A local volume's data is
 * removed by its node (sweepFleetCopies).
 */
export const reclaimFleetVolume = (store: FleetStore, dataDir: string, name: string, opts: BinderOptions = {}): Promise<ReclaimOutcome> =>
  store.withLock('volume', name, async (lock): Promise<ReclaimOutcome> => {
    const s = await store.findVolume(name)
    if (!s || s.value.phase !== 'released') return 'not-released'
    if (s.value.reclaim !== 'delete') return 'retained'
    const p = s.value.provisioned
    if (p && p.provisioner !== 'local') {
      // The program is the one this node maps the recorded name to: etcd names a provisioner, never a program.
      const provisioner = provisionerFor(opts, { node: store.node })({ name: p.class, provisioner: p.provisioner, parameters: p.parameters, version: 1, reclaim: 'delete', default: false, created_at: '' })
      const v = { ...pvView(dataDir, s.value), capacity_bytes: p.capacity_bytes, class: p.class, parameters: p.parameters, claim: s.value.claim_ref?.name ?? '' }
      if (provisioner.shouldDelete && !provisioner.shouldDelete(v)) return 'ignored'
      try {
        await provisioner.delete(v, { signal: opts.signal })
      } catch (er) {
        if (er instanceof IgnoredError || er instanceof CallStopped) return 'ignored'
        throw er
      }
    }
    if (!(await store.cluster.commit([{ key: `volumes/${name}`, mod: s.rev }, lock], [{ delete: `volumes/${name}` }]))) throw new FleetConflict(`volume ${name}`)
    return 'deleted'
  })

/** The released volumes of the fleet, whose reclaim policy is still to be applied. */
export const releasedFleetVolumes = async (store: FleetStore): Promise<string[]> =>
  (await store.listVolumes()).filter((v) => v.phase === 'released' && v.reclaim === 'delete').map((v) => v.name)

/** Makes the fleet's claims a manifest asks for with "class" or "size" (existing ones asking the same are fine). */
export const createFleetManifestClaims = async (store: FleetStore, m: PodManifest): Promise<void> => {
  for (const v of m.volumes ?? []) {
    if (v.kind !== 'persistent' || (v.class === undefined && v.size === undefined)) continue
    await store.createClaim(v.claim, {
      ...(v.class !== undefined ? { class: v.class } : {}),
      ...(v.size !== undefined ? { sizeBytes: parseBytes(v.size) } : {}),
      ...(v.accessMode ? { accessMode: accessModeOf(v.accessMode) } : {}),
      existingOk: true,
    })
  }
}

/**
 * Before a pod of this node runs: every fleet claim its manifest names is
 * bound (inline through the same transactions when no controller leads,
 * else by the leader) and copied into this node's data dir. A name that
 * is no claim of the fleet is left to the data dir (a local volume).
 */
export const ensureFleetClaimsBound = async (store: FleetStore, dataDir: string, m: PodManifest, opts: EnsureBoundOptions = {}): Promise<void> => {
  const deadline = Date.now() + (opts.timeoutMs ?? 5 * 60_000)
  for (const v of m.volumes ?? []) {
    if (v.kind !== 'persistent') continue
    for (;;) {
      const s = await store.findClaim(v.claim)
      if (s === undefined) break
      const c = s.value
      if (c.phase === 'bound') {
        await copyToNode(store, dataDir, c)
        break
      }
      if (c.phase === 'lost') throw new PodctlError('EBADSTATE', `volume claim ${c.name} lost its volume ${c.volume}`, `remove the claim and make it again: podctl volume claim rm --cluster ${c.name}`)
      const live = await store.leaderLive()
      let waitingFor = live ? `waiting for the fleet's controller to bind claim ${c.name}` : `waiting for the provisioner of claim ${c.name}`
      if (!live) {
        try {
          const r = await syncFleetClaim(store, dataDir, c.name, opts)
          if (r.claim.phase === 'bound') continue
          if (r.outcome === 'failed') throw new PodctlError('EFAILED', `cannot provision a volume for claim ${c.name}: ${r.error!.message}`, `see podctl volume claim inspect --cluster ${c.name}`)
          if (r.outcome === 'no-class') throw new PodctlError('EBADSTATE', `volume claim ${c.name} names no class`, 'give the claim a class: a fleet binds claims to provisioned volumes only')
          if (r.outcome === 'given-up') throw new PodctlError('EFAILED', `provisioning for claim ${c.name} failed ${r.claim.failures} times and was given up`, `see podctl volume claim inspect --cluster ${c.name}`)
        } catch (er) {
          if (!(er instanceof FleetConflict) && !(er instanceof LockBusyError)) throw er
          waitingFor = `waiting for another node provisioning claim ${c.name}`
        }
      }
      if (Date.now() >= deadline) throw new PodctlError('ETIMEOUT', `volume claim ${c.name} is still pending${live ? " (the fleet's controller is working on it)" : ''}`, `see podctl volume claim inspect --cluster ${c.name}`)
      opts.onWait?.(waitingFor)
      await sleep(Math.min(250, Math.max(1, deadline - Date.now())))
    }
  }
}

/**
 * Copies a bound fleet claim and its volume into this node's data dir,
 * where the pod's volumes are set up from. EBADSTATE (exit 4) for a
 * local volume pinned to another node.
 */
const copyToNode = async (store: FleetStore, dataDir: string, c: VolumeClaim): Promise<void> => {
  const s = c.volume === null ? undefined : await store.findVolume(c.volume)
  if (!s) throw new PodctlError('EBADSTATE', `volume claim ${c.name} lost its volume ${c.volume}`, `remove the claim and make it again: podctl volume claim rm --cluster ${c.name}`)
  const v = s.value
  const node = v.provisioned?.node
  if (node && node !== store.node) {
    throw new PodctlError('EBADSTATE', `volume claim ${c.name} is bound to volume ${v.name}, a local volume of node ${node}; this is node ${store.node}`, `run the pod on node ${node}`)
  }
  if (!volumeExists(dataDir, v.name)) {
    try {
      createVolume(dataDir, v.name, {
        reclaim: 'retain', // the fleet's policy applies, in the fleet
        accessMode: v.access_mode,
        sizeLimitBytes: v.size_limit_bytes,
        ...(v.claim_ref ? { claimRef: v.claim_ref } : {}),
        ...(v.provisioned ? { provisioned: { ...v.provisioned, fleet: true } } : {}),
      })
    } catch (er) {
      if (!(isPodctlError(er) && er.code === 'EBADSTATE' && volumeExists(dataDir, v.name))) throw er // made meanwhile by another pod of this node
    }
  }
  withClaimLock(dataDir, c.name, () => {
    const old = findClaim(dataDir, c.name)
    if (old && !old.fleet) throw new PodctlError('EBADSTATE', `this node's data dir has a volume claim ${c.name} of its own: the fleet's claim of that name cannot be used here`, `remove or rename the local claim: podctl volume claim rm ${c.name}`)
    if (old?.uid !== c.uid || old.volume !== c.volume) saveClaim(dataDir, { ...c, fleet: true, events: [] })
  })
}

/**
 * This node's copies of fleet volumes the fleet has deleted, removed
 * (with their claim copies) unless a running pod holds them: what a
 * node's controller does at each resync. How many it removed.
 */
export const sweepFleetCopies = async (store: FleetStore, dataDir: string): Promise<number> => {
  let removed = 0
  for (const v of listVolumes(dataDir)) {
    if (!v.provisioned?.fleet || (await store.findVolume(v.name))) continue
    if (!removeFleetCopy(dataDir, v.name)) continue
    removed++
    const ref = v.claim_ref
    if (ref) {
      withClaimLock(dataDir, ref.name, () => {
        const c = findClaim(dataDir, ref.name)
        if (c?.fleet && c.uid === ref.uid) removeObject(dataDir, CLAIM, ref.name)
      })
    }
  }
  return removed
}

/**
 * Runs `fn` with the fleet's store when the command names a fleet
 * (`opts.fleet`) and the manifest has persistent volumes, connected for
 * that long; with undefined otherwise (nothing touches the network).
 */
export const withPodFleet = async <T>(m: PodManifest, opts: EnsureBoundOptions | undefined, fn: (fleet: FleetStore | undefined) => Promise<T>): Promise<T> => {
  const fleet = opts?.fleet && (m.volumes ?? []).some((v) => v.kind === 'persistent') ? await openFleet(opts.fleet) : undefined
  try {
    return await fn(fleet)
  } finally {
    fleet?.close()
  }
}

/** The manifest's claims the fleet has, or that the manifest makes there (class, size): the data dir need not have them. */
export const fleetClaimsOf = async (fleet: FleetStore, m: PodManifest): Promise<Set<string>> => {
  const out = new Set<string>()
  for (const v of m.volumes ?? []) {
    if (v.kind !== 'persistent') continue
    if (v.class !== undefined || v.size !== undefined || (await fleet.findClaim(v.claim))) out.add(v.claim)
  }
  return out
}

/** Makes the claims a manifest asks for, in the fleet or the data dir. */
export const createPodClaims = async (dataDir: string, m: PodManifest, fleet: FleetStore | undefined): Promise<void> => {
  if (fleet) await createFleetManifestClaims(fleet, m)
  else createManifestClaims(dataDir, m)
}

/** Before a pod runs: its fleet claims bound and copied here, then the data dir's bound. */
export const bindPodClaims = async (dataDir: string, m: PodManifest, opts: EnsureBoundOptions, fleet: FleetStore | undefined): Promise<void> => {
  if (fleet) await ensureFleetClaimsBound(fleet, dataDir, m, opts)
  await ensureClaimsBound(dataDir, m, opts)
}
