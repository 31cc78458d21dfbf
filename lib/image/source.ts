/**
 * What `podctl image import SOURCE` names, in skopeo's transport syntax
 * (containers-transports(5)) so that what a user copied with skopeo
 * imports as they wrote it: `oci:DIR[:TAG]`, `oci-archive:FILE[:TAG]`,
 * `docker-archive:FILE[:NAME[:TAG]]`, a plain directory (an OCI layout)
 * or file (an archive of either kind), or `-` (an archive on stdin).
 */
import fs from 'node:fs'
import { PodctlError } from '../errors.js'

export type Source =
  | { kind: 'oci-dir'; path: string; tag?: string; text: string }
  | { kind: 'archive'; format: 'oci' | 'docker' | 'auto'; path: string | '-'; ref?: string; text: string }

const TRANSPORTS = ['oci', 'oci-archive', 'docker-archive'] as const

/** Splits `REST` of `transport:REST` into the path and what follows its first ":" (skopeo's rule). */
const splitRef = (rest: string): [string, string | undefined] => {
  const i = rest.indexOf(':')
  return i < 0 ? [rest, undefined] : [rest.slice(0, i), rest.slice(i + 1)]
}

/** Parses SOURCE; EUSAGE when it names nothing podctl can read. Plain paths are looked at (file or directory). */
export const parseSource = (text: string): Source => {
  if (text === '') throw new PodctlError('EUSAGE', 'the image source is empty', 'give a directory, an archive, oci:DIR[:TAG], oci-archive:FILE[:TAG], docker-archive:FILE, or - for stdin')
  if (text === '-') return { kind: 'archive', format: 'auto', path: '-', text }
  const colon = text.indexOf(':')
  const transport = colon > 0 ? text.slice(0, colon) : undefined
  if (transport !== undefined && (TRANSPORTS as readonly string[]).includes(transport)) {
    const [p, ref] = splitRef(text.slice(colon + 1))
    if (p === '') throw new PodctlError('EUSAGE', `invalid image source ${JSON.stringify(text)}: no path after ${transport}:`)
    if (ref === '') throw new PodctlError('EUSAGE', `invalid image source ${JSON.stringify(text)}: empty tag after the path`)
    if (transport === 'oci') return { kind: 'oci-dir', path: p, ...(ref !== undefined ? { tag: ref } : {}), text }
    return { kind: 'archive', format: transport === 'oci-archive' ? 'oci' : 'docker', path: p, ...(ref !== undefined ? { ref } : {}), text }
  }
  if (transport !== undefined && /^[a-z][a-z0-9-]*$/.test(transport) && !fs.existsSync(text)) {
    throw new PodctlError('EUSAGE', `image source ${JSON.stringify(text)}: podctl image import does not read the ${transport}: transport`, transport === 'docker' ? 'to fetch from a registry: podctl image pull docker://…' : 'use oci:DIR, oci-archive:FILE, docker-archive:FILE, a path, or podctl image pull for other transports')
  }
  const st = fs.statSync(text, { throwIfNoEntry: false })
  if (st === undefined) throw new PodctlError('EUSAGE', `image source ${text}: no such file or directory`)
  if (st.isDirectory()) return { kind: 'oci-dir', path: text, text }
  return { kind: 'archive', format: 'auto', path: text, text }
}
