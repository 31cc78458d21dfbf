/** podctl stop: stop running pods. */
import type { Command } from 'commander'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { dataDirOf, durationOption } from '../../options.js'
import type { StopOptions } from './options.js'

export const stop: CommandSpec = {
  name: 'stop',
  description: 'stop running pods: SIGTERM to every app, SIGKILL after the timeout; returns when the pods have exited',
  define: (cmd: Command, ctx: Context): void => {
    cmd
      .argument('[uuid...]', 'pod UUIDs or unambiguous prefixes')
      .option('--uuid-file <file>', 'also stop the pod whose UUID is in this file')
      .option('-f, --force', 'SIGKILL at once')
      .addOption(durationOption('--timeout <duration>', 'time between SIGTERM and SIGKILL', '10s'))
      .addHelpText('after', '\nExamples:\n  $ podctl stop 8c3b1f0e\n  $ podctl stop --timeout 30s 8c3b1f0e 4a2d9e11')
      .action(async (uuids: string[], opts: StopOptions, self: Command) =>
        (await import('./action.js')).stop(ctx, dataDirOf(self, 'write'), uuids, opts),
      )
  },
}
