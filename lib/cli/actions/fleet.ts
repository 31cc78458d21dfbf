/** What the fleet commands do: `list --cluster`, `status --cluster`, `node list`, `node rm`. */
import { Cluster, type ClusterOptions } from '../../cluster/client.js'
import { fleetNodes, fleetPods, removeNode, type FleetPodView, type NodeView } from '../../controller/fleet.js'
import { PodctlError, oneLine } from '../../errors.js'
import type { ListOptions } from '../commands/list/options.js'
import type { Context } from '../context.js'
import { formatTable, isJson, relativeTime, toJson, wantsHeader, type LegendOptions } from '../output.js'
import { fleetListOutput } from '../commands/list/views.js'
import { statusLines } from '../commands/status/lines.js'

/** Runs `fn` with a connection to the fleet, closed afterwards. */
export const withCluster = async <T>(options: ClusterOptions, fn: (c: Cluster) => Promise<T>): Promise<T> => {
  const cluster = await Cluster.open(options)
  try {
    return await fn(cluster)
  } finally {
    cluster.close()
  }
}

export const listFleet = (ctx: Context, options: ClusterOptions, opts: ListOptions): Promise<void> =>
  withCluster(options, async (c) => ctx.io.out(fleetListOutput(await fleetPods(c), opts, ctx.io.colour)))

/** A pod of the fleet by full UUID or unambiguous prefix. */
const findFleetPod = (pods: FleetPodView[], arg: string): FleetPodView => {
  if (!/^[0-9a-f-]{1,36}$/i.test(arg)) throw new PodctlError('EUSAGE', `invalid UUID ${JSON.stringify(arg)}: expected hex digits and "-"`)
  const found = pods.filter((p) => p.uuid.startsWith(arg.toLowerCase()))
  if (found.length === 0) throw new PodctlError('ENOPOD', `no pod ${arg} in the fleet`, 'see podctl list --cluster …')
  if (found.length > 1) throw new PodctlError('ENOPOD', `${arg} is ambiguous in the fleet: ${found.map((p) => `${p.uuid} (${p.node})`).join(', ')}`, 'give more of the UUID')
  return found[0]!
}

export const statusFleet = (ctx: Context, options: ClusterOptions, uuid: string, opts: { format: string }): Promise<void> =>
  withCluster(options, async (c) => {
    const v = findFleetPod(await fleetPods(c), uuid)
    if (isJson(opts.format)) return ctx.io.out(toJson(v, opts.format))
    const lines = statusLines(v as Parameters<typeof statusLines>[0], ctx.io.colour)
    ctx.io.out(`${lines}node=${oneLine(v.node)}\n${v.node_lost ? 'node_lost=true\n' : ''}`)
  })

const podCounts = (n: NodeView): string =>
  Object.entries(n.pods)
    .map(([state, count]) => `${count} ${state}`)
    .join(', ') || '-'

export const nodeList = (ctx: Context, options: ClusterOptions, opts: { format: string } & LegendOptions): Promise<void> =>
  withCluster(options, async (c) => {
    const nodes = await fleetNodes(c)
    if (isJson(opts.format)) return ctx.io.out(toJson(nodes, opts.format))
    const now = Date.now()
    const rows = nodes.map((n) => [n.name, n.lost ? 'lost' : 'alive', relativeTime(n.last_seen, now), podCounts(n), n.version ?? '-'])
    ctx.io.out(formatTable(wantsHeader(opts) ? ['NAME', 'STATE', 'LAST SEEN', 'PODS', 'VERSION'] : undefined, rows))
  })

export const nodeRm = (ctx: Context, options: ClusterOptions, names: string[]): Promise<void> =>
  withCluster(options, async (c) => {
    for (const name of names) {
      await removeNode(c, name)
      ctx.io.out(`${name}\n`)
    }
  })
