/**
 * Making a pod from a manifest, the whole way: what the manifest asks of
 * the host is checked first (host sources, persistent volumes), then the
 * pod is created, its UUID saved for scripts, and it is either left
 * prepared or, with its volumes set up, moved to run/ for this process to
 * supervise. Whatever fails on the way leaves nothing behind.
 */
import { PodctlError } from '../errors.js'
import { isolationOf, type PodManifest } from '../pod/manifest.js'
import { checkUUIDFileSave, writeUUIDToFile, type Pod } from '../pod/pod.js'
import { createPod, discard } from '../pod/prepare.js'
import type { EnsureBoundOptions } from '../volume/binder.js'
import { bindPodClaims, createPodClaims, fleetClaimsOf, withPodFleet } from '../volume/fleet-binder.js'
import type { FleetStore } from '../volume/fleet-store.js'
import { checkVolumeSources, setUpPodVolumes, tearDownPodVolumes } from '../volume/pod-volumes.js'
import { checkOpenFiles } from './budget.js'
import { bindProblems, requireNamespaceSupport } from './pod-namespaces.js'

export interface NewPodOptions {
  /** Also write the UUID here (--uuid-file-save). */
  uuidFileSave?: string | undefined
  /** Waiting for the pod's claims to be bound (a live controller binds them). */
  claims?: EnsureBoundOptions
}

/**
 * Creates the pod, runs `finish` on it, and deletes it again (volumes torn
 * down) if either fails. With a fleet, its claims are the fleet's
 * (lib/volume/fleet-binder.ts), over one connection for the whole way.
 */
const create = (dataDir: string, manifest: PodManifest, opts: NewPodOptions, finish: (pod: Pod, fleet: FleetStore | undefined) => void | Promise<void>): Promise<Pod> =>
  withPodFleet(manifest, opts.claims, async (fleet) => {
    if (opts.uuidFileSave !== undefined) checkUUIDFileSave(opts.uuidFileSave)
    if (isolationOf(manifest) === 'namespaces') checkIsolation(manifest)
    if (manifest.volumes?.length) {
      checkVolumeSources(dataDir, manifest, fleet ? await fleetClaimsOf(fleet, manifest) : undefined)
      await createPodClaims(dataDir, manifest, fleet)
    }
    const pod = await createPod(dataDir, manifest)
    try {
      if (opts.uuidFileSave !== undefined) writeUUIDToFile(pod.uuid, opts.uuidFileSave)
      await finish(pod, fleet)
    } catch (er) {
      discard(pod, tearDownPodVolumes)
      throw er
    }
    return pod
  })

/**
 * What a pod with namespaces needs of this host: the support (EFAILED,
 * exit 1, naming what is missing) and its mount points (EUSAGE, like a
 * host source that does not exist).
 */
const checkIsolation = (manifest: PodManifest): void => {
  requireNamespaceSupport(manifest)
  const problem = bindProblems(manifest)
  if (problem) throw new PodctlError('EUSAGE', `invalid manifest: ${problem}`, 'see Documentation/manifest.md, "isolation"')
}

/** A new pod, left prepared (unlocked). */
export const prepareNewPod = (dataDir: string, manifest: PodManifest, opts: NewPodOptions = {}): Promise<Pod> =>
  create(dataDir, manifest, opts, (pod) => pod.toPrepared())

/** A new pod with its volumes set up, moved to run/ and locked by this process, its supervisor. */
export const startNewPod = (dataDir: string, manifest: PodManifest, opts: NewPodOptions = {}): Promise<Pod> =>
  create(dataDir, manifest, opts, async (pod, fleet) => {
    checkOpenFiles(manifest)
    await bindPodClaims(dataDir, manifest, opts.claims ?? {}, fleet)
    setUpPodVolumes(pod, manifest)
    pod.toRun()
  })
