/**
 * What `podctl image import` and `image pull` do. A bundle of its own: the
 * tar reader is loaded by these two commands only.
 */
import type { ImageSource } from '../../../../image/image-source.js'
import { importImage, type ImportOptions, type ImportProgress } from '../../../../image/import.js'
import { parsePlatform } from '../../../../image/oci.js'
import { pullSource } from '../../../../image/pull.js'
import { parseName } from '../../../../image/reference.js'
import { parseSource } from '../../../../image/source.js'
import { humanSize } from '../../../../image/view.js'
import { ensureDataDir } from '../../../../pod/layout.js'
import { parseBytes } from '../../../../bytes.js'
import type { Context } from '../../../context.js'
import { progressLine } from '../../../output.js'
import type { ImageImportOptions } from './options.js'

const progressText = (p: ImportProgress): string =>
  p.phase === 'copy' ? `copying: ${humanSize(p.bytes)}${p.total !== undefined ? ` of ${humanSize(p.total)}` : ''}` : `unpacking layer ${p.layer}/${p.layers}: ${humanSize(p.bytes)}`

/** Checks the options (before anything is written) and wires progress and warnings to stderr. */
const importOptions = (ctx: Context, opts: ImageImportOptions, progress: ReturnType<typeof progressLine>): ImportOptions => ({
  ...(opts.name !== undefined ? { name: parseName(opts.name, '--name') } : {}),
  ...(opts.platform !== undefined ? { platform: parsePlatform(opts.platform) } : {}),
  maxBytes: parseBytes(opts.maxSize ?? '10Gi', '--max-size'),
  onProgress: (p) => progress.set(progressText(p)),
  onWait: (pid) => progress.io.err(`podctl: waiting for another process${pid !== undefined ? ` (${pid})` : ''} that is rendering the same image\n`),
  onWarning: (m) => progress.io.err(`podctl: warning: ${m}\n`),
})

/** Imports from the source `sourceOf` makes of the checked options, its digest on stdout; both commands are this with another source. */
const importFrom = async (ctx: Context, dataDir: string, opts: ImageImportOptions, sourceOf: (options: ImportOptions) => ImageSource): Promise<void> => {
  const progress = progressLine(ctx.io)
  const options = importOptions(ctx, opts, progress)
  const src = sourceOf(options)
  src.check?.() // before anything is written
  ensureDataDir(dataDir)
  try {
    const r = await importImage(dataDir, src, options)
    progress.finish()
    ctx.io.out(`${r.digest}\n`)
  } finally {
    progress.finish()
  }
}

export const importAction = (ctx: Context, dataDir: string, source: string, opts: ImageImportOptions): Promise<void> => importFrom(ctx, dataDir, opts, () => parseSource(source))

export const pullAction = (ctx: Context, dataDir: string, ref: string, opts: ImageImportOptions): Promise<void> =>
  importFrom(ctx, dataDir, opts, (options) => pullSource(ref, { quiet: !ctx.io.errIsTTY, ...(options.platform !== undefined ? { platform: options.platform } : {}) }))
