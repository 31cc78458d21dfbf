/**
 * `oci-archive:FILE[:TAG]`: a tar of an OCI layout (what `skopeo copy …
 * oci-archive:` and `podman save --format oci-archive` write), read in one
 * pass, its files staged as they stream by (lib/image/archive.ts), then
 * the image chosen from its index.json as from a layout's.
 */
import { PodctlError } from '../../errors.js'
import { archiveBlobs, archiveWhere, checkArchiveInput, stageArchive, type ArchiveContents } from '../archive.js'
import { pathAndRef, type ImageSource, type StageContext, type StagedImage, type Transport } from '../image-source.js'
import { checkIndex, parseDocument } from '../oci.js'
import { stageFromIndex } from '../stage.js'

/** The image tagged `tag` (or the only one) of an OCI archive read into `contents`. */
export const stageOciArchive = (ctx: StageContext, contents: ArchiveContents, where: string, tag: string | undefined, file: string): Promise<StagedImage> => {
  const text = contents.documents.get('index.json')
  if (text === undefined) throw new PodctlError('EUSAGE', `${where} is not an OCI archive: it has no index.json`, contents.documents.has('manifest.json') ? `it is a Docker archive: docker-archive:${file}` : undefined)
  return stageFromIndex(ctx, checkIndex(parseDocument(text, 'index.json', where), where), archiveBlobs(ctx, where), where, tag)
}

/** `oci-archive:FILE[:TAG]` (FILE may be - for stdin). */
export const ociArchiveTransport: Transport = {
  name: 'oci-archive',
  parse: (rest, text): ImageSource => {
    const [file, tag] = pathAndRef('oci-archive', rest, text)
    const where = archiveWhere(file, text)
    return {
      transport: 'oci-archive',
      where,
      check: () => checkArchiveInput(file),
      stage: async (ctx) => stageOciArchive(ctx, await stageArchive(ctx, file, where), where, tag, file),
    }
  },
}
