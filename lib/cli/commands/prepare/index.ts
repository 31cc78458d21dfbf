/** podctl prepare: create a pod and leave it prepared; prints its UUID. */
import type { Command } from 'commander'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { addPodInputOptions, dataDirOf, fleetOf, runtimeOf } from '../../options.js'
import type { PrepareOptions } from './options.js'

export const prepare: CommandSpec = {
  name: 'prepare',
  description: 'create a pod from a manifest or a command, and leave it prepared; stdout is the UUID and nothing else',
  define: (cmd: Command, ctx: Context): void => {
    addPodInputOptions(cmd)
      .option('-q, --quiet', 'print the UUID only (all prepare prints; for rkt and podman scripts)')
      .addHelpText(
        'after',
        `
Examples:
  $ podctl prepare -- sleep 60
  $ podctl prepare --manifest web.json --uuid-file-save web.uuid
  $ cat web.json | podctl prepare --manifest - --env LOG_LEVEL=debug`,
      )
      .action(async (command: string[], opts: PrepareOptions, self: Command) =>
        (await import('./action.js')).prepare(ctx, dataDirOf(self, 'write'), command, { ...opts, runtime: runtimeOf(self) }, fleetOf(self)),
      )
  },
}
