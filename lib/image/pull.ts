/**
 * `podctl image pull REF`: skopeo copies REF (any of its transports:
 * docker://, oci:, docker-archive:, …) into an OCI layout in a work dir of
 * the pull, and podctl imports that. Registries, credentials, mirrors and
 * signature policy stay skopeo's business (containers-registries.conf(5),
 * containers-auth.json(5), containers-policy.json(5)).
 */
import { spawn } from 'node:child_process'
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { lookPath } from '../proc/executable.js'
import { importImage, type ImportOptions, type ImportResult } from './import.js'
import { tryParseName, type ImageName } from './reference.js'
import { WorkDir } from './work.js'

export interface PullOptions extends ImportOptions {
  /** skopeo's own progress (on stderr) unless quiet. */
  quiet?: boolean
}

/** The skopeo to run; EFAILED naming the package when there is none. */
export const findSkopeo = (env: NodeJS.ProcessEnv = process.env): string => {
  try {
    return lookPath('skopeo', undefined, env)
  } catch {
    throw new PodctlError('EFAILED', 'skopeo is not installed: podctl image pull runs it to fetch images', 'install the skopeo package (apt-get install skopeo, dnf install skopeo), or copy the image with another tool and podctl image import it')
  }
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
    // skopeo's progress is a diagnostic: it goes to stderr, and stdout stays the digest alone.
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(skopeo, args, { stdio: ['ignore', 2, 2] })
      child.on('error', reject)
      child.on('close', (c) => resolve(c))
    })
    if (code !== 0) throw new PodctlError('EFAILED', `skopeo could not copy ${ref} (it exited with ${code})`, 'its message is above; check the reference, the registry and your credentials (skopeo login)')
    const name = opts.name ?? nameFromRef(ref)
    return await importImage(dataDir, { kind: 'oci-dir', path: layout, tag: LAYOUT_TAG, text: ref }, { ...opts, ...(name !== undefined ? { name } : {}) })
  } finally {
    work.discard()
  }
}
