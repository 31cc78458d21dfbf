/** What `list --cluster` and `status --cluster` do. */
import { Cluster, type ClusterOptions } from '../../cluster/client.js'
import { fleetPods, type FleetPodView } from '../../controller/fleet.js'
import { PodctlError, oneLine } from '../../errors.js'
import type { ListOptions } from '../commands/list/options.js'
import type { Context } from '../context.js'
import { isJson, toJson } from '../output.js'
import { fleetListOutput } from '../commands/list/views.js'
import { statusLines } from '../commands/status/lines.js'

export const listFleet = (ctx: Context, options: ClusterOptions, opts: ListOptions): Promise<void> =>
  Cluster.with(options, async (c) => ctx.io.out(fleetListOutput(await fleetPods(c), opts, ctx.io.colour)))

/** A pod of the fleet by full UUID or unambiguous prefix. */
const findFleetPod = (pods: FleetPodView[], arg: string): FleetPodView => {
  if (!/^[0-9a-f-]{1,36}$/i.test(arg)) throw new PodctlError('EUSAGE', `invalid UUID ${JSON.stringify(arg)}: expected hex digits and "-"`)
  const found = pods.filter((p) => p.uuid.startsWith(arg.toLowerCase()))
  if (found.length === 0) throw new PodctlError('ENOPOD', `no pod ${arg} in the fleet`, 'see podctl list --cluster …')
  if (found.length > 1) throw new PodctlError('ENOPOD', `${arg} is ambiguous in the fleet: ${found.map((p) => `${p.uuid} (${p.node})`).join(', ')}`, 'give more of the UUID')
  return found[0]!
}

export const statusFleet = (ctx: Context, options: ClusterOptions, uuid: string, opts: { format: string }): Promise<void> =>
  Cluster.with(options, async (c) => {
    const v = findFleetPod(await fleetPods(c), uuid)
    if (isJson(opts.format)) return ctx.io.out(toJson(v, opts.format))
    const lines = statusLines(v as Parameters<typeof statusLines>[0], ctx.io.colour)
    ctx.io.out(`${lines}node=${oneLine(v.node)}\n${v.node_lost ? 'node_lost=true\n' : ''}`)
  })
