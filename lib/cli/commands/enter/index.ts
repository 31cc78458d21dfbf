/** podctl enter: run a command inside a running isolated pod (rkt enter, podman exec). */
import type { Command } from 'commander'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { dataDirOf } from '../../options.js'
import type { EnterCommandOptions } from './options.js'

export const enter: CommandSpec = {
  name: 'enter',
  aliases: ['exec'],
  description: "run a command in a running isolated pod, in one app's container (its namespaces, root, user, capabilities, seccomp, limits); exits with the command's exit code",
  define: (cmd: Command, ctx: Context): void => {
    cmd
      .argument('<uuid>', 'pod UUID or unambiguous prefix')
      .argument('[command...]', 'after --: the program and its arguments')
      .option('--app <name>', "the app whose container the command joins (default: the pod's only running app)")
      .option('-t, --tty', 'give the command a terminal')
      .addHelpText('after', '\nExamples:\n  $ podctl enter 8c3b1f0e -- ps\n  $ podctl enter 8c3b1f0e --app web -t -- sh')
      .action(async (uuid: string, command: string[], opts: EnterCommandOptions, self: Command) =>
        (await import('./action.js')).enter(ctx, dataDirOf(self, 'write'), uuid, command, opts),
      )
  },
}
