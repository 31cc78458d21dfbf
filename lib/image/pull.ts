/**
 * `podctl image pull REF`: an image source whose staging runs skopeo. skopeo
 * copies REF (any of its transports: docker://, oci:, docker-archive:, …;
 * a short name resolved first, lib/image/pull-refs.ts) into an OCI layout
 * in the import's own work dir, and that layout is adopted as it is
 * (lib/image/transports/oci.ts: hashed where it lies, hard-linked, not
 * copied again). Registries, credentials, mirrors and signature policy
 * stay skopeo's business (containers-registries.conf(5),
 * containers-auth.json(5), containers-policy.json(5)).
 */
import path from 'node:path'
import { PodctlError, isPodctlError } from '../errors.js'
import type { ImageSource, StageContext, StagedImage } from './image-source.js'
import { importImage, type ImportOptions, type ImportResult } from './import.js'
import type { Platform } from './oci.js'
import { pullRefs, type PullRef } from './pull-refs.js'
import { tryParseName, type ImageName } from './reference.js'
import { readRegistriesConf } from './registries.js'
import { findSkopeo, skopeoCopy } from './skopeo.js'
import { layoutSource } from './transports/oci.js'

export interface PullOptions extends ImportOptions {
  /** skopeo's own progress (on stderr) unless quiet. */
  quiet?: boolean
}

/** The name a pulled image gets by default: a registry reference's own (docker://alpine:3 -> alpine:3). */
export const nameFromRef = (ref: string): ImageName | undefined => {
  if (!ref.startsWith('docker://')) return undefined
  const rest = ref.slice('docker://'.length)
  if (rest.includes('@')) return undefined
  return tryParseName(rest)
}

const LAYOUT_TAG = 'pulled'

const notOnAny = (ref: string, tried: readonly PullRef[]): PodctlError =>
  new PodctlError('EFAILED', `skopeo could not copy ${ref} from any of ${tried.map((r) => r.ref).join(', ')}`, "skopeo's messages are above; check the name, the registries and your credentials (skopeo login)")

/** skopeo copy's arguments, writing `layout`. */
const copyArgs = (ref: string, layout: string, quiet: boolean, p: Platform | undefined): string[] => [
  'copy',
  ...(quiet ? ['--quiet'] : []),
  ...(p !== undefined ? ['--override-os', p.os, '--override-arch', p.architecture, ...(p.variant !== undefined ? ['--override-variant', p.variant] : [])] : []),
  ref,
  `oci:${layout}:${LAYOUT_TAG}`,
]

/**
 * The image REF names, fetched by skopeo. A short name's references are
 * tried in turn, as podman tries them: the first that skopeo copies wins.
 */
export const pullSource = (ref: string, opts: { quiet?: boolean; platform?: Platform } = {}): ImageSource => {
  const refs = pullRefs(ref, () => readRegistriesConf())
  let skopeo: string | undefined
  return {
    transport: 'pull',
    where: ref,
    workKind: 'pull',
    check: () => void (skopeo ??= findSkopeo()),
    stage: async (ctx: StageContext): Promise<StagedImage> => {
      skopeo ??= findSkopeo()
      for (const [i, r] of refs.entries()) {
        const layout = path.join(ctx.work.path, `layout-${i}`)
        try {
          // skopeo's progress is a diagnostic: it goes to stderr, and stdout stays the digest alone.
          await skopeoCopy(skopeo, copyArgs(r.ref, layout, opts.quiet === true, opts.platform), r.ref, layout, ctx.budget)
        } catch (er) {
          // Like podman, a short name goes on to its next registry when skopeo could not copy it from one.
          if (!isPodctlError(er) || er.code !== 'EFAILED') throw er
          if (i < refs.length - 1) continue
          throw refs.length > 1 ? notOnAny(ref, refs) : er
        }
        const staged = await layoutSource(layout, LAYOUT_TAG, r.ref, { adopt: true }).stage(ctx)
        const name = r.name ?? nameFromRef(r.ref)
        return { ...staged, names: name !== undefined ? [name] : [] }
      }
      throw new Error('bug: no reference to pull')
    },
  }
}

/** Pulls REF with skopeo and imports it. */
export const pullImage = (dataDir: string, ref: string, opts: PullOptions = {}): Promise<ImportResult> =>
  importImage(dataDir, pullSource(ref, { ...(opts.quiet !== undefined ? { quiet: opts.quiet } : {}), ...(opts.platform !== undefined ? { platform: opts.platform } : {}) }), opts)
