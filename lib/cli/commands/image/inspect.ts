/** podctl image inspect: one image and its config (the defaults its apps get). */
import type { Command } from 'commander'
import type { Context } from '../../context.js'
import { addFormatOption, dataDirOf } from '../../options.js'
import type { ImageInspectOptions } from './options.js'

export const registerImageInspect = (image: Command, ctx: Context): void => {
  const cmd = image
    .command('inspect')
    .description('show one image: its digest, names, layers, and its config (entrypoint, cmd, env, working dir, user, labels)')
    .argument('<image>', 'NAME[:TAG], or a digest (12 or more of its hex digits)')
  addFormatOption(cmd, ctx, 'output format (table means key=value lines)')
    .addHelpText('after', '\nExamples:\n  $ podctl image inspect alpine:3\n  $ podctl image inspect 5a6f4a0a8cde --format json-pretty')
    .action(async (text: string, opts: ImageInspectOptions, self: Command) => (await import('./action.js')).inspect(ctx, dataDirOf(self, 'read'), text, opts))
}
