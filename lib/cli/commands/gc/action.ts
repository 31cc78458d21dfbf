/** What `podctl gc` does. */
import { dataDirExists } from '../../../pod/layout.js'
import { gc as collect, type GcResult } from '../../../pod/gc.js'
import { pruneImages, type Removed } from '../../../image/store.js'
import { errnoCode, isPodctlError } from '../../../errors.js'
import { podTeardown } from '../../../runtime/pod-runtime.js'
import { releaseDeadNetworks } from '../../../runtime/pod-network.js'
import type { Context } from '../../context.js'
import { isJson, progressReporter, toJson } from '../../output.js'
import type { GcCliOptions } from './options.js'

/** One gc pass; prints what it marked and deleted, and exits 1 if anything could not be handled. */
export const gc = async (ctx: Context, dataDir: string, opts: GcCliOptions): Promise<void> => {
  const json = isJson(opts.format)
  let result: GcResult = { marked: [], deleted: [], skipped: [], failed: [] }
  let images: Removed | undefined
  if (dataDirExists(dataDir)) {
    // DEL for pods that died on their networks (CONTRACT §14), before their directories can go.
    const networks = opts.markOnly === true ? undefined : await releaseDeadNetworks(dataDir)
    const teardown = podTeardown(dataDir)
    const progress = progressReporter(ctx.io, 'gc', !json)
    const io = progress.io
    result = await collect(dataDir, {
      gracePeriodMs: opts.gracePeriod,
      expirePreparedMs: opts.expirePrepared,
      markOnly: opts.markOnly === true,
      onProgress: progress.report,
      beforeDelete: teardown,
      removeWorkers: opts.workers,
      // Each line as it happens: a gc that is killed half-way has said what it did.
      ...(json ? {} : { onOutcome: (outcome: string, uuid: string) => io.out(`${outcome} ${uuid}\n`) }),
    })
    progress.finish()
    for (const f of networks?.failed ?? []) result.failed.push({ uuid: f.uuid, reason: `deleting its networks: ${f.reason}` })
    if (opts.markOnly !== true) images = imageLeftovers(result, dataDir)
  }
  if (images !== undefined && !json) {
    const n = images.work.length + images.blobs + images.renders
    if (n > 0) ctx.io.out(`deleted image leftovers: ${images.work.length} work dir${images.work.length === 1 ? '' : 's'}, ${images.blobs} blob${images.blobs === 1 ? '' : 's'}, ${images.renders} render${images.renders === 1 ? '' : 's'}\n`)
  }
  for (const f of result.failed) ctx.io.err(`podctl: gc: ${f.path ?? f.uuid}: ${f.reason}\n`)
  if (ctx.state.debug) for (const s of result.skipped) ctx.io.err(`podctl: gc: skipped ${s.uuid}: ${s.reason}\n`)
  if (json) {
    const skipped = [...result.skipped, ...result.failed.map((f) => ({ ...f, reason: `error: ${f.reason}` }))]
    // Only when there were some: a gc of a data dir without images prints what it always printed.
    const leftovers = images === undefined || images.work.length + images.blobs + images.renders === 0 ? undefined : { work: images.work, blobs: images.blobs, renders: images.renders }
    ctx.io.out(toJson({ marked: result.marked, deleted: result.deleted, skipped, ...(leftovers ? { image_leftovers: leftovers } : {}) }, opts.format))
  }
  if (result.failed.length > 0) {
    ctx.state.exitCode = 1
    if (json) ctx.io.err(`${JSON.stringify({ error: { code: 'EFAILED', message: `gc could not handle ${result.failed.length} ${result.failed.length === 1 ? 'entry' : 'entries'}` } })}\n`)
  }
}

/**
 * What killed imports, renders and removals left in the image store (not
 * images: an unnamed image is `image prune`'s to delete). A failure is
 * reported with the pods' failures, and gc exits 1.
 */
const imageLeftovers = (result: GcResult, dataDir: string): Removed | undefined => {
  try {
    return pruneImages(dataDir, { unnamed: false })
  } catch (er) {
    if (!isPodctlError(er) && errnoCode(er) === undefined) throw er
    result.failed.push({ uuid: 'images', path: 'images', reason: `removing image leftovers: ${(er as Error).message}` })
    return undefined
  }
}
