/** podctl volume class: how volumes are made for claims (CONTRACT §8). */
import { Option, type Command } from 'commander'
import type { Context } from '../../../context.js'
import { addFormatOption, addLegendOptions, collect, dataDirOf, fleetOf } from '../../../options.js'
import type { LegendOptions } from '../../../output.js'
import type { ClassCreateOptions } from './options.js'

const actions = () => import('./action.js')

export const registerVolumeClass = (volume: Command, ctx: Context): void => {
  const cls = volume
    .command('class')
    .description('volume classes: how volumes are provisioned for claims (create, list, inspect, rm)')
    .addHelpText(
      'after',
      `
Examples:
  $ podctl volume class create standard --provisioner local --default
  $ podctl volume class create fast --provisioner exec:dir --param root=/srv/volumes

exec:NAME runs the program /etc/podctl/provisioners/NAME of the node that
provisions (or the one in its --provisioners-dir); a class of a data dir may
also name a program by its path, exec:/abs/path. --param root=DIR pins the
provisioner's answers below DIR.
  $ podctl volume class list

Documentation: Documentation/subcommands/volume.md`,
    )
  const create = cls
    .command('create')
    .description('create a volume class; prints its name')
    .argument('<name>', 'class name: 1 to 63 characters of a-z, 0-9 and "-"')
    .requiredOption('--provisioner <provisioner>', '"local" (a directory under the data dir), or "exec:NAME" (the program /etc/podctl/provisioners/NAME of each node) or, without --cluster, "exec:/abs/path"')
    .option('--param <key=value>', 'a parameter for the provisioner (repeatable); local: sizeLimit, and node=NAME in a fleet (--cluster); exec: timeout, root=DIR (answers must be below it) and its own', collect)
    .addOption(new Option('--reclaim <policy>', 'what happens to a volume when its claim is removed').choices(['delete', 'retain', 'recycle']).default('delete'))
    .option('--default', 'used by claims that name no class')
  addFormatOption(create, ctx).action(async (name: string, opts: ClassCreateOptions, self: Command) => (await actions()).classCreate(ctx, dataDirOf(self, 'write'), name, opts, fleetOf(self)))
  addLegendOptions(addFormatOption(cls.command('list').description('list volume classes'), ctx)).action(async (opts: { format: string } & LegendOptions, self: Command) =>
    (await actions()).classList(ctx, dataDirOf(self, 'read'), opts, fleetOf(self)),
  )
  addFormatOption(cls.command('inspect').description('show a volume class').argument('<name>', 'class name'), ctx).action(async (name: string, opts: { format: string }, self: Command) =>
    (await actions()).classInspect(ctx, dataDirOf(self, 'read'), name, opts, fleetOf(self)),
  )
  cls
    .command('rm')
    .description('remove volume classes; one still used by claims is refused (exit 4); prints each removed name')
    .argument('<name...>', 'class names')
    .action(async (names: string[], _opts: unknown, self: Command) => (await actions()).classRm(ctx, dataDirOf(self, 'write'), names, fleetOf(self)))
}
