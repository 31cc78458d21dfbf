/**
 * Which manifest of an OCI index is the image to import: the one tagged
 * as asked (`org.opencontainers.image.ref.name`, as skopeo and podman
 * write it), then, through multi-platform indexes, the one for this
 * machine's platform or `--platform`. Indexes nest at most a few deep.
 */
import { PodctlError } from '../errors.js'
import { MEDIA, REF_NAME, checkIndex, formatPlatform, isIndexDocument, parseDocument, type Descriptor, type ImageIndex, type Platform } from './oci.js'

/** Reads (and checks against its digest) the document a descriptor names. */
export type ReadDocument = (desc: Descriptor, what: string) => Promise<Buffer>

export interface Selected {
  desc: Descriptor
  bytes: Buffer
  doc: Record<string, unknown>
  /** The ref name of the top-level entry it came through, if it had one. */
  refName?: string
}

const MAX_DEPTH = 4

const platformMatches = (p: Platform | undefined, want: Platform): boolean =>
  p !== undefined && p.os === want.os && p.architecture === want.architecture && (want.variant === undefined || p.variant === undefined || p.variant === want.variant)

/** Attestations and other entries that are not images (BuildKit marks them unknown/unknown). */
const isImageEntry = (d: Descriptor): boolean => !(d.platform?.os === 'unknown' && d.platform.architecture === 'unknown')

const refsOf = (index: ImageIndex): string[] => [...new Set(index.manifests.map((m) => m.annotations?.[REF_NAME]).filter((r): r is string => r !== undefined))]

/**
 * The image manifest that `index` (the layout's index.json) holds for
 * `tag` and `platform`. EUSAGE, listing what there is, when there is no
 * such image or the choice is ambiguous.
 */
export const selectManifest = async (index: ImageIndex, read: ReadDocument, where: string, opts: { tag?: string; platform: Platform; explicitPlatform: boolean }): Promise<Selected> => {
  let entries = index.manifests
  if (opts.tag !== undefined) {
    entries = entries.filter((m) => m.annotations?.[REF_NAME] === opts.tag)
    if (entries.length === 0) {
      const refs = refsOf(index)
      throw new PodctlError('ENOIMAGE', `${where} has no image tagged ${JSON.stringify(opts.tag)}`, refs.length > 0 ? `it has: ${refs.join(', ')}` : 'it names no image by tag; leave the tag out')
    }
  } else {
    const refs = refsOf(index)
    if (refs.length > 1) throw new PodctlError('EUSAGE', `${where} holds several images (${refs.join(', ')})`, `choose one by its tag, e.g. ${where.startsWith('oci-archive:') ? 'oci-archive' : 'oci'}:PATH:${refs[0]}`)
  }
  if (entries.length === 0) throw new PodctlError('EUSAGE', `${where} holds no image`, 'its index.json lists no manifests')
  const refName = entries[0]!.annotations?.[REF_NAME]
  const chosen = await choose(entries, read, where, opts, 0)
  return refName === undefined ? chosen : { ...chosen, refName }
}

const choose = async (entries: Descriptor[], read: ReadDocument, where: string, opts: { platform: Platform; explicitPlatform: boolean }, depth: number): Promise<Selected> => {
  if (depth > MAX_DEPTH) throw new PodctlError('EUSAGE', `${where} nests image indexes more than ${MAX_DEPTH} deep`, 'the image is damaged or hostile')
  const images = entries.filter(isImageEntry)
  let pick: Descriptor
  if (images.length === 1 && (images[0]!.platform === undefined || !opts.explicitPlatform || platformMatches(images[0]!.platform, opts.platform))) {
    pick = images[0]!
  } else {
    const matching = images.filter((d) => platformMatches(d.platform, opts.platform))
    // An exact variant beats one that does not say (linux/arm/v7 over linux/arm).
    const found = matching.find((d) => d.platform?.variant === opts.platform.variant) ?? matching[0]
    if (found === undefined) {
      const have = images.map((d) => (d.platform ? formatPlatform(d.platform) : 'an image of no stated platform'))
      throw new PodctlError('ENOIMAGE', `${where} has no image for ${formatPlatform(opts.platform)}`, `it has: ${[...new Set(have)].join(', ')}; choose one with --platform`)
    }
    pick = found
  }
  const what = `${isIndexType(pick) ? 'image index' : 'image manifest'} ${pick.digest} of ${where}`
  const bytes = await read(pick, what)
  const doc = parseDocument(bytes, what, where)
  if (isIndexDocument(doc, pick.mediaType)) {
    const nested = checkIndex(doc, what)
    return choose(nested.manifests, read, where, opts, depth + 1)
  }
  return { desc: pick, bytes, doc }
}

const isIndexType = (d: Descriptor): boolean => d.mediaType === MEDIA.ociIndex || d.mediaType === MEDIA.dockerList
