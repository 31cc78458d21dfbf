/** podctl node: the nodes of a fleet (fleet.md), as their controllers registered them in etcd. */
import type { Command } from 'commander'
import type { ClusterOptions } from '../../../cluster/client.js'
import { PodctlError } from '../../../errors.js'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { addFormatOption, addLegendOptions, clusterOf } from '../../options.js'
import type { LegendOptions } from '../../output.js'

const actions = () => import('./action.js')

const needCluster = (cmd: Command): ClusterOptions => {
  const c = clusterOf(cmd)
  if (c === undefined) throw new PodctlError('EUSAGE', `${cmd.parent?.name() ?? 'node'} ${cmd.name()} needs the fleet's etcd: --cluster URLS (or PODCTL_CLUSTER)`, 'see Documentation/fleet.md')
  return c
}

export const node: CommandSpec = {
  name: 'node',
  description: "the fleet's nodes (with --cluster): list them, forget a lost one",
  define: (cmd: Command, ctx: Context): void => {
    cmd.addHelpText('after', '\nExamples:\n  $ podctl --cluster http://10.0.0.1:2379 node list\n  $ podctl --cluster http://10.0.0.1:2379 node rm old-node\n\nDocumentation: Documentation/subcommands/node.md')
    addLegendOptions(addFormatOption(cmd.command('list').alias('ls').description('list the nodes: alive or lost, when last seen, their pods by state'), ctx)).action(
      async (opts: { format: string } & LegendOptions, self: Command) => (await actions()).nodeList(ctx, needCluster(self), opts),
    )
    cmd
      .command('rm')
      .description("forget lost nodes: their pods leave the fleet's view (a node whose controller runs is refused)")
      .argument('<name...>', 'node names')
      .action(async (names: string[], _opts: unknown, self: Command) => (await actions()).nodeRm(ctx, needCluster(self), names))
  },
}
