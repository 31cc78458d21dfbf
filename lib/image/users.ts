/**
 * Which pods use which images: what `image rm` refuses to remove and
 * `image prune` keeps. A pod names its images in its apps' `image` fields,
 * which the run side writes into the pod's manifest (and may repeat in
 * its record) when it makes the pod, as the image's digest (`sha256:…`);
 * a name is resolved through the store's names as they are now. The scan
 * reads both files of every pod, whatever its state, without validating
 * them (a pod's manifest was checked when it was made), and reads through
 * `refsOf`, so that the run side can hand in another way of knowing.
 */
import path from 'node:path'
import { MAX_MANIFEST_BYTES, readOwnFile } from '../fs/read.js'
import { MANIFEST_FILE, RECORD_FILE } from '../pod/record.js'
import type { Pod } from '../pod/pod.js'
import type { PodState } from '../pod/state.js'
import { Include, listPods } from '../pod/walk.js'
import type { ImageIndexFile } from './index-file.js'
import { digestHex, formatName, tryParseName } from './reference.js'

/** The image references a pod holds (digests or names), as written in it. */
export type PodImageRefs = (pod: Pod) => string[]

const appImages = (file: string, max: number): string[] => {
  const f = readOwnFile(file, max)
  if (!('bytes' in f)) return []
  try {
    const v = JSON.parse(f.bytes.toString('utf8')) as { apps?: unknown }
    if (!Array.isArray(v.apps)) return []
    return v.apps.flatMap((a: unknown) => (a !== null && typeof a === 'object' && typeof (a as { image?: unknown }).image === 'string' ? [(a as { image: string }).image] : []))
  } catch {
    return []
  }
}

/** The default PodImageRefs: the apps' `image` fields of the pod's manifest and record. */
export const imageRefsOfPod: PodImageRefs = (pod) => [...new Set([...appImages(path.join(pod.path, MANIFEST_FILE), MAX_MANIFEST_BYTES), ...appImages(path.join(pod.path, RECORD_FILE), MAX_MANIFEST_BYTES)])]

/** A pod that uses an image. */
export interface ImageUser {
  uuid: string
  state: PodState
  /** In garbage or exited-garbage: about to be deleted, and not a reason to refuse `image rm`. */
  garbage: boolean
}

/** The hex of the stored image `ref` names, if any. */
const resolveRef = (idx: ImageIndexFile, ref: string): string | undefined => {
  const hex = digestHex(ref)
  if (hex !== undefined) return idx.images[hex] ? hex : undefined
  const n = tryParseName(ref)
  return n === undefined ? undefined : idx.names[formatName(n)]
}

/** The pods of `dataDir` that use each image of `idx`, by the image's hex. */
export const imageUsers = (dataDir: string, idx: ImageIndexFile, refsOf: PodImageRefs = imageRefsOfPod): Map<string, ImageUser[]> => {
  const users = new Map<string, ImageUser[]>()
  for (const pod of listPods(dataDir, Include.all)) {
    try {
      for (const ref of refsOf(pod)) {
        const hex = resolveRef(idx, ref)
        if (hex === undefined) continue
        const list = users.get(hex) ?? []
        list.push({ uuid: pod.uuid, state: pod.state, garbage: pod.dir === 'garbage' || pod.dir === 'exited-garbage' })
        users.set(hex, list)
      }
    } finally {
      pod.close()
    }
  }
  return users
}
