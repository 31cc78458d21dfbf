/** A pod's volumes as a whole: the checks made at prepare, the set-up before it runs, the tear-down before it is deleted. */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, bug, oneLine } from '../errors.js'
import { MAX_MANIFEST_BYTES, readOwnText } from '../fs/read.js'
import { tryLockAt } from '../lock/lock.js'
import { formatProblems, isolationOf, nameLengthProblem, type ManifestProblem, type PodManifest } from '../pod/manifest.js'
import type { Pod } from '../pod/pod.js'
import { MANIFEST_FILE } from '../pod/record.js'
import { TS_DIR_NAME_BYTES } from './atomic-writer.js'
import { OperationExecutor, type OperationOptions } from './executor.js'
import { mountPoints, planMounts, setUpOrder } from './plan.js'
import { findClaim, volumeOfClaim } from '../storage/local/store.js'
import { pvDir, volumeLocksDir, volumesRoot } from '../storage/local/layout.js'
import { readVolume, volumeDataPath, volumeExists } from '../storage/local/volumes.js'
import { unlessError } from '../storage/objects.js'
import type { PvRecord } from '../storage/volume-record.js'
import { defaultRegistry } from './plugins/index.js'
import { readableVolume } from './plugins/persistent.js'
import type { PluginRegistry } from './registry.js'
import { recordedVolumes, removeVolumeStateDir } from './state.js'
import { allowTraverse } from '../fs/modes.js'
import { reachDir } from '../fs/reach.js'
import { resolveAppUser, type AppUser } from '../pod/app-user.js'
import { POD_VOLUMES, isolatedVolumePath, podVolumeDir, volumeStateDir } from './layout.js'
import { parsePodManifest } from './manifest.js'
import type { PodRef, RecordedMountPoint, VolumeSpec } from './types.js'
import { accessModeOf } from '../storage/access-modes.js'

/** Where a pod with ids of its own (CONTRACT §12, `userns: private`) maps its uid and gid 0 on the host. */
export type IdShift = { uid: number; gid: number }

/**
 * Who a pod's volumes are given to, where the host's users do not say:
 * the pod's id shift, and the ids of apps whose users only their image
 * knows (the runtime room looks them up in the image).
 */
export interface VolumeOwners {
  shift?: IdShift | undefined
  apps?: ReadonlyMap<string, { uid: number; gid: number }>
}

/** A pod this process may hold the lock of. */
export type LockablePod = Pick<Pod, 'dataDir' | 'uuid' | 'path' | 'holdsLock'>

/** What the manifest asks of this host: host sources and persistent volumes that exist, access modes they allow. */
export const volumeSourceProblems = (dataDir: string, m: PodManifest, fleetClaims?: ReadonlySet<string>): ManifestProblem[] => {
  const out: ManifestProblem[] = []
  ;(m.volumes ?? []).forEach((v, i) => {
    if (v.kind === 'host' && !fs.existsSync(v.source)) {
      out.push({ path: `volumes[${i}].source`, problem: `${JSON.stringify(v.source)} does not exist on this host` })
    }
    if (v.kind === 'files') {
      for (const key of Object.keys(v.files)) {
        const problem = nameLengthProblem(longestFilePath(dataDir, v.name, key))
        if (problem !== undefined) out.push({ path: `volumes[${i}].files[${JSON.stringify(key.length > 40 ? `${key.slice(0, 40)}…` : key)}]`, problem: `in the pod, its path ${problem}` })
      }
    }
    if (v.kind === 'persistent') {
      // A claim object, one the manifest makes at prepare (class, size), or a volume that cannot be read any more is checked when the pod runs.
      if (v.class !== undefined || v.size !== undefined || fleetClaims?.has(v.claim) || findClaim(dataDir, v.claim) !== undefined) return
      if (!volumeExists(dataDir, v.claim)) {
        out.push({ path: `volumes[${i}].claim`, problem: `no volume claim or persistent volume named ${JSON.stringify(v.claim)}; create one: podctl volume claim create ${v.claim} --class CLASS --size SIZE, or podctl volume create ${v.claim}` })
      } else if (accessModeOf(v.accessMode) === 'ReadWriteMany' && readableVolume(dataDir, v.claim)?.access_mode === 'ReadWriteOnce') {
        out.push({ path: `volumes[${i}].accessMode`, problem: `persistent volume ${v.claim} allows ReadWriteOnce only` })
      }
    }
  })
  return out
}

/** The longest path a files volume's key gets in a pod (a deep data dir may make it too long). */
const longestFilePath = (dataDir: string, volume: string, key: string): string =>
  path.join(path.resolve(dataDir), 'pods', 'exited-garbage', '0'.repeat(36), POD_VOLUMES, volume, 'x'.repeat(TS_DIR_NAME_BYTES), key)

/** Throws EUSAGE ("invalid manifest: volumes[0].source: ...") for volumeSourceProblems. */
export const checkVolumeSources = (dataDir: string, m: PodManifest, fleetClaims?: ReadonlySet<string>): void => {
  const problems = volumeSourceProblems(dataDir, m, fleetClaims)
  if (problems.length > 0) {
    throw new PodctlError('EUSAGE', `invalid manifest: ${formatProblems(problems)}`, 'see Documentation/subcommands/volume.md')
  }
}

const specsOf = (m: PodManifest): Map<string, VolumeSpec> => new Map((m.volumes ?? []).map((v) => [v.name, { name: v.name, volume: v }]))

/**
 * Every volume's mount points. In a pod of host processes a link to data
 * inside the pod dir is relative, as the pod dir moves between state
 * dirs, and any other is the data's host path; in an isolated pod every
 * link points where its apps see the volume (ISOLATED_VOLUMES).
 */
export const podMountPoints = (pod: PodRef, m: PodManifest, registry: PluginRegistry = defaultRegistry()): Map<string, RecordedMountPoint[]> => {
  const dataPath = new Map([...specsOf(m)].map(([name, spec]) => [name, registry.findPluginBySpec(spec).newMounter(spec, pod).path]))
  const isolated = isolationOf(m) === 'namespaces'
  const out = new Map<string, RecordedMountPoint[]>()
  for (const mp of mountPoints(planMounts(m))) {
    const data = dataPath.get(mp.volume)
    if (data === undefined) continue
    const linkAbs = path.join(pod.path, mp.link)
    const target = isolated ? isolatedVolumePath(mp.volume) : data.startsWith(`${pod.path}/`) ? path.relative(path.dirname(linkAbs), data) : data
    out.set(mp.volume, [...(out.get(mp.volume) ?? []), { link: mp.link, target }])
  }
  return out
}

/**
 * Sets up every volume of the pod, parents first, and makes every mount
 * point; all or nothing. The caller holds the pod's lock while the pod runs:
 * claims hold as long as it does. Claims are bound before (ensureClaimsBound).
 */
export const setUpPodVolumes = (
  pod: LockablePod,
  m: PodManifest,
  opts: OperationOptions = { wait: true },
  registry: PluginRegistry = defaultRegistry(),
  owners: VolumeOwners = {},
): void => {
  if (!m.volumes || m.volumes.length === 0) return
  if (!pod.holdsLock) throw bug(`setting up the volumes of pod ${pod.uuid} without its lock`)
  const ex = new OperationExecutor(pod, registry)
  const specs = specsOf(m)
  const points = podMountPoints(pod, m, registry)
  const touched: string[] = []
  try {
    for (const name of setUpOrder(m)) {
      touched.push(name)
      ex.mountVolume(specs.get(name)!, points.get(name) ?? [], opts)
    }
    grantToAppUsers(pod, m, owners)
  } catch (er) {
    // One that fails stays recorded: gc and rm tear it down with the pod.
    for (const name of touched.reverse()) unlessError(() => ex.unmountVolume(name, opts, { podRemoved: false }))
    removeVolumeStateDir(pod.path)
    throw er
  }
}

/**
 * Hands each empty or persistent volume that an app of another user mounts
 * writable to that user (the first such app) and lets everyone through the
 * directories above it (CONTRACT §10). Host and files volumes stay as they are.
 */
const grantToAppUsers = (pod: PodRef, m: PodManifest, given: VolumeOwners): void => {
  const shift = given.shift
  // A podctl that is not root runs every app as itself (an isolated one as root of its own user namespace): nothing to give.
  if (process.geteuid?.() !== 0) return
  const owners = new Map<string, { uid: number; gid: number }>()
  for (const a of m.apps) {
    // An app whose user cannot be resolved cannot start: the supervisor says so.
    const u = given.apps?.get(a.name) ?? unlessError(() => resolveAppUser(a))
    if (u === undefined) continue
    // In a pod of its own id range the app's user is someone else on the host.
    const owner = shift ? { uid: shift.uid + u.uid, gid: shift.gid + u.gid } : u
    for (const mt of a.mounts ?? []) if (!mt.readOnly && !owners.has(mt.volume)) owners.set(mt.volume, owner)
  }
  // An isolated pod's volumes are bound into its containers by the runtime,
  // as root: nothing above them is opened to others (CONTRACT §12a).
  const traverse = isolationOf(m) === 'namespaces' ? () => {} : allowTraverse
  // A files volume stays podctl's; one that another user reads needs only a way to it.
  const readers = m.apps.filter((a) => shift !== undefined || a.user !== undefined || a.group !== undefined)
  if (readers.some((a) => (a.mounts ?? []).some((mt) => m.volumes?.find((v) => v.name === mt.volume)?.kind === 'files'))) traverse([path.join(pod.path, POD_VOLUMES)])
  // There root is someone else too: a volume that no app of another user
  // writes goes to the range's root (which, as root in the pod, may also
  // write what the range's other users own, as root may on the host).
  if (shift) for (const a of m.apps) for (const mt of a.mounts ?? []) if (!mt.readOnly && !owners.has(mt.volume)) owners.set(mt.volume, { uid: shift.uid, gid: shift.gid })
  for (const v of m.volumes ?? []) {
    const u = owners.get(v.name)
    if (u === undefined) continue
    if (v.kind === 'empty') {
      traverse([path.join(pod.path, POD_VOLUMES)])
      fs.lchownSync(podVolumeDir(pod.path, v.name), u.uid, u.gid)
    } else if (v.kind === 'persistent') {
      const rec = readVolume(pod.dataDir, volumeOfClaim(pod.dataDir, v.claim))
      if (rec.provisioned?.path) {
        giveExecVolume(rec, u)
        continue
      }
      traverse([volumesRoot(pod.dataDir), pvDir(pod.dataDir, rec.name)])
      fs.lchownSync(volumeDataPath(pod.dataDir, rec), u.uid, u.gid)
    }
  }
}

/**
 * Gives an exec volume's directory to an app's user only when its class pins
 * the provisioner's answers below a root (`--param root=DIR`), and then
 * through a descriptor opened without following a link: podctl does not
 * trust the provisioner's answer to name a directory it may hand over.
 * Without a root nothing changes (the kubelet's fsGroupPolicy None).
 */
const giveExecVolume = (rec: PvRecord, u: AppUser): void => {
  const root = rec.provisioned?.parameters.root
  const data = rec.provisioned?.path
  if (root === undefined || data === undefined || data === null || !data.startsWith(`${root}/`)) return
  const r = reachDir(data)
  if ('problem' in r) throw new PodctlError('EFAILED', `persistent volume ${rec.name} cannot be given to user ${u.uid}: ${oneLine(r.problem)}`, 'its provisioner must answer a real directory (no symlink on the way)')
  try {
    fs.fchownSync(r.dir.fd, u.uid, u.gid)
  } finally {
    r.dir.close()
  }
}

/** The stored manifest of a pod, if it can be read (it guides the tear-down order). */
const storedManifest = (podPath: string): PodManifest | undefined =>
  unlessError(() => parsePodManifest(readOwnText(path.join(podPath, MANIFEST_FILE), MAX_MANIFEST_BYTES) ?? '', { allowEphemeral: true }))

/**
 * Tears down every volume recorded in the pod's actual state, nested ones
 * first, and throws the first failure after trying them all. The pod's
 * BeforeDelete: called with the pod locked, before its directory goes.
 */
export const tearDownPodVolumes = (pod: PodRef, opts: OperationOptions = { wait: true, timeoutMs: 10_000 }, registry: PluginRegistry = defaultRegistry()): void => {
  const failures: unknown[] = []
  // Most pods have no volumes: one lstat.
  if (fs.lstatSync(volumeStateDir(pod.path), { throwIfNoEntry: false })) {
    const names = recordedVolumes(pod.path)
    const m = names.length > 0 ? storedManifest(pod.path) : undefined
    const order = new Set([...(m ? setUpOrder(m).reverse().filter((n) => names.includes(n)) : []), ...names])
    const ex = new OperationExecutor(pod, registry)
    for (const name of order) {
      try {
        ex.unmountVolume(name, opts, { podRemoved: true })
      } catch (er) {
        failures.push(er)
      }
    }
    removeVolumeStateDir(pod.path)
  }
  // The pod's dead op locks go (left by a process killed before it recorded its volume); a live holder's stays.
  const locks = volumeLocksDir(pod.dataDir)
  for (const n of opLockNames(locks)) {
    if (n.startsWith(`${pod.uuid}.`)) tryLockAt(path.join(locks, n))?.release()
  }
  if (failures.length > 0) {
    const first = failures[0]
    if (first instanceof PodctlError) throw first
    throw new PodctlError('EFAILED', `tearing down the volumes of pod ${pod.uuid} failed: ${(first as Error).message}`, undefined, { cause: first })
  }
}

// The volume-locks dir, read at most once a second: gc removes thousands of
// pods in one process, and a readdir per pod would make that quadratic. A
// lock taken after the read is a live process's, which the sweep leaves.
const opLockSnapshots = new Map<string, { at: number; names: readonly string[] }>()
const opLockNames = (dir: string): readonly string[] => {
  const now = Date.now()
  const snap = opLockSnapshots.get(dir)
  if (snap && now - snap.at < 1_000) return snap.names
  const names = unlessError(() => fs.readdirSync(dir)) ?? [] // none: no volume locks at all
  opLockSnapshots.set(dir, { at: now, names })
  return names
}
