/** podctl volume claim: requests for volumes, bound to one each (CONTRACT §8). */
import { Option, type Command } from 'commander'
import { ACCESS_MODE_NAMES } from '../../../../storage/access-modes.js'
import type { Context } from '../../../context.js'
import { addFormatOption, addLegendOptions, dataDirOf, fleetOf, provisionersDirOption } from '../../../options.js'
import type { LegendOptions } from '../../../output.js'
import type { ClaimCreateOptions } from './options.js'

const actions = () => import('./action.js')

export const registerVolumeClaim = (volume: Command, ctx: Context): void => {
  const claim = volume
    .command('claim')
    .description('volume claims: requests for a volume, bound to an available one or provisioned through a class (create, list, inspect, rm)')
    .addHelpText(
      'after',
      `
Examples:
  $ podctl volume claim create db --class standard --size 1Gi
  $ podctl volume claim list
  $ podctl volume claim inspect db --format json
  $ podctl volume claim rm db

A pod names a claim in its manifest: {"name": "data", "kind": "persistent", "claim": "db"}.

Documentation: Documentation/subcommands/volume.md`,
    )
  const create = claim
    .command('create')
    .description('create a claim (pending until a pod needs it or a controller binds it); prints its name')
    .argument('<name>', 'claim name: 1 to 63 characters of a-z, 0-9 and "-"')
    .option('--class <class>', 'the volume class to provision through (default: the default class, if any)')
    .option('--size <bytes>', 'the size asked for (e.g. 512M, 1Gi)')
    .addOption(new Option('--access-mode <mode>', 'ReadWriteOnce (RWO) or ReadWriteMany (RWX)').choices(Object.keys(ACCESS_MODE_NAMES)).default('ReadWriteOnce'))
  addFormatOption(create, ctx).action(async (name: string, opts: ClaimCreateOptions, self: Command) => (await actions()).claimCreate(ctx, dataDirOf(self, 'write'), name, opts, fleetOf(self)))
  addLegendOptions(addFormatOption(claim.command('list').description('list volume claims'), ctx)).action(async (opts: { format: string } & LegendOptions, self: Command) =>
    (await actions()).claimList(ctx, dataDirOf(self, 'read'), opts, fleetOf(self)),
  )
  addFormatOption(claim.command('inspect').description('show a volume claim, with its events').argument('<name>', 'claim name'), ctx).action(
    async (name: string, opts: { format: string }, self: Command) => (await actions()).claimInspect(ctx, dataDirOf(self, 'read'), name, opts, fleetOf(self)),
  )
  claim
    .command('rm')
    .description('remove claims; their volumes are released to their reclaim policy; a claim used by a pod that is not removed is refused (exit 4)')
    .argument('<name...>', 'claim names')
    .addOption(provisionersDirOption())
    .action(async (names: string[], opts: { provisionersDir?: string }, self: Command) => (await actions()).claimRm(ctx, dataDirOf(self, 'write'), names, opts, fleetOf(self)))
}
