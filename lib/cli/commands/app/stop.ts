/** podctl app stop: stop one app of a running mutable pod. */
import type { Command } from 'commander'
import { parseNonNegativeDuration } from '../../../duration.js'
import { dataDirOf, type Context } from '../../context.js'

export const registerAppStop = (app: Command, _ctx: Context): void => {
  app
    .command('stop')
    .description('stop one app of a running mutable pod (SIGTERM, SIGKILL after the timeout); returns once it has exited')
    .argument('<uuid>', 'pod UUID or unambiguous prefix')
    .argument('<name>', 'app name')
    .option('--timeout <duration>', 'time between SIGTERM and SIGKILL', '10s')
    .addHelpText('after', '\nExample:\n  $ podctl app stop 8c3b1f0e worker --timeout 5s')
    .action(async (uuid: string, name: string, opts: { timeout: string }, self: Command) => {
      const timeoutMs = parseNonNegativeDuration(opts.timeout, '--timeout')
      const [{ podFromUUIDString }, { stopApp }] = await Promise.all([import('../../../pod/pod.js'), import('../../../run/apps.js')])
      await stopApp(podFromUUIDString(dataDirOf(self), uuid), name, timeoutMs)
    })
}
