/** podctl app status: one app of a pod. */
import type { Command } from 'commander'
import type { Context } from '../../context.js'
import { addFormatOption, dataDirOf } from '../../options.js'
import type { AppStatusOptions } from './options.js'

export const registerAppStatus = (app: Command, ctx: Context): void => {
  const cmd = app
    .command('status')
    .description('show the status of one app of a pod')
    .argument('<uuid>', 'pod UUID or unambiguous prefix')
    .argument('<name>', 'app name')
  addFormatOption(cmd, ctx, 'output format (table means key=value lines)')
    .addHelpText('after', '\nExample:\n  $ podctl app status 8c3b1f0e worker')
    .action(async (uuid: string, name: string, opts: AppStatusOptions, self: Command) =>
      (await import('./action.js')).status(ctx, dataDirOf(self, 'read'), uuid, name, opts),
    )
}
