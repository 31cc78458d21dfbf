/** podctl stats: what the apps of running isolated pods use (podman pod stats). */
import type { Command } from 'commander'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { addFormatOption, addLegendOptions, dataDirOf } from '../../options.js'
import type { StatsCommandOptions } from './options.js'

export const stats: CommandSpec = {
  name: 'stats',
  description: 'show CPU, memory and processes of each app of running isolated pods, from their cgroups; on a terminal it redraws every second until Ctrl-C',
  define: (cmd: Command, ctx: Context): void => {
    addLegendOptions(addFormatOption(cmd.argument('[uuid...]', 'pod UUIDs or unambiguous prefixes (default: every running pod)').option('--no-stream', 'print one sample and exit (what a pipe or --format json gets anyway)'), ctx))
      .addHelpText('after', '\nExamples:\n  $ podctl stats\n  $ podctl stats 8c3b1f0e --no-stream --format json')
      .action(async (uuids: string[], opts: StatsCommandOptions, self: Command) => (await import('./action.js')).stats(ctx, dataDirOf(self, 'read'), uuids, opts))
  },
}
