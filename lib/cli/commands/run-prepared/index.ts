/** podctl run-prepared: run a prepared pod, in the foreground or detached. */
import type { Command } from 'commander'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { dataDirOf, durationOption, fleetOf, provisionersDirOption } from '../../options.js'
import type { RunPreparedOptions } from './options.js'

export const runPrepared: CommandSpec = {
  name: 'run-prepared',
  description: "run a prepared pod; in the foreground podctl streams the apps' output and exits with the pod's exit code",
  define: (cmd: Command, ctx: Context): void => {
    cmd
      .argument('<uuid>', 'pod UUID or unambiguous prefix')
      .option('-d, --detach', 'return once the pod is running; the supervisor lives on')
      .addOption(durationOption('--timeout <duration>', "how long to wait for a running controller to bind the pod's volume claims", '5m'))
      .addOption(provisionersDirOption())
      .addHelpText('after', '\nExamples:\n  $ podctl run-prepared 8c3b1f0e\n  $ podctl run-prepared --detach 8c3b1f0e')
      .action(async (uuid: string, opts: RunPreparedOptions, self: Command) =>
        (await import('./action.js')).runPrepared(ctx, dataDirOf(self, 'write'), uuid, opts, fleetOf(self)),
      )
  },
}
