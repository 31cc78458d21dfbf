/** podctl app sandbox: a running mutable pod with no apps yet. */
import type { Command } from 'commander'
import type { Context } from '../../context.js'
import { dataDirOf } from '../../options.js'
import type { AppSandboxOptions } from './options.js'

export const registerAppSandbox = (app: Command, ctx: Context): void => {
  app
    .command('sandbox')
    .description('start a mutable pod with no apps; it runs until stopped (podctl stop)')
    .option('--name <name>', 'pod name')
    .option('--detach', 'return once the pod is running and print its UUID')
    .option('--uuid-file-save <file>', 'also write the pod UUID to this file')
    .addHelpText('after', '\nExamples:\n  $ podctl app sandbox --detach --name tools\n  $ podctl app sandbox          # foreground: streams the output of the apps added later')
    .action(async (opts: AppSandboxOptions, self: Command) =>
      (await import('./action.js')).sandbox(ctx, dataDirOf(self, 'write'), opts),
    )
}
