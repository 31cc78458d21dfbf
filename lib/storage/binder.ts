/**
 * Binding claims and reclaiming volumes over a ClaimStore, for the
 * controller and for commands when none leads (CONTRACT §8, §11): seed
 * 004's ProvisionController. Why once: Documentation/devel/controller.md.
 */
import { parseBytes } from '../bytes.js'
import { PodctlError, isPodctlError, shortId } from '../errors.js'
import { LockBusyError } from '../lock/lock.js'
import type { PodManifest } from '../pod/manifest.js'
import { isoTime } from '../pod/record.js'
import { sleep } from '../poll.js'
import { accessModeOf } from './access-modes.js'
import { boundTo, type VolumeClaim } from './claims.js'
import type { VolumeClass } from './classes.js'
import { pvView } from './local/pv-view.js'
import type { NewEvent } from './objects.js'
import { CallStopped, IgnoredError, provisionerOf, tooSmall, type ProvisionRequest, type Provisioner } from './provisioner.js'
import { Conflict, type ClaimStore, type Held, type ReclaimOutcome, type Stored } from './store.js'
import { newVolumeRecord, provisionedName, type PvRecord } from './volume-record.js'

export interface BinderOptions {
  /** Who does the work (the store's identity by default); recorded as provisioned_by. */
  identity?: string
  /** The provisioner of a class (undefined: provisionerOf's; tests and the library may give their own). */
  provisionerFor?: (cls: VolumeClass) => Provisioner | undefined
  /** Where this node's exec provisioners are (--provisioners-dir; default /etc/podctl/provisioners). */
  provisionersDir?: string | undefined
  /** Aborted: a provisioner's call in progress is killed (a controller that stops). */
  signal?: AbortSignal | undefined
  /** Retry delays double from 1s to 5m after each failure (the seed's exponential backoff); off: 1s. */
  exponentialBackoff?: boolean
  /** After this many failures of one claim, no more tries until it changes (0: for ever). */
  failedProvisionThreshold?: number
  /** How long to wait for a claim's or volume's lock (default 30s); 0: LockBusyError at once (a controller requeues instead of blocking its workers). */
  lockWaitMs?: number
}

export const DEFAULT_FAILED_THRESHOLD = 15

/** The one retry policy of claims and volumes: after `failures` failures, a delay doubling from `minMs` up to `maxMs` (else `minMs`). */
export const backoffMs = (failures: number, { exponential = true, minMs = 1000, maxMs = 5 * 60_000 } = {}): number =>
  exponential ? Math.min(maxMs, minMs * 2 ** Math.max(0, failures - 1)) : minMs

const later = (ms: number): string => new Date(Date.now() + ms).toISOString()

/** Whether a claim (until it changes) or a released volume that failed `failures` times is given up; `threshold` 0: never. */
export const givenUp = (failures: number, threshold = DEFAULT_FAILED_THRESHOLD): boolean => threshold > 0 && failures >= threshold

/** A class's provisioner: the options' own, or the class's through this node's provisioners directory. */
const provisionerFor = (store: ClaimStore, opts: BinderOptions, cls: VolumeClass): Provisioner =>
  opts.provisionerFor?.(cls) ?? provisionerOf(cls, { provisionersDir: opts.provisionersDir, fleet: store.node !== undefined, node: store.node })

/** Whether a static volume fits a claim: its access mode, and room for the size asked. */
const fits = (c: VolumeClaim) => (v: PvRecord) =>
  (c.access_mode === v.access_mode || v.access_mode === 'ReadWriteMany') &&
  (c.size_bytes === null || v.size_limit_bytes === null || v.size_limit_bytes >= c.size_bytes) &&
  (c.class === null || v.provisioned?.class === undefined || v.provisioned.class === c.class)

const succeeded = (message: string): NewEvent => ({ type: 'Normal', reason: 'ProvisioningSucceeded', message })

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
 * One step toward binding claim `name`, under its lock: to a volume that
 * names it, a fitting static volume, or one provisioned through its class.
 * Failures are recorded on the claim, not thrown, unless the claim is gone.
 */
export const syncClaim = (store: ClaimStore, name: string, opts: BinderOptions = {}): Promise<SyncResult> =>
  store.withLock('claim', name, opts.lockWaitMs, async (held): Promise<SyncResult> => {
    let s = await store.readClaim(name)
    const save = async (next: VolumeClaim, event: NewEvent): Promise<VolumeClaim> => (s = await store.saveClaim(s, next, held, event)).value
    const c = s.value
    if (c.phase === 'bound' && c.volume !== null && !(await store.findVolume(c.volume))) {
      return { claim: await save({ ...c, phase: 'lost' }, { type: 'Warning', reason: 'ProvisioningFailed', message: `volume ${c.volume} disappeared` }), outcome: 'bound' }
    }
    if (c.phase !== 'pending') return { claim: c, outcome: 'bound' }
    const statics = await store.staticVolumes()
    // Read together: both are needed for a claim still pending, the common case.
    const [mine, cls] = await Promise.all([store.ownVolume(c, statics), c.class === null ? undefined : store.findClass(c.class)])
    if (mine) return { claim: await save(boundTo(c, mine.value), succeeded(`bound to volume ${mine.value.name}`)), outcome: mine.value.provisioned ? 'provisioned' : 'bound' }
    for (const v of c.provisioning === null ? statics : []) {
      if (!v.provisioned && (await store.bindStatic(v.name, c, fits(c)))) return { claim: await save(boundTo(c, v), succeeded(`bound to available volume ${v.name}`)), outcome: 'bound' }
    }
    if (c.class === null) return { claim: c, outcome: 'no-class' }
    if (givenUp(c.failures, opts.failedProvisionThreshold)) return { claim: c, outcome: 'given-up' }
    if (c.retry_at !== null && Date.parse(c.retry_at) > Date.now()) return { claim: c, outcome: 'waiting' }
    return provision(store, s, cls, held, opts)
  })

const provision = async (store: ClaimStore, claim: Stored<VolumeClaim>, cls: VolumeClass | undefined, held: Held, opts: BinderOptions): Promise<SyncResult> => {
  let s = claim
  const save = async (next: VolumeClaim, event: NewEvent): Promise<VolumeClaim> => (s = await store.saveClaim(s, next, held, event)).value
  const started = performance.now()
  const failed = async (error: PodctlError): Promise<SyncResult> => {
    const failures = s.value.failures + 1
    const gaveUp = givenUp(failures, opts.failedProvisionThreshold)
    const c = await save(
      { ...s.value, failures, retry_at: gaveUp ? null : later(backoffMs(failures, { exponential: opts.exponentialBackoff })) },
      { type: 'Warning', reason: 'ProvisioningFailed', message: `${gaveUp ? `gave up after ${failures} failures: ` : ''}${error.message}` },
    )
    return { claim: c, outcome: 'failed', error, provisionMs: performance.now() - started }
  }
  if (!cls) return failed(new PodctlError('EFAILED', `volume class ${s.value.class} does not exist${store.node === undefined ? '' : ' in the fleet'}`))
  const identity = opts.identity ?? store.identity
  const provisioner = provisionerFor(store, opts, cls)
  const c = s.value
  const volumeName = provisionedName(c.uid)
  const req: ProvisionRequest = { volumeName, claim: { name: c.name, size_bytes: c.size_bytes, access_mode: c.access_mode }, class: cls, dataDir: store.dataDir }
  if (provisioner.shouldProvision && !provisioner.shouldProvision(req)) return { claim: c, outcome: 'waiting' }
  if (c.provisioning === null) {
    const message = `provisioner ${cls.provisioner} is provisioning volume ${volumeName} for claim ${c.name} (${identity})`
    await save({ ...c, provisioning: { volume: volumeName, started_at: isoTime() } }, { type: 'Normal', reason: 'Provisioning', message })
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
    return { claim: await save({ ...s.value, retry_at: later(backoffMs(0)) }, { type: 'Normal', reason: 'ExternalProvisioning', message: result.message }), outcome: 'waiting', provisionMs }
  }
  const v = newVolumeRecord(volumeName, {
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
      // In a fleet, the node a local volume lives on.
      ...(store.node === undefined ? {} : { node: cls.provisioner === 'local' ? (cls.parameters.node ?? null) : null }),
    },
  })
  const event = succeeded(`successfully provisioned volume ${volumeName}`)
  const made = await store.provisioned(s, v, event, held)
  if (made) return { claim: made.value, outcome: 'provisioned', provisionMs }
  // Made by an earlier try that died before the claim said so: bound now.
  const existing = await store.ownVolume(s.value)
  if (!existing) throw new Conflict(`volume claim ${c.name}`)
  return { claim: await save(boundTo(s.value, existing.value), event), outcome: 'provisioned', provisionMs }
}

export interface ReleaseResult {
  claim: VolumeClaim
  /** The volume it was bound to, released now, and what its reclaim policy did (undefined when a controller will). */
  volume: string | null
  reclaim?: ReclaimOutcome
}

/**
 * `volume claim rm`: EBADSTATE (exit 4) while pods not removed use it;
 * releases its volume, and with `reclaim` applies its policy now.
 */
export const removeClaim = async (store: ClaimStore, name: string, opts: BinderOptions & { reclaim: boolean }): Promise<ReleaseResult> => {
  const released = await store.withLock('claim', name, opts.lockWaitMs, async (held) => {
    const s = await store.readClaim(name)
    const users = await store.podsUsing(s.value)
    if (users.length > 0) {
      const shown = users.slice(0, 3)
      const nodes = [...new Set(shown.flatMap((u) => u.node ?? []))]
      throw new PodctlError(
        'EBADSTATE',
        `volume claim ${name} is used by ${users.length === 1 ? 'pod' : 'pods'} ${shown.map((u) => `${u.pod}${u.node === undefined ? '' : ` (node ${u.node})`}`).join(', ')}${users.length > 3 ? ', …' : ''}`,
        `remove ${users.length === 1 ? 'that pod' : 'those pods'} first: podctl rm ${shown.map((u) => shortId(u.pod)).join(' ')}${nodes.length > 0 ? ` (on node ${nodes.join(', ')})` : ''}`,
      )
    }
    // The volume first: a crash after it leaves a claim that syncs to "lost" and can be removed again.
    const v = await store.ownVolume(s.value)
    await store.release(s, v, held)
    return { claim: s.value, volume: v?.value.name ?? null }
  })
  if (!opts.reclaim || released.volume === null) return released
  try {
    return { ...released, reclaim: await reclaimVolume(store, released.volume, opts) }
  } catch (er) {
    const retry = store.node === undefined ? 'podctl controller --once (or a running controller)' : 'a controller of the fleet'
    throw new PodctlError('EFAILED', `volume claim ${name} is removed, but deleting its volume ${released.volume} failed: ${(er as Error).message}`, `the volume stays released: ${retry} tries the delete again`, { cause: er })
  }
}

/**
 * Applies a released volume's reclaim policy, once, under its lock. Not its
 * provisioner's (IgnoredError): left released; a failed delete is kept on
 * the volume, which stays released, and thrown.
 */
export const reclaimVolume = (store: ClaimStore, name: string, opts: BinderOptions = {}): Promise<ReclaimOutcome> =>
  store.withLock('volume', name, opts.lockWaitMs, async (held): Promise<ReclaimOutcome> => {
    const s = await store.findVolume(name)
    if (!s || s.value.phase !== 'released') return 'not-released'
    if (s.value.reclaim !== 'delete') return store.keep(s, held)
    const p = s.value.provisioned
    if (p) {
      // In a fleet, the program is the one this node maps the recorded name to: etcd names a provisioner, never a program.
      const provisioner = provisionerFor(store, opts, { name: p.class, provisioner: p.provisioner, parameters: p.parameters } as VolumeClass)
      const v = { ...pvView(store.dataDir, s.value), capacity_bytes: p.capacity_bytes, class: p.class, parameters: p.parameters, claim: s.value.claim_ref?.name ?? '' }
      if (provisioner.shouldDelete && !provisioner.shouldDelete(v)) return 'ignored'
      try {
        await provisioner.delete(v, { signal: opts.signal })
      } catch (er) {
        // Stopped: left released, with no failure recorded, for whoever reclaims it next.
        if (er instanceof IgnoredError || er instanceof CallStopped) return 'ignored'
        await store.volumeEvent(s, { type: 'Warning', reason: 'VolumeFailedDelete', message: (er as Error).message }, held)
        throw er
      }
    }
    await store.deleteVolume(s, held)
    return 'deleted'
  })

/** Makes the claims a manifest asks for with "class" or "size" (existing ones asking the same are fine). */
export const createManifestClaims = async (store: ClaimStore, m: PodManifest): Promise<void> => {
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

export interface WaitOptions extends BinderOptions {
  /** How long to wait for a live controller or a provision in the background (default 5m). */
  timeoutMs?: number
  /** Called while waiting, with what is waited for. */
  onWait?: (what: string) => void
}

/**
 * Before a pod runs: every claim of the store its manifest names is bound,
 * inline without a live controller, else by it (ETIMEOUT after `timeoutMs`).
 * A name that is no claim of the store is a volume's, left alone.
 */
export const ensureClaimsBound = async (store: ClaimStore, m: PodManifest, opts: WaitOptions = {}): Promise<void> => {
  const deadline = Date.now() + (opts.timeoutMs ?? 5 * 60_000)
  const flag = store.flag
  const local = store.node === undefined
  for (const v of m.volumes ?? []) {
    if (v.kind !== 'persistent') continue
    for (;;) {
      const c = (await store.findClaim(v.claim))?.value
      if (c === undefined || c.phase === 'bound') break
      if (c.phase === 'lost') throw new PodctlError('EBADSTATE', `volume claim ${c.name} lost its volume ${c.volume}`, `remove the claim and make it again: podctl volume claim rm${flag} ${c.name}`)
      const live = await store.leaderLive()
      let waitingFor = live ? `waiting for ${local ? 'the controller' : "the fleet's controller"} to bind claim ${c.name}` : `waiting for the provisioner of claim ${c.name}`
      if (!live) {
        try {
          const r = await syncClaim(store, c.name, opts)
          if (r.claim.phase === 'bound') continue
          if (r.outcome === 'failed') throw new PodctlError('EFAILED', `cannot provision a volume for claim ${c.name}: ${r.error!.message}`, `see podctl volume claim inspect${flag} ${c.name}`)
          if (r.outcome === 'no-class') {
            throw local
              ? new PodctlError('EBADSTATE', `volume claim ${c.name} names no class and no available volume fits it`, 'create a volume (podctl volume create NAME) or give the claim a class')
              : new PodctlError('EBADSTATE', `volume claim ${c.name} names no class`, 'give the claim a class: a fleet binds claims to provisioned volumes only')
          }
          if (r.outcome === 'given-up') {
            throw new PodctlError('EFAILED', `provisioning for claim ${c.name} failed ${r.claim.failures} times and was given up`, `see podctl volume claim inspect${flag} ${c.name}${local ? '; remove and create the claim again to retry' : ''}`)
          }
        } catch (er) {
          if (!(er instanceof Conflict) && !(er instanceof LockBusyError)) throw er
          waitingFor = `waiting for another ${local ? 'process' : 'node'} provisioning claim ${c.name}`
        }
      }
      if (Date.now() >= deadline) {
        throw new PodctlError('ETIMEOUT', `volume claim ${c.name} is still pending${live ? ` (${local ? 'a controller' : "the fleet's controller"} is working on it)` : ''}`, `see podctl volume claim inspect${flag} ${c.name}`)
      }
      opts.onWait?.(waitingFor)
      await sleep(Math.min(250, Math.max(1, deadline - Date.now())))
    }
  }
}
