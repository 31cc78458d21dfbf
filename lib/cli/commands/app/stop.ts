/** podctl app stop: stop one app of a running mutable pod. */
import type { Command } from 'commander'
import type { Context } from '../../context.js'
import { dataDirOf, durationOption } from '../../options.js'
import type { AppStopOptions } from './options.js'

export const registerAppStop = (app: Command, ctx: Context): void => {
  app
    .command('stop')
    .description('stop one app of a running mutable pod (SIGTERM, SIGKILL after the timeout); returns once it has exited')
    .argument('<uuid>', 'pod UUID or unambiguous prefix')
    .argument('<name>', 'app name')
    .addOption(durationOption('--timeout <duration>', 'time between SIGTERM and SIGKILL', '10s'))
    .addHelpText('after', '\nExample:\n  $ podctl app stop 8c3b1f0e worker --timeout 5s')
    .action(async (uuid: string, name: string, opts: AppStopOptions, self: Command) =>
      (await import('./action.js')).stop(ctx, dataDirOf(self, 'write'), uuid, name, opts),
    )
}
