/** podctl logs: an app's output, kept in the pod. */
import type { Command } from 'commander'
import { PodctlError } from '../../errors.js'
import { dataDirOf, type Context } from '../context.js'

interface LogsOptions {
  app?: string
  follow?: boolean
  tail?: string
}

export const registerLogs = (program: Command, ctx: Context): void => {
  program
    .command('logs')
    .description("print the apps' output (stdout and stderr), each line prefixed with the app name when several apps are shown")
    .argument('<uuid>', 'pod UUID or unambiguous prefix')
    .option('--app <name>', 'only this app')
    .option('--follow', 'keep printing new output until the pod has exited')
    .option('--tail <n>', 'only the last N lines of each app')
    .addHelpText('after', '\nExamples:\n  $ podctl logs 8c3b1f0e\n  $ podctl logs 8c3b1f0e --app web --tail 20 --follow')
    .action(async (uuid: string, opts: LogsOptions, self: Command) => {
      let tail: number | undefined
      if (opts.tail !== undefined) {
        if (!/^\d+$/.test(opts.tail)) throw new PodctlError('EUSAGE', `invalid --tail ${JSON.stringify(opts.tail)}: expected a whole number of lines`)
        tail = Number(opts.tail)
      }
      const [{ podFromUUIDString }, { readAppLog, tailLines, prefixLines, followLogs }] = await Promise.all([
        import('../../pod/pod.js'),
        import('../../run/logs.js'),
      ])
      const pod = podFromUUIDString(dataDirOf(self), uuid)
      let apps = pod.record().apps.map((a) => a.name)
      if (opts.app !== undefined) {
        if (!apps.includes(opts.app)) {
          throw new PodctlError('ENOPOD', `pod ${pod.uuid.slice(0, 8)} has no app named ${JSON.stringify(opts.app)}`, `its apps: ${apps.join(', ') || 'none'}`)
        }
        apps = [opts.app]
      }
      const several = apps.length > 1
      for (const app of apps) ctx.io.out(prefixLines(tailLines(readAppLog(pod, app), tail), several ? app : undefined))
      if (opts.follow) {
        await followLogs(pod, apps, (app, text) => ctx.io.out(prefixLines(text, several ? app : undefined)))
      }
    })
}
