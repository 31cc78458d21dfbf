/**
 * Binding claims to volumes and reclaiming released volumes: the work of
 * seed 004's ProvisionController, in one place for the controller and for
 * the commands that do it inline when no controller runs (CONTRACT §8).
 *
 * Exactly once. A claim changes only under its lock, a volume only under
 * its own. Before its provisioner is called, the claim records the name of
 * the volume it will get ("provisioning"), so a provision cut short by a
 * crash is called again with the same name; the volume's record names its
 * claim (claim_ref) before the claim names the volume, so a crash between
 * the two is finished by the next sync, which looks for a volume naming
 * the claim first. A released volume is deleted under its lock, once.
 */
import os from 'node:os'
import { PodctlError, isPodctlError } from '../errors.js'
import type { PodManifest } from '../pod/manifest.js'
import { isoTime } from '../pod/record.js'
import { Include, listPods } from '../pod/walk.js'
import { sleep } from '../poll.js'
import { parseBytes } from '../bytes.js'
import { readClass, type VolumeClass } from './classes.js'
import { CLAIM, createClaim, findClaim, readClaim, saveClaim, withClaimLock, type VolumeClaim } from './claims.js'
import { controllerLive } from './lease.js'
import { removeObject } from './objects.js'
import { bindStaticVolume, createVolume, isProvisionedName, listVolumes, markReleased, readVolume, reclaimReleased, volumeExists, type PvRecord, type ReclaimOutcome } from './persistent.js'
import { pvView } from './pv-view.js'
import { CallStopped, IgnoredError, provisionerOf, tooSmall, type ProvisionRequest, type Provisioner } from './provisioner.js'
import { accessModeOf } from './access-modes.js'
import type { FleetRef } from './fleet-store.js'

export interface BinderOptions {
  /** Who does the work: `<hostname>/<pid>` by default; recorded as provisioned_by. */
  identity?: string
  /** The provisioner of a class (provisionerOf by default; tests and the library may give their own). */
  provisionerFor?: (cls: VolumeClass) => Provisioner
  /** Where this node's exec provisioners are (--provisioners-dir; default /etc/podctl/provisioners). */
  provisionersDir?: string | undefined
  /** Aborted: a provisioner's call in progress is killed (a controller that stops). */
  signal?: AbortSignal | undefined
  /** Retry delays double from 1s to 5m after each failure (the seed's exponential backoff); off: 1s. */
  exponentialBackoff?: boolean
  /** After this many failures of one claim, no more tries until it changes (0: for ever). */
  failedProvisionThreshold?: number
  /** How long to wait for a claim's lock (default 30s); 0: LockBusyError at once (a controller requeues instead of blocking its workers). */
  lockWaitMs?: number
}

export const defaultIdentity = (): string => `${os.hostname()}/${process.pid}`

/** How the binder finds a class's provisioner: the options' own, or the class's through this node's provisioners directory. */
export const provisionerFor =
  (opts: BinderOptions, fleet?: { node: string }) =>
  (cls: VolumeClass): Provisioner =>
    opts.provisionerFor ? opts.provisionerFor(cls) : provisionerOf(cls, { provisionersDir: opts.provisionersDir, fleet: fleet !== undefined, node: fleet?.node })

const MIN_BACKOFF_MS = 1000
const MAX_BACKOFF_MS = 5 * 60_000
export const DEFAULT_FAILED_THRESHOLD = 15

/** The delay before the next try after `failures` failures. */
export const backoffMs = (failures: number, exponential = true): number =>
  exponential ? Math.min(MAX_BACKOFF_MS, MIN_BACKOFF_MS * 2 ** Math.max(0, failures - 1)) : MIN_BACKOFF_MS

/** Whether a static volume fits a claim: its access mode, and room for the size asked. */
const fits = (c: VolumeClaim) => (v: PvRecord) =>
  (c.access_mode === v.access_mode || v.access_mode === 'ReadWriteMany') &&
  (c.size_bytes === null || v.size_limit_bytes === null || v.size_limit_bytes >= c.size_bytes) &&
  (c.class === null || v.provisioned?.class === undefined || v.provisioned.class === c.class)

const bound = (dataDir: string, c: VolumeClaim, v: PvRecord, message: string): VolumeClaim =>
  saveClaim(
    dataDir,
    { ...c, phase: 'bound', volume: v.name, bound_at: isoTime(), provisioned_by: v.provisioned?.by ?? null, provisioning: null, failures: 0, retry_at: null },
    { type: 'Normal', reason: 'ProvisioningSucceeded', message },
  )

/** What syncClaim did, for metrics and messages. */
export interface SyncResult {
  claim: VolumeClaim
  /** provisioned: a provisioner made its volume; bound: an existing one; waiting: in the background or backing off; failed: this try failed. */
  outcome: 'bound' | 'provisioned' | 'waiting' | 'failed' | 'no-class' | 'given-up'
  error?: PodctlError
  /** How long the provisioner took, for the histogram. */
  provisionMs?: number
}

/**
 * One step toward binding claim `name`, under its lock: bound already, or
 * bound to a volume that names it, or to a fitting static volume, or
 * provisioned through its class. Failures are recorded on the claim
 * (events, failures, retry_at), not thrown, unless the claim is gone.
 */
export const syncClaim = (dataDir: string, name: string, opts: BinderOptions = {}): Promise<SyncResult> =>
  withClaimLock(dataDir, name, async (): Promise<SyncResult> => {
    let c = readClaim(dataDir, name)
    if (c.phase === 'bound') {
      if (c.volume !== null && !volumeExists(dataDir, c.volume)) {
        c = saveClaim(dataDir, { ...c, phase: 'lost' }, { type: 'Warning', reason: 'ProvisioningFailed', message: `volume ${c.volume} disappeared` })
      }
      return { claim: c, outcome: 'bound' }
    }
    if (c.phase === 'lost') return { claim: c, outcome: 'bound' }
    const statics = staticVolumes(dataDir)
    const mine = ownVolume(dataDir, c, statics)
    if (mine) return { claim: bound(dataDir, c, mine, `bound to volume ${mine.name}`), outcome: mine.provisioned ? 'provisioned' : 'bound' }
    if (c.provisioning === null) {
      for (const v of statics) {
        if (!v.provisioned && bindStaticVolume(dataDir, v.name, { name: c.name, uid: c.uid }, fits(c))) {
          return { claim: bound(dataDir, c, v, `bound to available volume ${v.name}`), outcome: 'bound' }
        }
      }
    }
    if (c.class === null) return { claim: c, outcome: 'no-class' }
    const threshold = opts.failedProvisionThreshold ?? DEFAULT_FAILED_THRESHOLD
    if (threshold > 0 && c.failures >= threshold) return { claim: c, outcome: 'given-up' }
    if (c.retry_at !== null && Date.parse(c.retry_at) > Date.now()) return { claim: c, outcome: 'waiting' }
    return provision(dataDir, c, opts)
  }, opts.lockWaitMs)

const staticVolumes = (dataDir: string): PvRecord[] => listVolumes(dataDir, (n) => !isProvisionedName(n))

/** The volume that names claim `c`: the one provisioned for it (found by name), or a static one (bound, or left naming it by a crash). */
const ownVolume = (dataDir: string, c: VolumeClaim, statics = staticVolumes(dataDir)): PvRecord | undefined =>
  provisionedFor(dataDir, c) ?? statics.find((v) => v.claim_ref?.uid === c.uid)

/** The volume provisioned for claim `c`, if there is one yet: its name is the claim's uid. */
const provisionedFor = (dataDir: string, c: VolumeClaim): PvRecord | undefined => {
  try {
    const v = readVolume(dataDir, c.provisioning?.volume ?? `pvc-${c.uid}`)
    return v.claim_ref?.uid === c.uid ? v : undefined
  } catch {
    return undefined // none yet, or half-made or damaged: provisioning makes it again or says why
  }
}

const provision = async (dataDir: string, claim: VolumeClaim, opts: BinderOptions): Promise<SyncResult> => {
  let c = claim
  const identity = opts.identity ?? defaultIdentity()
  const cls = readClass(dataDir, c.class!)
  const provisioner = provisionerFor(opts)(cls)
  const volumeName = c.provisioning?.volume ?? `pvc-${c.uid}`
  const req: ProvisionRequest = { volumeName, claim: { name: c.name, size_bytes: c.size_bytes, access_mode: c.access_mode }, class: cls, dataDir }
  if (provisioner.shouldProvision && !provisioner.shouldProvision(req)) return { claim: c, outcome: 'waiting' }
  if (c.provisioning === null) {
    c = saveClaim(dataDir, { ...c, provisioning: { volume: volumeName, started_at: isoTime() } }, {
      type: 'Normal',
      reason: 'Provisioning',
      message: `provisioner ${cls.provisioner} is provisioning volume ${volumeName} for claim ${c.name} (${identity})`,
    })
  }
  const started = performance.now()
  const ctx = { signal: opts.signal }
  let result
  try {
    result = await provisioner.provision(req, ctx)
    const small = result.state === 'Finished' ? await tooSmall(provisioner, req, result.volume, ctx) : undefined
    if (small) throw small
  } catch (er) {
    if (er instanceof CallStopped) return { claim: c, outcome: 'waiting' } // left "provisioning", as a crash leaves it
    const error = isPodctlError(er) ? er : new PodctlError('EFAILED', (er as Error).message, undefined, { cause: er })
    const failures = c.failures + 1
    const threshold = opts.failedProvisionThreshold ?? DEFAULT_FAILED_THRESHOLD
    const givenUp = threshold > 0 && failures >= threshold
    c = saveClaim(
      dataDir,
      { ...c, failures, retry_at: givenUp ? null : new Date(Date.now() + backoffMs(failures, opts.exponentialBackoff ?? true)).toISOString() },
      { type: 'Warning', reason: 'ProvisioningFailed', message: `${givenUp ? `gave up after ${failures} failures: ` : ''}${error.message}` },
    )
    return { claim: c, outcome: 'failed', error, provisionMs: performance.now() - started }
  }
  const provisionMs = performance.now() - started
  if (result.state !== 'Finished') {
    c = saveClaim(dataDir, { ...c, retry_at: new Date(Date.now() + MIN_BACKOFF_MS).toISOString() }, { type: 'Normal', reason: 'ExternalProvisioning', message: result.message })
    return { claim: c, outcome: 'waiting', provisionMs }
  }
  let v: PvRecord
  try {
    v = createVolume(dataDir, volumeName, {
      reclaim: cls.reclaim,
      accessMode: c.access_mode,
      sizeLimitBytes: result.volume.path === undefined ? result.volume.capacityBytes : null,
      claimRef: { name: c.name, uid: c.uid },
      provisioned: {
        class: cls.name,
        provisioner: cls.provisioner,
        parameters: cls.parameters,
        path: result.volume.path ?? null,
        capacity_bytes: result.volume.capacityBytes,
        by: identity,
      },
    })
  } catch (er) {
    // Made by an earlier try that died before the claim said so.
    const existing = provisionedFor(dataDir, c)
    if (!existing) throw er
    v = existing
  }
  return { claim: bound(dataDir, c, v, `successfully provisioned volume ${volumeName}`), outcome: 'provisioned', provisionMs }
}

/** The pods (any state, until removed) whose manifest names claim `name`. */
export const podsUsingClaim = (dataDir: string, name: string): string[] =>
  listPods(dataDir, Include.all).flatMap((p) => {
    try {
      const m = p.podManifest().manifest
      return (m.volumes ?? []).some((v) => v.kind === 'persistent' && v.claim === name) ? [p.uuid] : []
    } catch {
      return []
    } finally {
      p.close()
    }
  })

export interface ReleaseResult {
  claim: VolumeClaim
  /** The volume it was bound to, released now, and what its reclaim policy did (undefined when a controller will). */
  volume: string | null
  reclaim?: ReclaimOutcome
}

/**
 * `volume claim rm`: removes the claim (EBADSTATE, exit 4, while a pod
 * that is not removed uses it) and releases its volume; with `reclaim`,
 * applies the volume's reclaim policy now (no controller runs).
 */
export const removeClaim = async (dataDir: string, name: string, opts: BinderOptions & { reclaim: boolean }): Promise<ReleaseResult> => {
  const released = withClaimLock(dataDir, name, () => {
    const c = readClaim(dataDir, name)
    const pods = podsUsingClaim(dataDir, name)
    if (pods.length > 0) {
      throw new PodctlError(
        'EBADSTATE',
        `volume claim ${name} is used by ${pods.length === 1 ? 'pod' : 'pods'} ${pods.slice(0, 3).join(', ')}${pods.length > 3 ? ', …' : ''}`,
        `remove ${pods.length === 1 ? 'that pod' : 'those pods'} first: podctl rm ${pods.slice(0, 3).map((u) => u.slice(0, 8)).join(' ')}`,
      )
    }
    // The volume first: a crash after it leaves a claim that syncs to "lost" and can be removed again.
    const volume = ownVolume(dataDir, c)
    if (volume) markReleased(dataDir, volume.name, c.uid)
    removeObject(dataDir, CLAIM, name)
    return { claim: c, volume: volume?.name ?? null }
  }, opts.lockWaitMs)
  if (!opts.reclaim || released.volume === null) return released
  try {
    return { ...released, reclaim: await reclaimVolume(dataDir, released.volume, opts) }
  } catch (er) {
    throw new PodctlError(
      'EFAILED',
      `volume claim ${name} is removed, but deleting its volume ${released.volume} failed: ${(er as Error).message}`,
      `the volume stays released: podctl controller --once (or a running controller) tries the delete again`,
      { cause: er },
    )
  }
}

/** Applies the reclaim policy of a released volume (see reclaimReleased), its provisioner deleting its storage. */
export const reclaimVolume = (dataDir: string, name: string, opts: BinderOptions = {}): Promise<ReclaimOutcome> =>
  reclaimReleased(dataDir, name, async (rec) => {
    const p = rec.provisioned
    if (!p) return true // a static volume: its data goes with it
    const provisioner = provisionerFor(opts)({ name: p.class, provisioner: p.provisioner, parameters: p.parameters } as VolumeClass)
    const v = { ...pvView(dataDir, rec), capacity_bytes: p.capacity_bytes, class: p.class, parameters: p.parameters, claim: rec.claim_ref?.name ?? '' }
    if (provisioner.shouldDelete && !provisioner.shouldDelete(v)) return false
    try {
      await provisioner.delete(v, { signal: opts.signal })
    } catch (er) {
      // Stopped: left released, with no failure recorded, for whoever reclaims it next.
      if (er instanceof IgnoredError || er instanceof CallStopped) return false
      throw er
    }
    return true
  }, opts.lockWaitMs !== 0)

/** Released volumes whose reclaim policy is still to be applied (a crash, a failed delete, or a controller's work). */
export const releasedVolumes = (dataDir: string): string[] => listVolumes(dataDir).filter((v) => v.phase === 'released').map((v) => v.name)

/** Makes the claims a manifest asks for with "class" or "size" (existing ones asking the same are fine). */
export const createManifestClaims = (dataDir: string, m: PodManifest): void => {
  for (const v of m.volumes ?? []) {
    if (v.kind !== 'persistent' || (v.class === undefined && v.size === undefined)) continue
    createClaim(dataDir, v.claim, {
      ...(v.class !== undefined ? { class: v.class } : {}),
      ...(v.size !== undefined ? { sizeBytes: parseBytes(v.size) } : {}),
      ...(v.accessMode ? { accessMode: accessModeOf(v.accessMode) } : {}),
      existingOk: true,
    })
  }
}

export interface EnsureBoundOptions extends BinderOptions {
  /** How long to wait for a live controller or a provision in the background (default 5m). */
  timeoutMs?: number
  /** Called while waiting, with what is waited for. */
  onWait?: (what: string) => void
  /** With --cluster: the claims a manifest names are the fleet's (lib/volume/fleet-binder.ts). */
  fleet?: FleetRef
}

/**
 * Before a pod runs: every claim object its manifest names is bound.
 * Without a live controller, this process provisions them (inline); with
 * one, it waits for the controller to (ETIMEOUT after `timeoutMs`).
 */
export const ensureClaimsBound = async (dataDir: string, m: PodManifest, opts: EnsureBoundOptions = {}): Promise<void> => {
  const deadline = Date.now() + (opts.timeoutMs ?? 5 * 60_000)
  for (const v of m.volumes ?? []) {
    if (v.kind !== 'persistent') continue
    for (;;) {
      const c = findClaim(dataDir, v.claim)
      if (c === undefined || c.phase === 'bound') break
      if (c.phase === 'lost') throw new PodctlError('EBADSTATE', `volume claim ${c.name} lost its volume ${c.volume}`, `remove the claim and make it again: podctl volume claim rm ${c.name}`)
      const live = controllerLive(dataDir)
      if (!live) {
        const r = await syncClaim(dataDir, c.name, opts)
        if (r.claim.phase === 'bound') break
        if (r.outcome === 'failed') throw new PodctlError('EFAILED', `cannot provision a volume for claim ${c.name}: ${r.error!.message}`, `see podctl volume claim inspect ${c.name}`)
        if (r.outcome === 'no-class') throw new PodctlError('EBADSTATE', `volume claim ${c.name} names no class and no available volume fits it`, `create a volume (podctl volume create NAME) or give the claim a class`)
        if (r.outcome === 'given-up') throw new PodctlError('EFAILED', `provisioning for claim ${c.name} failed ${r.claim.failures} times and was given up`, `see podctl volume claim inspect ${c.name}; remove and create the claim again to retry`)
      }
      if (Date.now() >= deadline) {
        throw new PodctlError('ETIMEOUT', `volume claim ${c.name} is still pending${live ? ' (a controller is working on it)' : ''}`, `see podctl volume claim inspect ${c.name}`)
      }
      opts.onWait?.(live ? `waiting for the controller to bind claim ${c.name}` : `waiting for the provisioner of claim ${c.name}`)
      await sleep(Math.min(250, Math.max(1, deadline - Date.now())))
    }
  }
}

