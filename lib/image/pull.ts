/**
 * `podctl image pull REF`: skopeo copies REF (any of its transports:
 * docker://, oci:, docker-archive:, …) into an OCI layout in a work dir of
 * the pull, and podctl imports that. Registries, credentials, mirrors and
 * signature policy stay skopeo's business (containers-registries.conf(5),
 * containers-auth.json(5), containers-policy.json(5)).
 */
import path from 'node:path'
import { PodctlError, isPodctlError } from '../errors.js'
import { StageBudget } from './hostile.js'
import { importImage, type ImportOptions, type ImportResult } from './import.js'
import { formatName, tryParseName, type ImageName } from './reference.js'
import { DEFAULT_MAX_BYTES } from './render.js'
import { pullRefs } from './pull-refs.js'
import { readRegistriesConf } from './registries.js'
import { findSkopeo, skopeoCopy } from './skopeo.js'
import { WorkDir } from './work.js'

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

/**
 * Pulls REF with skopeo and imports it; a short name is resolved first
 * (lib/image/pull-refs.ts), and each registry it may be on is tried in
 * turn.
 */
export const pullImage = async (dataDir: string, ref: string, opts: PullOptions = {}): Promise<ImportResult> => {
  const refs = pullRefs(ref, () => readRegistriesConf())
  const skopeo = findSkopeo()
  const work = WorkDir.open(dataDir, 'pull')
  try {
    const p = opts.platform
    const failures: string[] = []
    for (const [i, r] of refs.entries()) {
      const layout = path.join(work.path, `layout-${i}`)
      const args = [
        'copy',
        ...(opts.quiet ? ['--quiet'] : []),
        ...(p !== undefined ? ['--override-os', p.os, '--override-arch', p.architecture, ...(p.variant !== undefined ? ['--override-variant', p.variant] : [])] : []),
        r.ref,
        `oci:${layout}:${LAYOUT_TAG}`,
      ]
      const name = opts.name ?? r.name ?? nameFromRef(r.ref)
      try {
        // skopeo's progress is a diagnostic: it goes to stderr, and stdout stays the digest alone.
        await skopeoCopy(skopeo, args, r.ref, layout, new StageBudget(opts.maxBytes ?? DEFAULT_MAX_BYTES, name !== undefined ? formatName(name) : undefined, r.ref))
      } catch (er) {
        // Like podman, a short name goes on to its next registry when skopeo could not copy it from one.
        if (!isPodctlError(er) || er.code !== 'EFAILED' || i === refs.length - 1) throw refs.length > 1 && isPodctlError(er) && er.code === 'EFAILED' ? notOnAny(ref, [...failures, r.ref]) : er
        failures.push(r.ref)
        continue
      }
      return await importImage(dataDir, { kind: 'oci-dir', path: layout, tag: LAYOUT_TAG, text: r.ref }, { ...opts, ...(name !== undefined ? { name } : {}) })
    }
    throw new Error('bug: no reference to pull')
  } finally {
    work.discard()
  }
}

const notOnAny = (ref: string, tried: string[]): PodctlError =>
  new PodctlError('EFAILED', `skopeo could not copy ${ref} from any of ${tried.join(', ')}`, "skopeo's messages are above; check the name, the registries and your credentials (skopeo login)")
