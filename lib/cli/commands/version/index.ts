/** podctl version: versions of podctl, node and the on-disk format. */
import type { Command } from 'commander'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { addFormatOption } from '../../options.js'
import { versionText } from '../../version-info.js'

export const version: CommandSpec = {
  name: 'version',
  description: 'print the versions of podctl, node and the on-disk format',
  define: (cmd: Command, ctx: Context): void => {
    addFormatOption(cmd, ctx)
      .addHelpText('after', '\nExample:\n  $ podctl version --format json')
      .action((opts: { format: string }) => ctx.io.out(versionText(opts.format)))
  },
}
