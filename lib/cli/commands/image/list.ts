/** podctl image list: the images of the store, one row per name. */
import type { Command } from 'commander'
import type { Context } from '../../context.js'
import { addFormatOption, addLegendOptions, dataDirOf } from '../../options.js'
import type { ImageListOptions } from './options.js'

export const registerImageList = (image: Command, ctx: Context): void => {
  const cmd = image.command('list').alias('ls').description('list images: NAME, TAG, DIGEST (its first 12 hex digits), SIZE (unpacked), CREATED')
  addLegendOptions(addFormatOption(cmd, ctx).option('-q, --quiet', 'print the full digests only, one a line'))
    .addHelpText('after', '\nExamples:\n  $ podctl image list\n  $ podctl image list --format json')
    .action(async (opts: ImageListOptions, self: Command) => (await import('./action.js')).list(ctx, dataDirOf(self, 'read'), opts))
}
