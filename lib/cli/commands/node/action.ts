/** What `podctl node list` and `node rm` do: the fleet's nodes, as their controllers registered them in etcd. */
import { Cluster, type ClusterOptions } from '../../../cluster/client.js'
import { fleetNodes, removeNode, type NodeView } from '../../../controller/fleet.js'
import type { Context } from '../../context.js'
import { formatTable, isJson, relativeTime, toJson, wantsHeader, type LegendOptions } from '../../output.js'

const podCounts = (n: NodeView): string =>
  Object.entries(n.pods)
    .map(([state, count]) => `${count} ${state}`)
    .join(', ') || '-'

export const nodeList = (ctx: Context, options: ClusterOptions, opts: { format: string } & LegendOptions): Promise<void> =>
  Cluster.with(options, async (c) => {
    const nodes = await fleetNodes(c)
    if (isJson(opts.format)) return ctx.io.out(toJson(nodes, opts.format))
    const now = Date.now()
    const rows = nodes.map((n) => [n.name, n.lost ? 'lost' : 'alive', relativeTime(n.last_seen, now), podCounts(n), n.version ?? '-'])
    ctx.io.out(formatTable(wantsHeader(opts) ? ['NAME', 'STATE', 'LAST SEEN', 'PODS', 'VERSION'] : undefined, rows))
  })

export const nodeRm = (ctx: Context, options: ClusterOptions, names: string[]): Promise<void> =>
  Cluster.with(options, async (c) => {
    for (const name of names) {
      await removeNode(c, name)
      ctx.io.out(`${name}\n`)
    }
  })
