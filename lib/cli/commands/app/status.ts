/** podctl app status: one app of a pod. */
import { Option, type Command } from 'commander'
import { PodctlError } from '../../../errors.js'
import { dataDirOf, FORMATS, type Context } from '../../context.js'
import { isJson, toJson } from '../../output.js'

export const registerAppStatus = (app: Command, ctx: Context): void => {
  app
    .command('status')
    .description('show the status of one app of a pod')
    .argument('<uuid>', 'pod UUID or unambiguous prefix')
    .argument('<name>', 'app name')
    .addOption(new Option('--format <format>', 'output format (table means key=value lines)').choices(FORMATS).default('table'))
    .addHelpText('after', '\nExample:\n  $ podctl app status 8c3b1f0e worker')
    .action(async (uuid: string, name: string, opts: { format: string }, self: Command) => {
      ctx.state.format = opts.format
      const [{ podFromUUIDString }, { podView }] = await Promise.all([import('../../../pod/pod.js'), import('../../../pod/view.js')])
      const v = podView(podFromUUIDString(dataDirOf(self), uuid))
      const a = v.apps.find((x) => x.name === name)
      if (!a) {
        const short = v.uuid.slice(0, 8)
        throw new PodctlError('ENOPOD', `pod ${short} has no app named ${JSON.stringify(name)}`, `see podctl app list ${short}`)
      }
      if (isJson(opts.format)) {
        ctx.io.out(toJson(a, opts.format))
        return
      }
      const lines = [`name=${a.name}`, `type=${a.type}`, `state=${a.state}`]
      if (a.pid !== null) lines.push(`pid=${a.pid}`)
      if (a.started_at) lines.push(`started=${a.started_at}`)
      if (a.finished_at) lines.push(`finished=${a.finished_at}`)
      if (a.exit_code !== null) lines.push(`exit_code=${a.exit_code}`)
      ctx.io.out(`${lines.join('\n')}\n`)
    })
}
