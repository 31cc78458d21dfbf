/**
 * What every source does once it can reach a blob by its descriptor: pick
 * the manifest from an OCI index (tag, then platform), check the manifest
 * and the config, refuse a platform that was not asked for, and stage the
 * layers, refusing a compression podctl cannot read before anything is
 * unpacked. The sources differ only in how a descriptor's blob is staged
 * (`StageDesc`): copied from a layout, found among an archive's files, or
 * adopted from skopeo's layout.
 */
import { PodctlError } from '../errors.js'
import { linkStoreBlob, mismatch, readStaged, stagedBlob, type StagedBlob } from './blobs.js'
import type { StageContext, StagedImage } from './image-source.js'
import { MAX_DOCUMENT_BYTES, REF_NAME, checkConfig, checkManifest, formatPlatform, layerCompression, parseDocument, type Descriptor, type ImageConfig, type ImageIndex, type ImageManifest } from './oci.js'
import { digestHex, tryParseName } from './reference.js'
import { selectManifest } from './select.js'

/** Stages the blob a descriptor names (`what` names it in messages), checked against its digest and size. */
export type StageDesc = (desc: Descriptor, what: string) => Promise<StagedBlob>

/** The blob `hex` if this import staged it already, or the store has it (hard-linked in: no byte written). */
export const stagedOrStored = (ctx: StageContext, hex: string): StagedBlob | undefined => stagedBlob(ctx.work, hex) ?? linkStoreBlob(ctx.dataDir, ctx.work, hex)

/** `b` if it has the size its descriptor says. */
export const checkSize = (b: StagedBlob, desc: Descriptor, what: string): StagedBlob => {
  if (b.size !== desc.size) throw mismatch(what, `it has ${b.size} bytes, its descriptor says ${desc.size}`)
  return b
}

/**
 * Stages the image `index` holds for `tag` (and the context's platform):
 * its manifest, config and layers. A ref name that is a whole NAME:TAG
 * (podman save writes one) names the image; a bare tag (skopeo's) does not.
 */
export const stageFromIndex = async (ctx: StageContext, index: ImageIndex, stageDesc: StageDesc, where: string, tag: string | undefined): Promise<StagedImage> => {
  const read = async (desc: Descriptor, what: string): Promise<Buffer> => readStaged(await stageDesc(desc, what), MAX_DOCUMENT_BYTES, what)
  const selected = await selectManifest(index, read, where, { ...(tag !== undefined ? { tag } : {}), platform: ctx.platform, explicitPlatform: ctx.explicitPlatform })
  const manifest = checkManifest(selected.doc, `image manifest ${selected.desc.digest} of ${where}`)
  const { configHex, config } = await stageRest(ctx, manifest, stageDesc, where)
  const ref = selected.refName ?? index.manifests.find((m) => m.digest === selected.desc.digest)?.annotations?.[REF_NAME]
  const fromRef = ref !== undefined && /[:/]/.test(ref) ? tryParseName(ref) : undefined
  return { manifestHex: digestHex(selected.desc.digest)!, manifest, configHex, config, names: fromRef ? [fromRef] : [] }
}

/** Stages and checks the config of `manifest`, then stages its layers. */
export const stageRest = async (ctx: StageContext, manifest: ImageManifest, stageDesc: StageDesc, where: string): Promise<{ configHex: string; config: ImageConfig }> => {
  const configWhat = `image config ${manifest.config.digest} of ${where}`
  const config = checkConfig(parseDocument(readStaged(await stageDesc(manifest.config, configWhat), MAX_DOCUMENT_BYTES, configWhat), 'image config', where), configWhat)
  const p = ctx.platform
  if (ctx.explicitPlatform && config.os !== undefined && config.architecture !== undefined && (config.os !== p.os || config.architecture !== p.architecture)) {
    throw new PodctlError('ENOIMAGE', `${where} is an image for ${config.os}/${config.architecture}, not ${formatPlatform(p)}`, 'leave --platform out, or give the source of the platform you want')
  }
  for (const [i, l] of manifest.layers.entries()) {
    const what = `layer ${i + 1} (${l.digest}) of ${where}`
    layerCompression(l.mediaType, what) // refused before anything is unpacked
    await stageDesc(l, what)
  }
  return { configHex: digestHex(manifest.config.digest)!, config }
}

/** The bytes of a document as a one-chunk stream, for stageBlob. */
export async function* once(b: Buffer): AsyncIterable<Buffer> {
  yield b
}
