/** podctl cat-manifest: print a pod's manifest as stored. */
import { Option, type Command } from 'commander'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { dataDirOf } from '../../options.js'
import type { CatManifestOptions } from './options.js'

export const catManifest: CommandSpec = {
  name: 'cat-manifest',
  description: "print a pod's manifest as stored",
  define: (cmd: Command, ctx: Context): void => {
    cmd
      .argument('<uuid>', 'pod UUID or unambiguous prefix')
      .option('--pretty-print', 'indent the JSON (rkt\'s flag; compact by default, as rkt prints it)')
      .addOption(new Option('--pretty', 'the same as --pretty-print').hideHelp())
      .addHelpText('after', '\nExample:\n  $ podctl cat-manifest 8c3b1f0e --pretty-print')
      .action(async (uuid: string, opts: CatManifestOptions, self: Command) =>
        (await import('./action.js')).catManifest(ctx, dataDirOf(self, 'read'), uuid, opts),
      )
  },
}
