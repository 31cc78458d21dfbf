/** podctl rm: remove pods that are not running. */
import type { Command } from 'commander'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { dataDirOf } from '../../options.js'
import type { RmOptions } from './options.js'

export const rm: CommandSpec = {
  name: 'rm',
  description: 'remove pods that are not running; prints each removed UUID',
  define: (cmd: Command, ctx: Context): void => {
    cmd
      .argument('[uuid...]', 'pod UUIDs or unambiguous prefixes')
      .option('--uuid-file <file>', 'also remove the pod whose UUID is in this file')
      .option('-a, --all', 'every pod that is not running (nor being prepared or removed by another process); with --force, running ones too')
      .option('-f, --force', 'stop running pods first (SIGKILL at once), then remove them')
      .addHelpText('after', '\nExamples:\n  $ podctl rm 8c3b1f0e\n  $ podctl rm --uuid-file web.uuid\n  $ podctl rm --all\n  $ podctl rm -f 8c3b1f0e')
      .action(async (uuids: string[], opts: RmOptions, self: Command) => (await import('./action.js')).rm(ctx, dataDirOf(self, 'write'), uuids, opts))
  },
}
