/** podctl rm: remove pods that are not running. */
import type { Command } from 'commander'
import type { CommandSpec } from '../command-spec.js'
import type { Context } from '../context.js'
import { dataDirOf } from '../options.js'

export const rm: CommandSpec = {
  name: 'rm',
  description: 'remove pods that are not running; prints each removed UUID',
  define: (cmd: Command, ctx: Context): void => {
    cmd
      .argument('[uuid...]', 'pod UUIDs or unambiguous prefixes')
      .option('--uuid-file <file>', 'also remove the pod whose UUID is in this file')
      .addHelpText('after', '\nExamples:\n  $ podctl rm 8c3b1f0e\n  $ podctl rm --uuid-file web.uuid')
      .action(async (uuids: string[], opts: { uuidFile?: string }, self: Command) => (await import('../actions/rm.js')).rm(ctx, dataDirOf(self, 'write'), uuids, opts))
  },
}
