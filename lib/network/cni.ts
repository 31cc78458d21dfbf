/**
 * The CNI invoker: podctl's own, after libcni (containernetworking/cni,
 * libcni/api.go and pkg/invoke). A plugin is a program run with the
 * command, the container, its network namespace and interface name in
 * CNI_* environment variables and one plugin's config on stdin; it answers
 * a result (ADD), nothing (DEL, CHECK) or an error object on stdout.
 *
 * A conflist runs its plugins in order for ADD, each given the one
 * before's result as `prevResult`, and in reverse for DEL, each given the
 * result the ADD ended with (CNI 0.4.0 and later), so that DEL needs
 * nothing that lived with the pod. Every config gets the list's `name` and
 * `cniVersion`, and the runtime's capability arguments (port mappings)
 * that the plugin declares in its `capabilities` as `runtimeConfig`.
 *
 * Plugins run as lib/proc's bounded children: a time limit that kills
 * their whole process group, a bound on what they print. The pid of each
 * is handed to the caller as it starts, so that a DEL after a crash can
 * wait for a plugin the crash left running (lib/network/attach.ts).
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, oneLine, shortId } from '../errors.js'
import { runBounded } from '../proc/bounded-child.js'
import type { NetworkEnv } from './layout.js'
import { toolPath } from './tool.js'

/** One plugin's config as a conflist holds it. */
export interface PluginConf {
  type: string
  capabilities?: Record<string, boolean>
  [key: string]: unknown
}

/** A network configuration list (the CNI spec's format). */
export interface Conflist {
  cniVersion: string
  name: string
  plugins: PluginConf[]
  disableCheck?: boolean
  [key: string]: unknown
}

/** Who a call is for: CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_ARGS. */
export interface CallTarget {
  containerId: string
  /** The namespace's path; empty for a DEL whose namespace is gone. */
  netns: string
  ifname: string
  /** CNI_ARGS, as key=value pairs (host-local reads IP=). */
  args?: readonly (readonly [string, string])[]
}

/** What the runtime hands to plugins that declare the capability (portMappings). */
export type CapabilityArgs = Record<string, unknown>

/** A CNI result (ADD's answer), kept as the plugin wrote it. */
export type CniResult = Record<string, unknown>

export interface CallHooks {
  /** Told each plugin's pid as it starts. */
  onSpawn?: (pid: number) => void
}

/** A plugin's type names a program in a plugin directory: one plain file name. */
const TYPE_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/

/** The first plugin directory that holds an executable `type`, or undefined. */
export const findPlugin = (type: string, dirs: readonly string[]): string | undefined => {
  if (!TYPE_RE.test(type)) return undefined
  for (const dir of dirs) {
    const file = path.join(dir, type)
    try {
      fs.accessSync(file, fs.constants.X_OK)
      if (fs.statSync(file).isFile()) return file
    } catch {
      // not here
    }
  }
  return undefined
}

/** The plugin's environment: this process's, as libcni passes it, with the CNI_* variables of the call. */
const callEnv = (command: string, target: CallTarget, env: NetworkEnv): NodeJS.ProcessEnv => ({
  ...process.env,
  // Plugins call iptables and friends by name.
  PATH: toolPath(),
  CNI_COMMAND: command,
  CNI_CONTAINERID: target.containerId,
  CNI_NETNS: target.netns,
  CNI_IFNAME: target.ifname,
  CNI_ARGS: (target.args ?? []).map(([k, v]) => `${k}=${v}`).join(';'),
  CNI_PATH: env.pluginDirs.join(':'),
})

/** A failed plugin call, with what the plugin said (its error object) in the message. */
export class CniError extends PodctlError {
  /** The CNI error code (1-7 the spec's, 100 and up the plugin's), when the plugin gave one. */
  readonly cniCode: number | undefined
  constructor(message: string, hint: string | undefined, cniCode?: number) {
    super('EFAILED', message, hint)
    this.name = 'CniError'
    this.cniCode = cniCode
  }
}

/** The spec's error object: {code, msg, details}. */
const errorObject = (stdout: string): { code?: number; msg?: string; details?: string } | undefined => {
  try {
    const v = JSON.parse(stdout) as unknown
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined
    const o = v as Record<string, unknown>
    if (typeof o.msg !== 'string' && typeof o.code !== 'number') return undefined
    return {
      ...(typeof o.code === 'number' ? { code: o.code } : {}),
      ...(typeof o.msg === 'string' ? { msg: o.msg } : {}),
      ...(typeof o.details === 'string' && o.details !== '' ? { details: o.details } : {}),
    }
  } catch {
    return undefined
  }
}

const VERB: Record<string, string> = { ADD: 'add', DEL: 'delete', CHECK: 'check' }
/** Most a plugin may print: a result is a few KiB. */
const MAX_STDOUT = 1024 * 1024

/**
 * Runs one plugin: `conf` (one plugin's config, complete) on stdin. The
 * parsed answer (undefined when it printed nothing, as DEL does), or a
 * CniError naming the network, the plugin and the pod, with what it said.
 */
export const execPlugin = async (network: string, conf: PluginConf, command: 'ADD' | 'DEL' | 'CHECK' | 'VERSION', target: CallTarget, env: NetworkEnv, hooks: CallHooks = {}): Promise<CniResult | undefined> => {
  const what = command === 'VERSION' ? `the ${JSON.stringify(conf.type)} plugin did not say its version` : `network ${network}: the ${JSON.stringify(conf.type)} plugin could not ${VERB[command]} pod ${shortId(target.containerId)}`
  const program = findPlugin(conf.type, env.pluginDirs)
  if (program === undefined) {
    throw new CniError(
      `${what}: no plugin ${JSON.stringify(conf.type)} in ${env.pluginDirs.join(', ')}`,
      TYPE_RE.test(conf.type)
        ? 'install the CNI plugins (Debian: apt-get install containernetworking-plugins), or say where they are: --cni-plugin-dir DIR or PODCTL_CNI_PLUGIN_DIR'
        : `the network's config names a plugin type that is not a file name: ${JSON.stringify(conf.type)}`,
    )
  }
  const r = await runBounded(program, [], {
    input: JSON.stringify(conf),
    timeoutMs: env.timeoutMs,
    maxStdoutBytes: MAX_STDOUT,
    env: callEnv(command, target, env),
    ...(hooks.onSpawn ? { onSpawn: hooks.onSpawn } : {}),
  })
  const stdout = r.stdout.toString('utf8')
  if (r.startError !== undefined) throw new CniError(`${what}: ${program}: ${r.startError}`, 'check the plugin directory: --cni-plugin-dir DIR or PODCTL_CNI_PLUGIN_DIR')
  if (r.killedFor !== undefined) throw new CniError(`${what}: it ${r.killedFor}`, undefined)
  if (r.status !== 0) {
    const e = errorObject(stdout)
    const said = e?.msg !== undefined ? `${e.msg}${e.details !== undefined ? ` (${e.details})` : ''}` : r.stderr.trim() || stdout.trim() || (r.signal ? `killed by ${r.signal}` : `exit status ${r.status}`)
    throw new CniError(`${what}: ${oneLine(said)}${e?.code !== undefined ? ` [CNI error ${e.code}]` : ''}`, undefined, e?.code)
  }
  if (stdout.trim() === '') return undefined
  try {
    const v = JSON.parse(stdout) as unknown
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not a JSON object')
    return v as CniResult
  } catch (er) {
    throw new CniError(`${what}: its answer is not a CNI result: ${(er as Error).message}`, undefined)
  }
}

/** Whether a spec version is at least `min` (both dotted numbers). */
export const versionAtLeast = (v: string, min: string): boolean => {
  const a = v.split('.').map(Number)
  const b = min.split('.').map(Number)
  for (let i = 0; i < 3; i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0)
    if (d !== 0) return d > 0
  }
  return true
}

/**
 * One plugin's config as libcni builds it: the plugin's own fields, the
 * list's name and version, the result so far, and the capability
 * arguments it declares.
 */
export const pluginConfig = (list: Conflist, plugin: PluginConf, prevResult: CniResult | undefined, capabilityArgs: CapabilityArgs): PluginConf => {
  const runtimeConfig: Record<string, unknown> = {}
  for (const [cap, on] of Object.entries(plugin.capabilities ?? {})) if (on === true && cap in capabilityArgs) runtimeConfig[cap] = capabilityArgs[cap]
  return {
    ...plugin,
    name: list.name,
    cniVersion: list.cniVersion,
    ...(prevResult !== undefined ? { prevResult } : {}),
    ...(Object.keys(runtimeConfig).length > 0 ? { runtimeConfig } : {}),
  }
}

/**
 * Plugins that do nothing without their capability's arguments: portmap
 * with no port to publish passes the result on and deletes nothing
 * (plugins/meta/portmap cmdAdd, cmdDel). Running it anyway costs a
 * program's start on every pod's way up.
 */
const IDLE_WITHOUT: Record<string, string> = { portmap: 'portMappings' }

/** The list as it runs for these capability arguments: idle plugins left out. */
export const activePlugins = (list: Conflist, capabilityArgs: CapabilityArgs): Conflist => ({
  ...list,
  plugins: list.plugins.filter((p) => {
    const cap = IDLE_WITHOUT[p.type]
    return cap === undefined || p.capabilities?.[cap] !== true || cap in capabilityArgs
  }),
})

/** ADD of a whole list: its plugins in order, each given the one before's result. The last result. */
export const addList = async (list: Conflist, target: CallTarget, capabilityArgs: CapabilityArgs, env: NetworkEnv, hooks: CallHooks = {}): Promise<CniResult> => {
  let result: CniResult | undefined
  for (const plugin of list.plugins) {
    result = (await execPlugin(list.name, pluginConfig(list, plugin, result, capabilityArgs), 'ADD', target, env, hooks)) ?? result
  }
  if (result === undefined) throw new CniError(`network ${list.name}: its plugins gave no result for pod ${shortId(target.containerId)}`, undefined)
  return result
}

/**
 * DEL of a whole list: its plugins in reverse, each given the result of
 * the ADD (when there was one and the list's version takes it). Unlike
 * libcni it goes on past a failing plugin, so that one plugin's failure
 * does not keep the others' resources (an address) held; the first
 * failure is thrown at the end, and the caller keeps its record to try
 * again.
 */
export const delList = async (list: Conflist, target: CallTarget, capabilityArgs: CapabilityArgs, cached: CniResult | undefined, env: NetworkEnv, hooks: CallHooks = {}): Promise<void> => {
  const prev = cached !== undefined && versionAtLeast(list.cniVersion, '0.4.0') ? cached : undefined
  let first: unknown
  for (const plugin of [...list.plugins].reverse()) {
    try {
      await execPlugin(list.name, pluginConfig(list, plugin, prev, capabilityArgs), 'DEL', target, env, hooks)
    } catch (er) {
      first ??= er
    }
  }
  if (first !== undefined) throw first
}

/** CHECK of a whole list (CNI 0.4.0 and later): whether what ADD made is still as it was. Throws the first plugin's complaint. */
export const checkList = async (list: Conflist, target: CallTarget, capabilityArgs: CapabilityArgs, cached: CniResult, env: NetworkEnv): Promise<void> => {
  if (!versionAtLeast(list.cniVersion, '0.4.0') || list.disableCheck === true) return
  for (const plugin of list.plugins) await execPlugin(list.name, pluginConfig(list, plugin, cached, capabilityArgs), 'CHECK', target, env)
}

/** The versions of the spec a plugin speaks (its VERSION answer). */
export const pluginVersions = async (type: string, env: NetworkEnv): Promise<string[]> => {
  const r = await execPlugin(type, { type, cniVersion: '0.1.0', name: type } as PluginConf, 'VERSION', { containerId: '', netns: '', ifname: '' }, env)
  const v = r?.supportedVersions
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []
}
