/** podctl app rm: remove an app from a mutable pod. */
import type { Command } from 'commander'
import type { Context } from '../../context.js'
import { dataDirOf } from '../../options.js'

export const registerAppRm = (app: Command, ctx: Context): void => {
  app
    .command('rm')
    .description('remove an app from a mutable pod, stopping it first if it runs')
    .argument('<uuid>', 'pod UUID or unambiguous prefix')
    .argument('<name>', 'app name')
    .addHelpText('after', '\nExample:\n  $ podctl app rm 8c3b1f0e worker')
    .action(async (uuid: string, name: string, _opts: unknown, self: Command) => (await import('./action.js')).rm(ctx, dataDirOf(self, 'write'), uuid, name))
}
