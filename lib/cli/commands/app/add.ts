/** podctl app add: add an app to a mutable pod. */
import type { Command } from 'commander'
import type { Context } from '../../context.js'
import { collect, dataDirOf } from '../../options.js'
import type { AppAddOptions } from './options.js'

export const registerAppAdd = (app: Command, ctx: Context): void => {
  app
    .command('add')
    .description('add an app to a running mutable pod (created, not started: see app start)')
    .argument('<uuid>', 'pod UUID or unambiguous prefix')
    .argument('[command...]', 'after --: the program and its arguments')
    .requiredOption('-n, --name <name>', 'app name, unique in the pod')
    .option('--ephemeral', 'an ephemeral app: never decides the pod exit code')
    .option('-e, --env <KEY=VALUE>', 'environment variable (repeatable)', collect)
    .addHelpText('after', '\nExample:\n  $ podctl app add 8c3b1f0e --name worker --env QUEUE=jobs -- node worker.js')
    .action(async (uuid: string, command: string[], opts: AppAddOptions, self: Command) =>
      (await import('./action.js')).add(ctx, dataDirOf(self, 'write'), uuid, command, opts),
    )
}
