/** What the `podctl network` commands do. */
import { PodctlError, shortId } from '../../../errors.js'
import { dataDirExists, dataDirTrusted } from '../../../pod/layout.js'
import type { NetworkInfo } from '../../../network/config.js'
import { DEFAULT_NETWORK, networkEnv, type NetworkEnv } from '../../../network/layout.js'
import { createNetwork, findNetwork, listNetworks, networkUsers, pruneNetworks, removeNetwork, type DamagedNetwork, type Network } from '../../../network/networks.js'
import type { Context } from '../../context.js'
import { formatTable, isJson, toJson, wantsHeader } from '../../output.js'
import { forEachArgument } from '../../report-error.js'
import type { CniDirOptions, NetworkCreateOptions, NetworkInspectOptions, NetworkListOptions, NetworkPruneOptions, NetworkRmOptions } from './options.js'

const envOf = (o: CniDirOptions): NetworkEnv => networkEnv({ ...(o.cniPluginDir !== undefined ? { pluginDir: o.cniPluginDir } : {}), ...(o.cniConfigDir !== undefined ? { configDir: o.cniConfigDir } : {}) })

/** --opt K=V..., as a map; EUSAGE for a value without "=". */
const optMap = (opts: readonly string[] = []): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const o of opts) {
    const eq = o.indexOf('=')
    if (eq <= 0) throw new PodctlError('EUSAGE', `invalid --opt ${JSON.stringify(o)}: expected KEY=VALUE`, 'e.g. --opt mtu=1400 or --opt parent=eth0')
    out[o.slice(0, eq)] = o.slice(eq + 1)
  }
  return out
}

export const create = async (ctx: Context, dataDir: string, name: string, opts: NetworkCreateOptions): Promise<void> => {
  const info = await createNetwork(
    dataDir,
    name,
    {
      ...(opts.subnet !== undefined ? { subnet: opts.subnet } : {}),
      ...(opts.gateway !== undefined ? { gateway: opts.gateway } : {}),
      internal: opts.internal === true,
      driver: opts.driver,
      opts: optMap(opts.opt),
    },
    envOf(opts),
  )
  ctx.io.out(isJson(opts.format) ? toJson(info, opts.format) : `${info.name}\n`)
}

const isDamaged = (n: Network | DamagedNetwork): n is DamagedNetwork => 'damaged' in n

export const list = async (ctx: Context, dataDir: string, opts: NetworkListOptions): Promise<void> => {
  // The default network is made on first use: listing it as root is one, where the data dir may be written.
  const makeDefault = process.geteuid?.() === 0 && dataDirExists(dataDir) && dataDirTrusted(dataDir)
  const entries = (await listNetworks(dataDir, envOf(opts), { makeDefault })).map((n) => (isDamaged(n) ? n : n.info))
  if (!entries.some((e) => e.name === DEFAULT_NETWORK)) entries.unshift(defaultNotMade())
  if (opts.quiet) return ctx.io.out(entries.map((e) => `${e.name}\n`).join(''))
  if (isJson(opts.format)) return ctx.io.out(toJson(entries, opts.format))
  const rows = entries.map((e) => ('damaged' in e ? [e.name, '?', `damaged: ${e.damaged}`, '-', '-'] : [e.name, e.driver, e.subnet ?? '-', e.gateway ?? '-', e.internal ? 'yes' : 'no']))
  ctx.io.out(formatTable(wantsHeader(opts) ? ['NAME', 'DRIVER', 'SUBNET', 'GATEWAY', 'INTERNAL'] : undefined, rows))
}

/** The default network where it is not made yet (not root, or no data dir): its subnet is picked when it is. */
const defaultNotMade = (): NetworkInfo => ({ name: DEFAULT_NETWORK, driver: 'bridge', subnet: null, gateway: null, internal: false, file: null, interface: null })

export const inspect = async (ctx: Context, dataDir: string, name: string, opts: NetworkInspectOptions): Promise<void> => {
  const n = await findNetwork(dataDir, name, envOf(opts))
  const pods = (networkUsers(dataDir).get(n.info.name) ?? []).filter((u) => !u.garbage).map((u) => u.uuid)
  if (isJson(opts.format)) return ctx.io.out(toJson({ ...n.info, plugins: n.conflist.plugins.map((p) => p.type), cni_version: n.conflist.cniVersion, pods }, opts.format))
  const lines = [
    ['name', n.info.name],
    ['driver', n.info.driver],
    ['subnet', n.info.subnet ?? ''],
    ['gateway', n.info.gateway ?? ''],
    ['internal', String(n.info.internal)],
    ['interface', n.info.interface ?? ''],
    ['file', n.info.file ?? ''],
    ['plugins', n.conflist.plugins.map((p) => p.type).join(',')],
    ['cni-version', n.conflist.cniVersion],
    ['pods', pods.map(shortId).join(',')],
  ]
  ctx.io.out(lines.map(([k, v]) => `${k}=${v}\n`).join(''))
}

/** Removes each network, printing its name; goes past a bad one. */
export const rm = (ctx: Context, dataDir: string, names: string[], opts: NetworkRmOptions): Promise<void> =>
  forEachArgument(ctx, names, async (name) => {
    await removeNetwork(dataDir, name, envOf(opts))
    return `${name}\n`
  })

export const prune = async (ctx: Context, dataDir: string, opts: NetworkPruneOptions): Promise<void> => {
  const removed = await pruneNetworks(dataDir)
  ctx.io.out(isJson(opts.format) ? toJson({ deleted: removed }, opts.format) : removed.map((n) => `${n}\n`).join(''))
}
