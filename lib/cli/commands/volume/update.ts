/** podctl volume update: new content for a running pod's files volume, swapped in atomically. */
import type { Command } from 'commander'
import type { Context } from '../../context.js'
import { collect, dataDirOf, durationOption } from '../../options.js'
import type { UpdateOptions } from './options.js'

export const registerVolumeUpdate = (volume: Command, ctx: Context): void => {
  volume
    .command('update')
    .description("replace the content of a running pod's files volume; apps see the old files or the new ones, never a mix")
    .argument('<uuid>', 'pod UUID or unambiguous prefix')
    .argument('<volume>', 'name of a files volume of the pod')
    .option('--from-file <REL=PATH>', 'file PATH becomes REL in the volume (PATH alone: its base name); repeatable', collect)
    .option('--from-dir <dir>', 'every regular file below DIR, by its path relative to DIR')
    .option('--no-wait', 'refuse (exit 4) instead of waiting while another operation on the volume is pending')
    .addOption(durationOption('--timeout <duration>', 'how long to wait for a pending operation (exit 5 after)', '30s'))
    .addHelpText(
      'after',
      `
The new content replaces the old as a whole: files not given are removed.

Examples:
  $ podctl volume update 8c3b1f0e config --from-file app.conf=./app.conf --from-file certs/ca.pem=/etc/ssl/ca.pem
  $ podctl volume update 8c3b1f0e config --from-dir ./config`,
    )
    .action(async (uuid: string, name: string, opts: UpdateOptions, self: Command) =>
      (await import('./action.js')).update(ctx, dataDirOf(self, 'write'), uuid, name, opts),
    )
}
