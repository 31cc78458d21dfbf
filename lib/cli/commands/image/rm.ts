/** podctl image rm: remove image names, and images left without one. */
import type { Command } from 'commander'
import type { Context } from '../../context.js'
import { dataDirOf } from '../../options.js'
import type { ImageRmOptions } from './options.js'

export const registerImageRm = (image: Command, ctx: Context): void => {
  image
    .command('rm')
    .alias('rmi')
    .description('remove images by name (that name) or digest (every name); an image left without a name that no pod uses is deleted. An image a pod uses is refused (exit 4) unless --force, which removes the name only')
    .argument('<image...>', 'NAME[:TAG], or a digest (12 or more of its hex digits)')
    .option('-f, --force', 'remove the name even if pods use the image (the image stays until they are gone)')
    .addHelpText('after', '\nExamples:\n  $ podctl image rm alpine:3\n  $ podctl image rm --force web:v1 web:v2')
    .action(async (texts: string[], opts: ImageRmOptions, self: Command) => (await import('./action.js')).rm(ctx, dataDirOf(self, 'write'), texts, opts))
}
