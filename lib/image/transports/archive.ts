/**
 * A plain FILE, or - for stdin: an archive of either kind, told apart by
 * what it holds once it is read (an OCI archive has an index.json, a
 * Docker archive a manifest.json), as `podman load` tells them apart.
 */
import { PodctlError } from '../../errors.js'
import { archiveWhere, checkArchiveInput, stageArchive } from '../archive.js'
import type { ImageSource } from '../image-source.js'
import { stageDockerArchive } from './docker-archive.js'
import { stageOciArchive } from './oci-archive.js'

/** The archive at `file` (or stdin for -), of whichever kind it turns out to be. */
export const archiveSource = (file: string, text: string): ImageSource => {
  const where = archiveWhere(file, text)
  return {
    transport: 'archive',
    where,
    check: () => checkArchiveInput(file),
    stage: async (ctx) => {
      const contents = await stageArchive(ctx, file, where)
      if (contents.documents.has('index.json')) return stageOciArchive(ctx, contents, where, undefined, file)
      if (contents.documents.has('manifest.json')) return stageDockerArchive(ctx, contents, where, undefined)
      throw new PodctlError('EUSAGE', `${where} is neither an OCI archive (no index.json) nor a Docker archive (no manifest.json)`, 'give an archive written by skopeo copy, podman save or docker save')
    },
  }
}
