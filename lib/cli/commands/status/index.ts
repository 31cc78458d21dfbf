/** podctl status: one pod, as key=value lines or JSON; optionally wait. */
import { Option, type Command } from 'commander'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { PodctlError } from '../../../errors.js'
import { addFormatOption, clusterOf, dataDirOf } from '../../options.js'
import type { StatusOptions } from './options.js'

export const status: CommandSpec = {
  name: 'status',
  description: 'show the status of one pod',
  define: (cmd: Command, ctx: Context): void => {
    cmd.argument('[uuid]', 'pod UUID or unambiguous prefix').usage('[options] <uuid> | --uuid-file FILE')
      .option('--uuid-file <file>', 'the pod whose UUID is in this file (as --uuid-file-save wrote it)')
    addFormatOption(cmd, ctx, 'output format (table means key=value lines)')
      .addOption(new Option('--wait [duration]', 'wait until the pod has finished; with a duration (--wait=30s), at most that long, then exit 5'))
      .addOption(new Option('--wait-ready [duration]', 'wait until the pod is ready; with a duration, at most that long, then exit 5'))
      .addHelpText('after', '\nExamples:\n  $ podctl status 8c3b1f0e\n  $ podctl status 8c3b1f0e --wait=1m --format json')
      .action(async (uuid: string | undefined, opts: StatusOptions, self: Command) => {
        const cluster = clusterOf(self)
        if (cluster) {
          if (opts.wait !== undefined || opts.waitReady !== undefined) throw new PodctlError('EUSAGE', '--wait and --wait-ready are for a pod of this node, not with --cluster')
          if (uuid === undefined || opts.uuidFile !== undefined) throw new PodctlError('EUSAGE', uuid === undefined ? "missing required argument 'uuid'" : '--uuid-file is for a pod of this node, not with --cluster')
          return (await import('../../actions/fleet.js')).statusFleet(ctx, cluster, uuid, opts)
        }
        return (await import('./action.js')).status(ctx, dataDirOf(self, 'read'), uuid, opts)
      })
  },
}
