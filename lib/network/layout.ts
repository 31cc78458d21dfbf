/**
 * Where the network room keeps what it knows, below the data dir
 * (Documentation/devel/networks.md):
 *
 *   networks/NAME.conflist   a network of this data dir (CNI's conflist format),
 *                            bridge.conflist the default one, made on first use
 *   networks/pods/UUID.json  a pod's attachments: the config each ADD ran with,
 *                            its result, its port mappings (CNI's result cache:
 *                            what DEL runs from after a crash)
 *   networks/ipam/           host-local's state (its `dataDir`): NET/ADDRESS files
 *   networks/locks/          `networks` (the data dir's networks, rules and port
 *                            claims) and one lock per pod's attachments
 *   networks/rules.json      which firewall rules were applied, and in which boot
 *
 * And where it looks outside it: the plugins (CNI_PATH) and the operator's
 * own conflists.
 */
import path from 'node:path'
import { registerDataDirFolders } from '../pod/layout.js'

registerDataDirFolders('networks', 'networks/pods', 'networks/ipam', 'networks/locks')

export const networksDir = (dataDir: string): string => path.join(dataDir, 'networks')
export const conflistFile = (dataDir: string, name: string): string => path.join(networksDir(dataDir), `${name}.conflist`)
export const recordsDir = (dataDir: string): string => path.join(networksDir(dataDir), 'pods')
export const recordFile = (dataDir: string, uuid: string): string => path.join(recordsDir(dataDir), `${uuid}.json`)
export const ipamDir = (dataDir: string): string => path.join(networksDir(dataDir), 'ipam')
export const networkLocksDir = (dataDir: string): string => path.join(networksDir(dataDir), 'locks')
/** The lock of the data dir's networks: their files, their firewall rules, and the host ports pods claim. */
export const networksLock = (dataDir: string): string => path.join(networkLocksDir(dataDir), 'networks')
/** The lock of one pod's attachments: its ADD and DEL never run at once. */
export const podNetworkLock = (dataDir: string, uuid: string): string => path.join(networkLocksDir(dataDir), uuid)
export const rulesStampFile = (dataDir: string): string => path.join(networksDir(dataDir), 'rules.json')

/** The name of the default network: podman's and docker's word for it. */
export const DEFAULT_NETWORK = 'bridge'

/** Where the plugins and the operator's conflists are, and how long a plugin may take. */
export interface NetworkEnv {
  /** Searched in order for a plugin's program, and handed to plugins as CNI_PATH. */
  pluginDirs: string[]
  /** The operator's conflists (/etc/cni/net.d): networks too, used as they are. */
  configDir: string
  /** A plugin call is killed (its whole process group) after this long. */
  timeoutMs: number
}

export const DEFAULT_PLUGIN_DIRS = ['/usr/lib/cni', '/opt/cni/bin']
export const DEFAULT_CONFIG_DIR = '/etc/cni/net.d'
const DEFAULT_TIMEOUT_MS = 60_000

/**
 * The environment of the network commands: the flags given, else
 * $PODCTL_CNI_PLUGIN_DIR (a `:`-separated list, as CNI_PATH) and
 * $PODCTL_CNI_CONFIG_DIR, else Debian's plugin directory, the upstream
 * one, and /etc/cni/net.d.
 */
export const networkEnv = (given: { pluginDir?: string; configDir?: string } = {}, env: NodeJS.ProcessEnv = process.env): NetworkEnv => {
  const dirs = given.pluginDir ?? env.PODCTL_CNI_PLUGIN_DIR
  return {
    pluginDirs: dirs ? dirs.split(':').filter((d) => d !== '').map((d) => path.resolve(d)) : DEFAULT_PLUGIN_DIRS,
    configDir: path.resolve(given.configDir ?? (env.PODCTL_CNI_CONFIG_DIR || DEFAULT_CONFIG_DIR)),
    timeoutMs: DEFAULT_TIMEOUT_MS,
  }
}
