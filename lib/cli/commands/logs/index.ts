/** podctl logs: an app's output, kept in the pod. */
import type { Command } from 'commander'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { dataDirOf } from '../../options.js'
import type { LogsOptions } from './options.js'

export const logs: CommandSpec = {
  name: 'logs',
  description: "print the apps' output (stdout and stderr), each line prefixed with the app name when several apps are shown",
  define: (cmd: Command, ctx: Context): void => {
    cmd
      .argument('<uuid>', 'pod UUID or unambiguous prefix')
      .option('--app <name>', 'only this app')
      .option('-f, --follow', 'keep printing new output until the pod has exited')
      .option('--tail <n>', 'only the last N lines of each app')
      .option('--since <duration|time>', 'only lines that arrived since then: a duration back from now (10m) or a time (2026-11-25T16:00:00Z)')
      .option('-t, --timestamps', 'prefix each line with the time it arrived (RFC 3339, UTC)')
      .addHelpText('after', '\nExamples:\n  $ podctl logs 8c3b1f0e\n  $ podctl logs 8c3b1f0e --app web --tail 20 --follow\n  $ podctl logs 8c3b1f0e --since 10m --timestamps')
      .action(async (uuid: string, opts: LogsOptions, self: Command) => (await import('./action.js')).logs(ctx, dataDirOf(self, 'read'), uuid, opts))
  },
}
