/** What the `podctl image` commands do besides import and pull. */
import { parseName, shortHex } from '../../../image/reference.js'
import { listImages, pruneImages, removeImage, tagImage } from '../../../image/store.js'
import { humanSize, inspectImage, inspectLines } from '../../../image/view.js'
import type { Context } from '../../context.js'
import { formatTable, isJson, relativeTime, toJson, wantsHeader } from '../../output.js'
import { forEachArgument } from '../../report-error.js'
import type { ImageInspectOptions, ImageListOptions, ImagePruneOptions, ImageRmOptions } from './options.js'

export const list = (ctx: Context, dataDir: string, opts: ImageListOptions): void => {
  const rows = listImages(dataDir)
  if (opts.quiet) {
    ctx.io.out([...new Set(rows.map((r) => `${r.digest}\n`))].join(''))
    return
  }
  if (isJson(opts.format)) {
    ctx.io.out(toJson(rows, opts.format))
    return
  }
  const now = Date.now()
  const table = rows.map((r) => [r.name ?? '<none>', r.tag ?? '<none>', shortHex(r.digest.slice('sha256:'.length)), humanSize(r.size_bytes), relativeTime(r.created, now)])
  ctx.io.out(formatTable(wantsHeader(opts) ? ['NAME', 'TAG', 'DIGEST', 'SIZE', 'CREATED'] : undefined, table))
}

export const inspect = (ctx: Context, dataDir: string, text: string, opts: ImageInspectOptions): void => {
  const v = inspectImage(dataDir, text)
  ctx.io.out(isJson(opts.format) ? toJson(v, opts.format) : inspectLines(v))
}

/** Prints nothing, as podman's tag does. */
export const tag = (dataDir: string, text: string, name: string): void => {
  tagImage(dataDir, text, parseName(name))
}

/** Removes each image named, printing what went (`untagged NAME`, `deleted DIGEST`); goes past a bad one. */
export const rm = (ctx: Context, dataDir: string, texts: string[], opts: ImageRmOptions): Promise<void> =>
  forEachArgument(ctx, texts, (text) => {
    const out = removeImage(dataDir, text, { force: opts.force === true })
    return [...out.untagged.map((n) => `untagged ${n}\n`), ...(out.deleted !== undefined ? [`deleted ${out.deleted}\n`] : [])].join('')
  })

export const prune = (ctx: Context, dataDir: string, opts: ImagePruneOptions): void => {
  const r = pruneImages(dataDir, { unnamed: true })
  if (isJson(opts.format)) {
    ctx.io.out(toJson({ deleted: r.images, blobs: r.blobs, renders: r.renders, leftovers: r.work }, opts.format))
    return
  }
  ctx.io.out(r.images.map((d) => `deleted ${d}\n`).join(''))
}
