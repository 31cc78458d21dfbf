/** podctl run: prepare and run a pod, in the foreground or detached. */
import type { Command } from 'commander'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { addPodInputOptions, dataDirOf, fleetOf, durationOption, provisionersDirOption, runtimeOf } from '../../options.js'
import type { RunOptions } from './options.js'

export const run: CommandSpec = {
  name: 'run',
  description: "prepare and run a pod; in the foreground podctl streams the apps' output and exits with the pod's exit code",
  define: (cmd: Command, ctx: Context): void => {
    addPodInputOptions(cmd)
      .option('-d, --detach', 'return once the pod is running and print its UUID; the supervisor lives on')
      .option('-q, --quiet', 'with --detach: print the UUID only (all it prints; for podman and rkt scripts)')
      .addOption(durationOption('--timeout <duration>', "how long to wait for a running controller to bind the pod's volume claims", '5m'))
      .addOption(provisionersDirOption())
      .addHelpText(
        'after',
        `
Examples:
  $ podctl run -- sh -c 'echo hi; exit 3'     # prints hi, exits 3
  $ podctl run --detach -- sleep 300          # prints the UUID
  $ podctl run --manifest web.json --uuid-file-save web.uuid`,
      )
      .action(async (command: string[], opts: RunOptions, self: Command) =>
        (await import('./action.js')).run(ctx, dataDirOf(self, 'write'), command, { ...opts, runtime: runtimeOf(self) }, fleetOf(self)),
      )
  },
}
