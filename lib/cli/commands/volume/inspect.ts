/** podctl volume inspect: one persistent volume, with its usage and claims. */
import type { Command } from 'commander'
import type { Context } from '../../context.js'
import { addFormatOption, dataDirOf } from '../../options.js'

export const registerVolumeInspect = (volume: Command, ctx: Context): void => {
  const cmd = volume
    .command('inspect')
    .description('show one persistent volume: settings, usage (bytes, inodes, capacity, available) and the pods bound to it')
    .argument('<name>', 'volume name')
  addFormatOption(cmd, ctx, 'output format (table means key=value lines)')
    .addHelpText('after', '\nExamples:\n  $ podctl volume inspect db\n  $ podctl volume inspect db --format json-pretty')
    .action(async (name: string, opts: { format: string }, self: Command) => (await import('./action.js')).inspect(ctx, dataDirOf(self, 'read'), name, opts))
}
