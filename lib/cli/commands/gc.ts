/** podctl gc: mark exited and abandoned pods as garbage, then delete old garbage. */
import type { Command } from 'commander'
import type { CommandSpec } from '../command-spec.js'
import type { Context } from '../context.js'
import { addFormatOption, dataDirOf, durationOption } from '../options.js'

export interface GcCliOptions {
  gracePeriod: number
  expirePrepared: number
  markOnly?: boolean
  format: string
}

export const gc: CommandSpec = {
  name: 'gc',
  description: 'garbage-collect pods: mark exited pods, aborted prepares and expired prepared pods, then delete garbage older than the grace period',
  define: (cmd: Command, ctx: Context): void => {
    cmd
      .addOption(durationOption('--grace-period <duration>', 'how long marked pods are kept before deletion', '30m'))
      .addOption(durationOption('--expire-prepared <duration>', 'mark prepared pods older than this as garbage', '24h'))
      .option('--mark-only', 'only mark; delete nothing')
    addFormatOption(cmd, ctx)
      .addHelpText('after', '\nExamples:\n  $ podctl gc\n  $ podctl gc --grace-period 0s --format json')
      .action(async (opts: GcCliOptions, self: Command) => (await import('../actions/gc.js')).gc(ctx, dataDirOf(self, 'write'), opts))
  },
}
