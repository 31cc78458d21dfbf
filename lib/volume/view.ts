/** Volumes as `podctl status` shows them (CONTRACT §5), and a persistent volume as `volume inspect` does, with usage. */
import { isPodctlError, oneLine } from '../errors.js'
import { formatProblems, type PodManifest } from '../pod/manifest.js'
import type { Pod } from '../pod/pod.js'
import { pvView, type PvView } from '../storage/local/pv-view.js'
import { readVolume } from '../storage/local/volumes.js'
import { volumeRules } from './manifest.js'
import { volumeMetrics } from './metrics.js'
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

/** A pod that can show its manifest. */
export type ManifestPod = Pick<Pod, 'dataDir' | 'uuid' | 'path' | 'podManifestAvailable' | 'podManifest'>

/**
 * `view` plus `volumes` when the pod's manifest declares any; a manifest that
 * cannot be read or has invalid volumes makes the view `damaged`, not an error.
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

export interface PvInspectView extends PvView, Metrics {
  /** null without a size limit or when usage is unknown. */
  over_size_limit: boolean | null
}

/** `volume inspect`: the list view plus usage. ENOVOLUME if there is no such volume. */
export const pvInspect = (dataDir: string, name: string): PvInspectView => {
  const v = pvView(dataDir, readVolume(dataDir, name))
  const m = volumeMetrics(v.path, true, { followRoot: false })
  const over = v.size_limit_bytes === null || m.used_bytes === null ? null : m.used_bytes > v.size_limit_bytes
  return { ...v, ...m, over_size_limit: over }
}

const dash = (x: unknown): string => (x === null || x === undefined ? '-' : String(x))

/** key=value lines, like `podctl status`; each value one line (a path may be a provisioner's answer). */
export const pvInspectLines = (v: PvInspectView): string => {
  const lines = [
    `name=${v.name}`,
    `kind=${v.kind}`,
    `path=${v.path}`,
    `created=${v.created_at}`,
    `reclaim=${v.reclaim}`,
    `access-mode=${v.access_mode}`,
    `size-limit-bytes=${dash(v.size_limit_bytes)}`,
    `phase=${v.phase}`,
    `volume-claim=${v.claim ?? '-'}`,
    `used-bytes=${dash(v.used_bytes)}`,
    `used-inodes=${dash(v.used_inodes)}`,
    `capacity-bytes=${dash(v.capacity_bytes)}`,
    `available-bytes=${dash(v.available_bytes)}`,
    `in-use-by=${v.in_use_by.join(',') || '-'}`,
  ]
  const last = v.events.at(-1)
  if (last) lines.push(`last-event=${last.time} ${last.type} ${last.reason}: ${oneLine(last.message)}`)
  for (const c of v.claims) lines.push(`claim-${c.pod}=${c.mode}${c.read_only ? ',read-only' : ''},${c.running ? 'running' : 'not-running'}`)
  return `${lines.map(oneLine).join('\n')}\n`
}
