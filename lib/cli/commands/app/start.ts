/** podctl app start: start an app of a running mutable pod. */
import type { Command } from 'commander'
import type { Context } from '../../context.js'
import { dataDirOf } from '../../options.js'

export const registerAppStart = (app: Command, ctx: Context): void => {
  app
    .command('start')
    .description('start an app of a running mutable pod; returns once it runs')
    .argument('<uuid>', 'pod UUID or unambiguous prefix')
    .argument('<name>', 'app name')
    .addHelpText('after', '\nExample:\n  $ podctl app start 8c3b1f0e worker')
    .action(async (uuid: string, name: string, _opts: unknown, self: Command) => (await import('./action.js')).start(ctx, dataDirOf(self, 'write'), uuid, name))
}
