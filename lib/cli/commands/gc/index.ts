/** podctl gc: mark exited and abandoned pods as garbage, then delete old garbage. */
import { Option, type Command } from 'commander'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { addFormatOption, count, dataDirOf, durationOption } from '../../options.js'
import type { GcCliOptions } from './options.js'

export const gc: CommandSpec = {
  name: 'gc',
  description: 'garbage-collect pods: mark exited pods, aborted prepares and expired prepared pods, then delete garbage older than the grace period',
  define: (cmd: Command, ctx: Context): void => {
    cmd
      .addOption(durationOption('--grace-period <duration>', 'how long marked pods are kept before deletion', '30m'))
      .addOption(durationOption('--expire-prepared <duration>', 'mark prepared pods older than this as garbage', '24h'))
      .option('--mark-only', 'only mark; delete nothing')
      // Removal is mostly the kernel's work, and it runs in parallel: 4 threads beat 1 and 2 even on 2 CPUs (Documentation/performance.md).
      .addOption(new Option('--workers <n>', 'threads that delete pods while gc locks and moves the next; 0 deletes in gc\'s own thread').argParser(count('--workers', 0)).default(4))
    addFormatOption(cmd, ctx)
      .addHelpText('after', '\nExamples:\n  $ podctl gc\n  $ podctl gc --grace-period 0s --format json')
      .action(async (opts: GcCliOptions, self: Command) => (await import('./action.js')).gc(ctx, dataDirOf(self, 'write'), opts))
  },
}
