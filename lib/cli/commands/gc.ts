/** podctl gc: mark exited and abandoned pods as garbage, then delete old garbage. */
import { Option, type Command } from 'commander'
import { parseNonNegativeDuration } from '../../duration.js'
import type { GcResult } from '../../pod/gc.js'
import { dataDirOf, FORMATS, type Context } from '../context.js'
import { isJson, progressReporter, toJson } from '../output.js'

interface GcCliOptions {
  gracePeriod: string
  expirePrepared: string
  markOnly?: boolean
  format: string
}

export const registerGc = (program: Command, ctx: Context): void => {
  program
    .command('gc')
    .description('garbage-collect pods: mark exited pods, aborted prepares and expired prepared pods, then delete garbage older than the grace period')
    .option('--grace-period <duration>', 'how long marked pods are kept before deletion', '30m')
    .option('--expire-prepared <duration>', 'mark prepared pods older than this as garbage', '24h')
    .option('--mark-only', 'only mark; delete nothing')
    .addOption(new Option('--format <format>', 'output format').choices(FORMATS).default('table'))
    .addHelpText('after', '\nExamples:\n  $ podctl gc\n  $ podctl gc --grace-period 0s --format json')
    .action(async (opts: GcCliOptions, self: Command) => {
      ctx.state.format = opts.format
      const gracePeriodMs = parseNonNegativeDuration(opts.gracePeriod, '--grace-period')
      const expirePreparedMs = parseNonNegativeDuration(opts.expirePrepared, '--expire-prepared')
      const [{ dataDirExists }, { gc }] = await Promise.all([import('../../pod/layout.js'), import('../../pod/gc.js')])
      const dataDir = dataDirOf(self)
      const json = isJson(opts.format)
      let result: GcResult = { marked: [], deleted: [], skipped: [], failed: [] }
      if (dataDirExists(dataDir)) {
        const progress = progressReporter(ctx.io, 'gc', !json)
        result = gc(dataDir, { gracePeriodMs, expirePreparedMs, markOnly: opts.markOnly === true, onProgress: progress.report })
        progress.finish()
      }
      for (const f of result.failed) ctx.io.err(`podctl: gc: ${f.path ?? f.uuid}: ${f.reason}\n`)
      if (ctx.state.debug) for (const s of result.skipped) ctx.io.err(`podctl: gc: skipped ${s.uuid}: ${s.reason}\n`)
      if (json) {
        const skipped = [...result.skipped, ...result.failed.map((f) => ({ ...f, reason: `error: ${f.reason}` }))]
        ctx.io.out(toJson({ marked: result.marked, deleted: result.deleted, skipped }, opts.format))
      } else {
        ctx.io.out(result.marked.map((u) => `marked ${u}\n`).join('') + result.deleted.map((u) => `deleted ${u}\n`).join(''))
      }
      if (result.failed.length > 0) {
        ctx.state.exitCode = 1
        if (json) ctx.io.err(`${JSON.stringify({ error: { code: 'EFAILED', message: `gc could not handle ${result.failed.length} entries` } })}\n`)
      }
    })
}
