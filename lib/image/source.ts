/**
 * What `podctl image import SOURCE` names, in skopeo's transport syntax
 * (containers-transports(5)) so that what a user copied with skopeo
 * imports as they wrote it: `oci:DIR[:TAG]`, `oci-archive:FILE[:TAG]`,
 * `docker-archive:FILE[:NAME[:TAG]]`, a plain directory (an OCI layout)
 * or file (an archive of either kind), or `-` (an archive on stdin). Each
 * transport is a file of transports/ and one line of TRANSPORTS, as
 * containers/image's alltransports lists its own.
 */
import fs from 'node:fs'
import { PodctlError } from '../errors.js'
import type { ImageSource, Transport } from './image-source.js'
import { archiveSource } from './transports/archive.js'
import { dockerArchiveTransport } from './transports/docker-archive.js'
import { layoutSource, ociTransport } from './transports/oci.js'
import { ociArchiveTransport } from './transports/oci-archive.js'

/** An image source (what the library's importImage takes). */
export type Source = ImageSource

const TRANSPORTS: readonly Transport[] = [ociTransport, ociArchiveTransport, dockerArchiveTransport]

/** Parses SOURCE; EUSAGE when it names nothing podctl can read. Plain paths are looked at (file or directory). */
export const parseSource = (text: string): ImageSource => {
  if (text === '') throw new PodctlError('EUSAGE', 'the image source is empty', 'give a directory, an archive, oci:DIR[:TAG], oci-archive:FILE[:TAG], docker-archive:FILE, or - for stdin')
  if (text === '-') return archiveSource('-', text)
  const colon = text.indexOf(':')
  const name = colon > 0 ? text.slice(0, colon) : undefined
  const transport = TRANSPORTS.find((t) => t.name === name)
  if (transport !== undefined) return transport.parse(text.slice(colon + 1), text)
  if (name !== undefined && /^[a-z][a-z0-9-]*$/.test(name) && !fs.existsSync(text)) {
    throw new PodctlError('EUSAGE', `image source ${JSON.stringify(text)}: podctl image import does not read the ${name}: transport`, name === 'docker' ? 'to fetch from a registry: podctl image pull docker://…' : 'use oci:DIR, oci-archive:FILE, docker-archive:FILE, a path, or podctl image pull for other transports')
  }
  const st = fs.statSync(text, { throwIfNoEntry: false })
  if (st === undefined) throw new PodctlError('EUSAGE', `image source ${text}: no such file or directory`)
  return st.isDirectory() ? layoutSource(text, undefined, text) : archiveSource(text, text)
}
