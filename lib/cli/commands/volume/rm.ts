/** podctl volume rm: remove persistent volumes that no running pod uses. */
import type { Command } from 'commander'
import type { Context } from '../../context.js'
import { dataDirOf } from '../../options.js'

export const registerVolumeRm = (volume: Command, ctx: Context): void => {
  volume
    .command('rm')
    .description('remove persistent volumes and their data; a volume a running pod uses is refused (exit 4); prints each removed name')
    .argument('<name...>', 'volume names')
    .addHelpText('after', '\nExamples:\n  $ podctl volume rm db\n  $ podctl volume rm cache scratch')
    .action(async (names: string[], _opts: unknown, self: Command) => (await import('./action.js')).rm(ctx, dataDirOf(self, 'write'), names))
}
