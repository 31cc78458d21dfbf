/** podctl version: versions of podctl, node and the on-disk format. */
import { Option, type Command } from 'commander'
import type { Context } from '../context.js'
import { versionText } from '../version-info.js'

export const registerVersion = (program: Command, ctx: Context): void => {
  program
    .command('version')
    .description('print the versions of podctl, node and the on-disk format')
    .addOption(new Option('--format <format>', 'output format').choices(['table', 'json', 'json-pretty']).default('table'))
    .addHelpText('after', '\nExample:\n  $ podctl version --format json')
    .action((opts: { format: string }) => {
      ctx.state.format = opts.format
      ctx.io.out(versionText(opts.format))
    })
}
