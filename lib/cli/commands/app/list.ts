/** podctl app list: the apps of a pod. */
import type { Command } from 'commander'
import type { Context } from '../../context.js'
import { addFormatOption, addLegendOptions, dataDirOf } from '../../options.js'
import type { AppListOptions } from './options.js'

export const registerAppList = (app: Command, ctx: Context): void => {
  const cmd = app.command('list').description('list the apps of a pod').argument('<uuid>', 'pod UUID or unambiguous prefix')
  addLegendOptions(addFormatOption(cmd, ctx))
    .addHelpText('after', '\nExample:\n  $ podctl app list 8c3b1f0e --format json')
    .action(async (uuid: string, opts: AppListOptions, self: Command) =>
      (await import('./action.js')).list(ctx, dataDirOf(self, 'read'), uuid, opts),
    )
}
