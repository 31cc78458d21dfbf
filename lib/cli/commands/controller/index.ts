/** podctl controller: binds claims and reclaims volumes in the background, one leader per data dir (CONTRACT §8). */
import { Option, type Command } from 'commander'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { addFormatOption, count, dataDirOf, durationOption, fleetOf, provisionersDirOption } from '../../options.js'
import type { ControllerCliOptions } from './options.js'

const actions = () => import('./action.js')

export const controller: CommandSpec = {
  name: 'controller',
  description: 'bind volume claims and reclaim released volumes in the background (one leader per data dir); status shows the lease',
  define: (cmd: Command, ctx: Context): void => {
    cmd
      .addOption(new Option('--workers <n>', 'claim and volume workers each (the external provisioner\'s threadiness)').argParser(count('--workers', 1)).default(4))
      .addOption(durationOption('--resync <duration>', 'full relist of claims and volumes; between relists it reacts to changes at once', '15m'))
      .option('--exponential-backoff', 'per-object retry delay doubling from 1s up to 5m', true)
      .option('--no-exponential-backoff', 'retry failed objects every 1s')
      .addOption(new Option('--failed-provision-threshold <n>', 'give a claim up after N failed provisions (0: never)').argParser(count('--failed-provision-threshold', 0)).default(15))
      .addOption(new Option('--failed-delete-threshold <n>', 'give a volume up after N failed deletes (0: never)').argParser(count('--failed-delete-threshold', 0)).default(15))
      .option('--leader-elect', 'only the holder of the lease works', true)
      .option('--no-leader-elect', 'work without a lease (one controller per data dir only!)')
      .addOption(durationOption('--lease-duration <duration>', 'how long a lease lasts without renewal', '15s'))
      .addOption(durationOption('--renew-deadline <duration>', 'a leader that cannot renew for this long stops working', '10s'))
      .addOption(durationOption('--retry-period <duration>', 'how often to try for or renew the lease', '2s'))
      .option('--identity <id>', 'how this controller appears in the lease and in provisioned_by (default: HOSTNAME/PID)')
      .option('--metrics-address <host:port>', 'serve Prometheus metrics and /healthz here')
      .option('--metrics-path <path>', 'the path of the metrics', '/metrics')
      .addOption(durationOption('--gc-interval <duration>', 'run gc this often (0s: never)', '1m'))
      .addOption(durationOption('--gc-grace-period <duration>', 'gc\'s --grace-period', '30m'))
      .addOption(durationOption('--gc-expire-prepared <duration>', 'gc\'s --expire-prepared', '24h'))
      .option('--once', 'one pass over every claim and released volume (and, with --gc-interval, one gc pass), then exit')
      .addOption(provisionersDirOption())
      .addOption(new Option('--log-format <format>', 'the log on stderr: text lines, or one JSON object a line ({"time", "msg"})').choices(['text', 'json']).default('text'))
      .addHelpText(
        'after',
        `
Examples:
  $ podctl controller
  $ podctl controller --once
  $ podctl controller --metrics-address 127.0.0.1:9090
  $ podctl controller status --format json

SIGTERM (or Ctrl-C) gives the work in hand a second to finish, gives up the
lease and exits 0, within 2 seconds whatever etcd does.

Documentation: Documentation/subcommands/controller.md`,
      )
      .action(async (opts: ControllerCliOptions, self: Command) => (await actions()).runController(ctx, dataDirOf(self, 'write'), opts, fleetOf(self)))
    addFormatOption(cmd.command('status').description("show the lease: who leads, since when, and whether that controller is alive (with --cluster: the fleet's leader)"), ctx).action(
      async (opts: { format: string }, self: Command) => (await actions()).controllerStatus(ctx, dataDirOf(self, 'read'), opts, fleetOf(self)),
    )
  },
}
