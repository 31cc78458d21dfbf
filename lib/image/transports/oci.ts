/**
 * `oci:DIR[:TAG]` (or a plain directory): an OCI image layout. Its blobs
 * are copied into the work dir, hashed on the way, each opened as a
 * regular file of the size its descriptor says (never a fifo or a device,
 * which could block or feed for ever). A layout that podctl's own pull
 * wrote in the same work dir is adopted instead: its blobs are hashed
 * where they are and hard-linked, so a pull stores each blob once.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, isNotFound } from '../../errors.js'
import { readUserFile } from '../../fs/read.js'
import { adoptBlob, mismatch, stageBlob, type StagedBlob } from '../blobs.js'
import { pathAndRef, type ImageSource, type StageContext, type StagedImage, type Transport } from '../image-source.js'
import { MAX_DOCUMENT_BYTES, checkIndex, parseDocument, type Descriptor, type ImageIndex } from '../oci.js'
import { digestHex } from '../reference.js'
import { checkSize, stageFromIndex, stagedOrStored } from '../stage.js'

/** The layout's index.json, after a look at its oci-layout file. */
const readLayoutIndex = (dir: string, where: string): ImageIndex => {
  if (!fs.existsSync(path.join(dir, 'oci-layout'))) throw new PodctlError('EUSAGE', `${dir} is not an OCI image layout: it has no oci-layout file`, 'give a directory written by skopeo copy … oci:DIR, umoci or buildah')
  const layout = parseDocument(readUserFile(path.join(dir, 'oci-layout'), MAX_DOCUMENT_BYTES, 'oci-layout file'), 'oci-layout', where)
  if (typeof layout.imageLayoutVersion !== 'string') throw new PodctlError('EUSAGE', `${dir} is not an OCI image layout: its oci-layout file has no imageLayoutVersion`)
  const text = readUserFile(path.join(dir, 'index.json'), MAX_DOCUMENT_BYTES, 'image index')
  return checkIndex(parseDocument(text, 'index.json', where), where)
}

/** A blob of a layout directory, opened as a regular file (never a fifo or a device) of the size its descriptor says. */
const openLayoutBlob = (p: string, desc: Descriptor, what: string): number => {
  let fd: number
  try {
    fd = fs.openSync(p, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK)
  } catch (er) {
    if (isNotFound(er)) throw new PodctlError('EUSAGE', `${what} is missing (${p})`, 'the layout is incomplete; copy it again')
    throw er
  }
  const st = fs.fstatSync(fd)
  if (!st.isFile()) {
    fs.closeSync(fd)
    throw new PodctlError('EUSAGE', `${what} (${p}) is not a regular file`)
  }
  if (st.size !== desc.size) {
    fs.closeSync(fd)
    throw mismatch(what, `it has ${st.size} bytes, its descriptor says ${desc.size}`)
  }
  return fd
}

export interface LayoutOptions {
  /** The layout is podctl's own, in the same work dir (a pull's): its blobs are hard-linked, not copied. */
  adopt?: boolean
}

/** The image tagged `tag` (or the only one) in the layout at `dir`. */
export const layoutSource = (dir: string, tag: string | undefined, where: string, opts: LayoutOptions = {}): ImageSource => ({
  transport: 'oci',
  where,
  stage: async (ctx: StageContext): Promise<StagedImage> => {
    const index = readLayoutIndex(dir, where)
    const onBytes = (n: number): void => ctx.onBytes(n)
    const stageDesc = async (desc: Descriptor, what: string): Promise<StagedBlob> => {
      const hex = digestHex(desc.digest)!
      const have = stagedOrStored(ctx, hex)
      if (have !== undefined) return checkSize(have, desc, what)
      const entry = `blobs/sha256/${hex}`
      const p = path.join(dir, entry)
      const fd = openLayoutBlob(p, desc, what)
      const expect = { hex, size: desc.size, what, entry }
      if (opts.adopt) {
        fs.closeSync(fd)
        return adoptBlob(ctx.work, p, expect)
      }
      return stageBlob(ctx.work, fs.createReadStream('', { fd, highWaterMark: 256 * 1024 }), expect, ctx.budget, onBytes)
    }
    return stageFromIndex(ctx, index, stageDesc, where, tag)
  },
})

/** `oci:DIR[:TAG]`. */
export const ociTransport: Transport = {
  name: 'oci',
  parse: (rest, text) => {
    const [dir, tag] = pathAndRef('oci', rest, text)
    return layoutSource(dir, tag, text)
  },
}
