/** podctl network: the CNI networks pods join (CONTRACT §14): create, list, inspect, rm, prune. */
import { Option, type Command } from 'commander'
import { PodctlError } from '../../../errors.js'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { addFormatOption, addLegendOptions, collect, dataDirOf } from '../../options.js'
import type { NetworkCreateOptions, NetworkInspectOptions, NetworkListOptions, NetworkPruneOptions, NetworkRmOptions } from './options.js'

const actions = () => import('./action.js')

const nonEmpty = (flag: string) => (dir: string): string => {
  if (dir === '') throw new PodctlError('EUSAGE', `${flag} must not be empty`)
  return dir
}

/** --cni-plugin-dir and --cni-config-dir, on every network subcommand. */
const addCniDirOptions = (cmd: Command): Command =>
  cmd
    .addOption(new Option('--cni-plugin-dir <dirs>', 'where the CNI plugins are, ":"-separated (default: $PODCTL_CNI_PLUGIN_DIR, else /usr/lib/cni:/opt/cni/bin)').argParser(nonEmpty('--cni-plugin-dir')))
    .addOption(new Option('--cni-config-dir <dir>', "the operator's conflists, networks too (default: $PODCTL_CNI_CONFIG_DIR, else /etc/cni/net.d)").argParser(nonEmpty('--cni-config-dir')))

export const network: CommandSpec = {
  name: 'network',
  description: 'networks: create, list, inspect, remove and prune the CNI networks pods join',
  define: (cmd: Command, ctx: Context): void => {
    cmd.addHelpText(
      'after',
      `
Examples:
  $ podctl network create front
  $ podctl network create back --subnet 172.30.7.0/24 --internal
  $ podctl network list
  $ podctl network inspect front --format json
  $ podctl network rm front

Documentation: Documentation/subcommands/network.md, Documentation/networks.md`,
    )
    addFormatOption(
      addCniDirOptions(
        cmd
          .command('create')
          .description('create a network of this data dir (root only): a bridge (or macvlan/ipvlan) with addresses from its subnet and published ports; prints its name')
          .argument('<name>', 'network name: 1 to 63 characters of a-z, 0-9 and "-"')
          .option('--subnet <cidr>', 'its subnet (default: a free /24 of 10.90.0.0/15)')
          .option('--gateway <ip>', "the subnet's gateway, the host's address on the bridge (default: the subnet's first address)")
          .option('--internal', 'no route out: its pods reach each other and the host, nothing beyond')
          .addOption(new Option('--driver <driver>', 'the CNI plugin that makes its interfaces').choices(['bridge', 'macvlan', 'ipvlan']).default('bridge'))
          .option('--opt <key=value>', 'a driver option (repeatable): mtu=N, vlan=N (bridge); parent=IFACE, mode=M (macvlan, ipvlan)', collect),
      ),
      ctx,
      'output format (table prints the name)',
    )
      .addHelpText('after', '\nExamples:\n  $ podctl network create front\n  $ podctl network create db --subnet 172.30.7.0/24 --gateway 10.91.7.1 --internal\n  $ podctl network create lan --driver macvlan --opt parent=eth0 --subnet 192.168.1.0/24 --gateway 192.168.1.1')
      .action(async (name: string, opts: NetworkCreateOptions, self: Command) => (await actions()).create(ctx, dataDirOf(self, 'write'), name, opts))
    addLegendOptions(addFormatOption(addCniDirOptions(cmd.command('list').alias('ls').description("list the networks: this data dir's (the default one, bridge, first) and the operator's conflists").option('-q, --quiet', 'print the names only')), ctx))
      .addHelpText('after', '\nExamples:\n  $ podctl network list\n  $ podctl network list --format json')
      .action(async (opts: NetworkListOptions, self: Command) => (await actions()).list(ctx, dataDirOf(self, 'read'), opts))
    addFormatOption(addCniDirOptions(cmd.command('inspect').description('show one network: its driver, subnet, gateway, interface, file, plugins and the pods on it').argument('<network>', 'network name')), ctx, 'output format (table means key=value lines)')
      .addHelpText('after', '\nExamples:\n  $ podctl network inspect bridge\n  $ podctl network inspect front --format json-pretty')
      .action(async (name: string, opts: NetworkInspectOptions, self: Command) => (await actions()).inspect(ctx, dataDirOf(self, 'read'), name, opts))
    addCniDirOptions(cmd.command('rm').description('remove networks of this data dir (root only); a network a pod uses is refused (exit 4) until the pod is removed').argument('<network...>', 'network names'))
      .addHelpText('after', '\nExamples:\n  $ podctl network rm front\n  $ podctl network rm front back')
      .action(async (names: string[], opts: NetworkRmOptions, self: Command) => (await actions()).rm(ctx, dataDirOf(self, 'write'), names, opts))
    addFormatOption(addCniDirOptions(cmd.command('prune').description('remove the networks of this data dir that no pod uses (the default one stays); prints each one removed')), ctx)
      .addHelpText('after', '\nExamples:\n  $ podctl network prune\n  $ podctl network prune --format json')
      .action(async (opts: NetworkPruneOptions, self: Command) => (await actions()).prune(ctx, dataDirOf(self, 'write'), opts))
  },
}
