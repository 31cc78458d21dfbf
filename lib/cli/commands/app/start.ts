/** podctl app start: start an app of a running mutable pod. */
import type { Command } from 'commander'
import { dataDirOf, type Context } from '../../context.js'

export const registerAppStart = (app: Command, _ctx: Context): void => {
  app
    .command('start')
    .description('start an app of a running mutable pod; returns once it runs')
    .argument('<uuid>', 'pod UUID or unambiguous prefix')
    .argument('<name>', 'app name')
    .addHelpText('after', '\nExample:\n  $ podctl app start 8c3b1f0e worker')
    .action(async (uuid: string, name: string, _opts: unknown, self: Command) => {
      const [{ podFromUUIDString }, { startApp }] = await Promise.all([import('../../../pod/pod.js'), import('../../../run/apps.js')])
      await startApp(podFromUUIDString(dataDirOf(self), uuid), name)
    })
}
