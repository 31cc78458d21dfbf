/** What `podctl gc` does. */
import { dataDirExists } from '../../pod/layout.js'
import { gc as collect, type GcResult } from '../../pod/gc.js'
import { tearDownPod } from '../../runtime/pod-runtime.js'
import type { GcCliOptions } from '../commands/gc.js'
import type { Context } from '../context.js'
import { isJson, progressReporter, toJson } from '../output.js'

/** One gc pass; prints what it marked and deleted, and exits 1 if anything could not be handled. */
export const gc = async (ctx: Context, dataDir: string, opts: GcCliOptions): Promise<void> => {
  const json = isJson(opts.format)
  let result: GcResult = { marked: [], deleted: [], skipped: [], failed: [] }
  if (dataDirExists(dataDir)) {
    const progress = progressReporter(ctx.io, 'gc', !json)
    const io = progress.io
    result = await collect(dataDir, {
      gracePeriodMs: opts.gracePeriod,
      expirePreparedMs: opts.expirePrepared,
      markOnly: opts.markOnly === true,
      onProgress: progress.report,
      beforeDelete: tearDownPod,
      removeWorkers: opts.workers,
      // Each line as it happens: a gc that is killed half-way has said what it did.
      ...(json ? {} : { onOutcome: (outcome: string, uuid: string) => io.out(`${outcome} ${uuid}\n`) }),
    })
    progress.finish()
  }
  for (const f of result.failed) ctx.io.err(`podctl: gc: ${f.path ?? f.uuid}: ${f.reason}\n`)
  if (ctx.state.debug) for (const s of result.skipped) ctx.io.err(`podctl: gc: skipped ${s.uuid}: ${s.reason}\n`)
  if (json) {
    const skipped = [...result.skipped, ...result.failed.map((f) => ({ ...f, reason: `error: ${f.reason}` }))]
    ctx.io.out(toJson({ marked: result.marked, deleted: result.deleted, skipped }, opts.format))
  }
  if (result.failed.length > 0) {
    ctx.state.exitCode = 1
    if (json) ctx.io.err(`${JSON.stringify({ error: { code: 'EFAILED', message: `gc could not handle ${result.failed.length} ${result.failed.length === 1 ? 'entry' : 'entries'}` } })}\n`)
  }
}
