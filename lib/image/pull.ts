/**
 * `podctl image pull REF`: skopeo copies REF (any of its transports:
 * docker://, oci:, docker-archive:, …) into an OCI layout in a work dir of
 * the pull, and podctl imports that. Registries, credentials, mirrors and
 * signature policy stay skopeo's business (containers-registries.conf(5),
 * containers-auth.json(5), containers-policy.json(5)).
 */
import path from 'node:path'
import { StageBudget } from './hostile.js'
import { importImage, type ImportOptions, type ImportResult } from './import.js'
import { formatName, tryParseName, type ImageName } from './reference.js'
import { DEFAULT_MAX_BYTES } from './render.js'
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

/** Pulls REF with skopeo and imports it. */
export const pullImage = async (dataDir: string, ref: string, opts: PullOptions = {}): Promise<ImportResult> => {
  const skopeo = findSkopeo()
  const work = WorkDir.open(dataDir, 'pull')
  try {
    const layout = path.join(work.path, 'layout')
    const p = opts.platform
    const args = [
      'copy',
      ...(opts.quiet ? ['--quiet'] : []),
      ...(p !== undefined ? ['--override-os', p.os, '--override-arch', p.architecture, ...(p.variant !== undefined ? ['--override-variant', p.variant] : [])] : []),
      ref,
      `oci:${layout}:${LAYOUT_TAG}`,
    ]
    const name = opts.name ?? nameFromRef(ref)
    // skopeo's progress is a diagnostic: it goes to stderr, and stdout stays the digest alone.
    await skopeoCopy(skopeo, args, ref, layout, new StageBudget(opts.maxBytes ?? DEFAULT_MAX_BYTES, name !== undefined ? formatName(name) : undefined, ref))
    return await importImage(dataDir, { kind: 'oci-dir', path: layout, tag: LAYOUT_TAG, text: ref }, { ...opts, ...(name !== undefined ? { name } : {}) })
  } finally {
    work.discard()
  }
}
