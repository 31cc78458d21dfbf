/** podctl volume create: a persistent volume. */
import { Option, type Command } from 'commander'
import { ACCESS_MODE_NAMES } from '../../../storage/access-modes.js'
import type { Context } from '../../context.js'
import { addFormatOption, dataDirOf } from '../../options.js'
import type { CreateOptions } from './options.js'

export const registerVolumeCreate = (volume: Command, ctx: Context): void => {
  const cmd = volume
    .command('create')
    .description('create a persistent volume: a named volume that outlives pods (manifest: {"kind": "persistent", "claim": NAME}); prints its name')
    .argument('<name>', 'volume name: 1 to 63 characters of a-z, 0-9 and "-"')
    .addOption(new Option('--reclaim <policy>', 'what happens when the last pod bound to it is removed').choices(['retain', 'delete', 'recycle']).default('retain'))
    .option('--size-limit <bytes>', 'usage limit, checked when a pod claims it (e.g. 1048576, 512M, 1Gi)')
    .addOption(new Option('--access-mode <mode>', 'ReadWriteOnce (RWO): one running pod at a time; ReadWriteMany (RWX): several').choices(Object.keys(ACCESS_MODE_NAMES)).default('ReadWriteOnce'))
  addFormatOption(cmd, ctx, 'output format (table prints the name)')
    .addHelpText('after', '\nExamples:\n  $ podctl volume create db\n  $ podctl volume create scratch --reclaim recycle --size-limit 512M --access-mode ReadWriteMany')
    .action(async (name: string, opts: CreateOptions, self: Command) => (await import('./action.js')).create(ctx, dataDirOf(self, 'write'), name, opts))
}
