/** podctl app list: the apps of a pod. */
import { Option, type Command } from 'commander'
import { dataDirOf, FORMATS, type Context } from '../../context.js'
import { formatTable, isJson, toJson } from '../../output.js'

export const registerAppList = (app: Command, ctx: Context): void => {
  app
    .command('list')
    .description('list the apps of a pod')
    .argument('<uuid>', 'pod UUID or unambiguous prefix')
    .addOption(new Option('--format <format>', 'output format').choices(FORMATS).default('table'))
    .option('--no-legacy', 'no header line')
    .addHelpText('after', '\nExample:\n  $ podctl app list 8c3b1f0e --format json')
    .action(async (uuid: string, opts: { format: string; legacy: boolean }, self: Command) => {
      ctx.state.format = opts.format
      const [{ podFromUUIDString }, { podView }] = await Promise.all([import('../../../pod/pod.js'), import('../../../pod/view.js')])
      const apps = podView(podFromUUIDString(dataDirOf(self), uuid)).apps
      if (isJson(opts.format)) {
        ctx.io.out(toJson(apps, opts.format))
        return
      }
      const rows = apps.map((a) => [a.name, a.type, a.state, a.pid === null ? '-' : String(a.pid), a.exit_code === null ? '-' : String(a.exit_code)])
      ctx.io.out(formatTable(opts.legacy ? ['NAME', 'TYPE', 'STATE', 'PID', 'EXIT'] : undefined, rows))
    })
}
