/** podctl image prune: delete what no name and no pod uses. */
import type { Command } from 'commander'
import type { Context } from '../../context.js'
import { addFormatOption, dataDirOf } from '../../options.js'
import type { ImagePruneOptions } from './options.js'

export const registerImagePrune = (image: Command, ctx: Context): void => {
  const cmd = image
    .command('prune')
    .description('delete images that have no name and no pod uses, the blobs and renders nothing uses, and what killed imports left; prints each image deleted')
  addFormatOption(cmd, ctx)
    .addHelpText('after', '\nExamples:\n  $ podctl image prune\n  $ podctl image prune --format json')
    .action(async (opts: ImagePruneOptions, self: Command) => (await import('./action.js')).prune(ctx, dataDirOf(self, 'write'), opts))
}
