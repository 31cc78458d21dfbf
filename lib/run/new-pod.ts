/**
 * Making a pod from a manifest, the whole way: what the manifest asks of
 * the host is checked first (host sources, persistent volumes), then the
 * pod is created, its UUID saved for scripts, and it is either left
 * prepared or, with its volumes set up, moved to run/ for this process to
 * supervise. Whatever fails on the way leaves nothing behind.
 */
import { PodctlError, shortId } from '../errors.js'
import { isolationOf, type PodManifest } from '../pod/manifest.js'
import type { Pod } from '../pod/pod.js'
import { checkUUIDFileSave, writeUUIDToFile } from '../pod/uuid.js'
import { createPod, discard } from '../pod/prepare.js'
import { bindPodClaims, createPodClaims, fleetClaimsOf, withPodFleet, type EnsureBoundOptions, type FleetStore } from '../storage/pod-claims.js'
import { checkVolumeSources, setUpPodVolumes } from '../volume/pod-volumes.js'
import { imagesStillThere, resolveImageApps } from '../runtime/image-apps.js'
import { checkIsolatedPod, tearDownPod } from '../runtime/pod-runtime.js'
import { checkPodNetworks } from '../runtime/pod-network.js'
import { podIds } from '../runtime/userns.js'
import { imageAppOwners } from '../runtime/image-apps.js'
import { checkOpenFiles } from './budget.js'

export interface NewPodOptions {
  /** Also write the UUID here (--uuid-file-save). */
  uuidFileSave?: string | undefined
  /** Waiting for the pod's claims to be bound (a live controller binds them). */
  claims?: EnsureBoundOptions
  /** The OCI runtime of an isolated pod (--runtime): a name on PATH or a path; default PODCTL_RUNTIME, then crun or runc. */
  runtime?: string | undefined
}

/**
 * Creates the pod, runs `finish` on it, and deletes it again (volumes torn
 * down) if either fails. With a fleet, its claims are the fleet's
 * (lib/storage/pod-claims.ts), over one connection for the whole way.
 */
const create = (dataDir: string, asked: PodManifest, opts: NewPodOptions, finish: (pod: Pod, manifest: PodManifest, fleet: FleetStore | undefined) => void | Promise<void>): Promise<NewPod> =>
  withPodFleet(dataDir, asked, opts.claims, async (fleet) => {
    if (opts.uuidFileSave !== undefined) checkUUIDFileSave(opts.uuidFileSave)
    // Apps from images: their digests and the images' defaults, in the manifest the pod keeps.
    const { manifest, images } = await resolveImageApps(dataDir, asked)
    const runtime = isolationOf(manifest) === 'namespaces' ? checkIsolatedPod(manifest, opts.runtime) : undefined
    if (runtime) await checkPodNetworks(dataDir, manifest)
    if (manifest.volumes?.length) {
      checkVolumeSources(dataDir, manifest, fleet ? await fleetClaimsOf(fleet, manifest) : undefined)
      await createPodClaims(dataDir, manifest, fleet)
    }
    const pod = await createPod(dataDir, manifest, { ...(runtime ? { runtime } : {}), ...(images.size > 0 ? { imageNames: new Map([...images].map(([app, i]) => [app, i.name])) } : {}) })
    try {
      const gone = images.size > 0 ? imagesStillThere(dataDir, images) : undefined
      if (gone !== undefined) throw new PodctlError('ENOIMAGE', `image ${gone} was removed while pod ${shortId(pod.uuid)} was being prepared`, 'import it again')
      if (opts.uuidFileSave !== undefined) writeUUIDToFile(pod.uuid, opts.uuidFileSave)
      await finish(pod, manifest, fleet)
    } catch (er) {
      discard(pod, tearDownPod)
      throw er
    }
    return { pod, manifest }
  })

/** A pod just made, and its manifest as stored (image apps resolved). */
export interface NewPod {
  pod: Pod
  manifest: PodManifest
}

/** A new pod, left prepared (unlocked). */
export const prepareNewPod = async (dataDir: string, manifest: PodManifest, opts: NewPodOptions = {}): Promise<Pod> =>
  (await create(dataDir, manifest, opts, (pod) => pod.toPrepared())).pod

/** A new pod with its volumes set up, moved to run/ and locked by this process, its supervisor. */
export const startNewPod = (dataDir: string, asked: PodManifest, opts: NewPodOptions = {}): Promise<NewPod> =>
  create(dataDir, asked, opts, async (pod, manifest, fleet) => {
    checkOpenFiles(manifest)
    await bindPodClaims(pod, manifest, opts.claims ?? {}, fleet)
    setUpPodVolumes(pod, manifest, undefined, undefined, { shift: podIds(manifest).shift, apps: await imageAppOwners(pod.dataDir, manifest) })
    pod.toRun()
  })
