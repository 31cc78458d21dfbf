/** podctl volume list: persistent volumes, as a table or JSON. */
import type { Command } from 'commander'
import type { Context } from '../../context.js'
import { addFormatOption, addLegendOptions, dataDirOf } from '../../options.js'
import type { VolumeListOptions } from './options.js'

export const registerVolumeList = (volume: Command, ctx: Context): void => {
  const cmd = volume.command('list').alias('ls').description('list persistent volumes: access mode, reclaim policy, size limit, the running pods using each')
  addLegendOptions(addFormatOption(cmd, ctx).option('--full', 'full pod UUIDs and RFC 3339 times'))
    .addHelpText('after', '\nExamples:\n  $ podctl volume list\n  $ podctl volume list --format json')
    .action(async (opts: VolumeListOptions, self: Command) => (await import('./action.js')).list(ctx, dataDirOf(self, 'read'), opts))
}
