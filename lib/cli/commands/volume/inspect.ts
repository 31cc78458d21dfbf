/** podctl volume inspect: one persistent volume, with its usage and claims. */
import { Option, type Command } from 'commander'
import { dataDirOf, FORMATS, type Context } from '../../context.js'
import { isJson, toJson } from '../../output.js'

export const registerVolumeInspect = (volume: Command, ctx: Context): void => {
  volume
    .command('inspect')
    .description('show one persistent volume: settings, usage (bytes, inodes, capacity, available) and the pods bound to it')
    .argument('<name>', 'volume name')
    .addOption(new Option('--format <format>', 'output format (table means key=value lines)').choices(FORMATS).default('table'))
    .addHelpText('after', '\nExamples:\n  $ podctl volume inspect db\n  $ podctl volume inspect db --format json-pretty')
    .action(async (name: string, opts: { format: string }, self: Command) => {
      ctx.state.format = opts.format
      const { pvInspect, pvInspectLines } = await import('../../../volume/pv-view.js')
      const v = pvInspect(dataDirOf(self), name)
      ctx.io.out(isJson(opts.format) ? toJson(v, opts.format) : pvInspectLines(v))
    })
}
