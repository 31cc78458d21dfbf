/**
 * Volumes as `podctl status` shows them (CONTRACT §5): name, kind, where
 * the data is, and its usage, computed on demand (briefly cached).
 */
import { isPodctlError } from '../errors.js'
import { formatProblems, type PodManifest } from '../pod/manifest.js'
import { volumeRules } from './manifest.js'
import { defaultRegistry } from './plugins/index.js'
import type { Metrics, PodRef } from './types.js'

export interface VolumeView extends Metrics {
  name: string
  kind: string
  /** Where the data is: the pod's own directory for empty and files, the host source, the persistent volume's data. */
  path: string
}

/** One view per volume of the manifest, in manifest order. */
export const podVolumeViews = (pod: PodRef, m: PodManifest): VolumeView[] =>
  (m.volumes ?? []).map((v) => {
    const spec = { name: v.name, volume: v }
    const mounter = defaultRegistry().findPluginBySpec(spec).newMounter(spec, pod)
    return { name: v.name, kind: v.kind, path: mounter.path, ...mounter.getMetrics() }
  })

/** A pod that can show its manifest (lib/pod/pod.ts's Pod). */
export interface ManifestPod extends PodRef {
  podManifestAvailable(): boolean
  podManifest(): { manifest: PodManifest }
}

/**
 * `view` plus `volumes` when the pod's manifest declares any. A manifest
 * that cannot be read or whose volumes are invalid makes the pod damaged
 * (`damaged`, unless the view already says why): status still answers.
 */
export const withVolumes = <T extends { damaged?: string }>(pod: ManifestPod, view: T): T & { volumes?: VolumeView[] } => {
  if (!pod.podManifestAvailable()) return view
  let m: PodManifest
  try {
    m = pod.podManifest().manifest
  } catch (er) {
    if (!isPodctlError(er)) throw er
    return { ...view, damaged: view.damaged ?? er.message }
  }
  if (!m.volumes || m.volumes.length === 0) return view
  const problems = volumeRules(m, true) // podManifest() has checked the pod's part
  if (problems.length > 0) return { ...view, damaged: view.damaged ?? `pod ${pod.uuid} has a damaged manifest: ${formatProblems(problems)}` }
  return { ...view, volumes: podVolumeViews(pod, m) }
}
