/** podctl list (ps, ls): all pods, as a table or JSON (CONTRACT §5). */
import { Option, type Command } from 'commander'
import { PodctlError, isPodctlError } from '../../../errors.js'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { addFormatOption, addLegendOptions, clusterOf, collect, dataDirOf } from '../../options.js'
import type { ListOptions } from './options.js'

export const list: CommandSpec = {
  name: 'list',
  aliases: ['ps', 'ls'],
  description: 'list all pods',
  define: (cmd: Command, ctx: Context): void => {
    addLegendOptions(addFormatOption(cmd, ctx).option('--full', 'full UUIDs and RFC 3339 times'))
      .option('--state <state>', 'only pods in this state (repeatable), e.g. running, exited, "exited garbage"', collect)
      .option('--filter <key=value>', 'only pods that match: state=, name= or app= (repeatable, or comma-separated; one key given twice matches either value)', collect)
      .addOption(new Option('--sort <field>', 'order by creation time, name or state').choices(['created', 'name', 'state']).default('created'))
      .option('-q, --quiet', 'print full UUIDs only, one per line')
      .addHelpText('after', '\nExamples:\n  $ podctl list\n  $ podctl ps --filter state=running --filter app=web\n  $ podctl list -q --filter state=exited | xargs podctl rm\n  $ podctl list --state running --format json')
      .action(async (opts: ListOptions, self: Command) => {
        const cluster = clusterOf(self)
        // With --cluster: the fleet's pods, as their nodes published them (fleet.md).
        if (cluster) {
          try {
            return await (await import('../../actions/fleet.js')).listFleet(ctx, cluster, opts)
          } catch (er) {
            // etcd away: this node's own pods are still its truth, and a flag away.
            if (isPodctlError(er) && er.code === 'EFAILED') {
              throw new PodctlError('EFAILED', er.message, `${er.hint ? `${er.hint}\n` : ''}this node's own pods: podctl list --no-cluster${process.env.PODCTL_CLUSTER ? ' (or unset PODCTL_CLUSTER)' : ''}`, { cause: er })
            }
            throw er
          }
        }
        ;(await import('./action.js')).listOutput(dataDirOf(self, 'read'), opts, (piece) => ctx.io.out(piece), ctx.io.colour)
      })
  },
}
