/** podctl inspect: the JSON of status (podman's inspect), pretty unless --format json; status's action prints it. */
import { Option, type Command } from 'commander'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { dataDirOf } from '../../options.js'
import type { InspectOptions } from './options.js'

export const inspect: CommandSpec = {
  name: 'inspect',
  description: 'show one pod as JSON (what status --format json-pretty prints)',
  define: (cmd: Command, ctx: Context): void => {
    cmd
      .argument('<uuid>', 'pod UUID or unambiguous prefix')
      .addOption(new Option('--format <format>', 'json-pretty, or json for one line').choices(['json', 'json-pretty']).default('json-pretty'))
      .on('option:format', (value: string) => {
        ctx.state.format = value
      })
      .addHelpText('after', '\nExamples:\n  $ podctl inspect 8c3b1f0e\n  $ podctl inspect 8c3b1f0e --format json | jq .state')
      .action(async (uuid: string, opts: InspectOptions, self: Command) => {
        // The first error is printed as JSON too, as status does for --format json.
        ctx.state.format ??= opts.format
        return (await import('../status/action.js')).status(ctx, dataDirOf(self, 'read'), uuid, { format: opts.format })
      })
  },
}
