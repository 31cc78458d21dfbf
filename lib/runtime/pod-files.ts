/**
 * The files podctl makes for an isolated pod and binds read-only into
 * every app (CONTRACT §14, §15), as podman makes a container's, so that
 * the pod's own name resolves and DNS does not depend on what an image's
 * builder left in its /etc: /etc/hosts, /etc/hostname and
 * /etc/resolv.conf (lib/network/etc-files.ts makes them), and
 * /run/.containerenv, empty, as podman leaves it for a container that is
 * not privileged: its presence says "in a container".
 *
 * All of them live in `<pod>/etc/`. A pod on networks gets its hosts,
 * resolv.conf and hostname from its attach (which keeps hosts current as
 * the pods of its named networks come and go); a pod on the host's network
 * or none gets them here, when it starts: the host's resolv.conf as it is
 * on the host's network, none with `network: none`, where podman leaves
 * an image's own (nothing could be resolved anyway).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { writeFileAtomic } from '../fs/atomic.js'
import { DIR_MODE } from '../fs/modes.js'
import { readHostText } from '../fs/read.js'
import { hostHosts, hostResolvConf, hostnameFile, hostsFile, resolvConf, type ResolvOptions } from '../network/etc-files.js'
import type { HostEntry } from '../network/records.js'
import type { Bind, PodFiles } from './generate/facts.js'

/** Where a pod's generated files are, in the pod dir. */
export const POD_FILES_DIR = 'etc'

export interface PodFilesInput {
  hostname: string
  /** More names of the pod: its name. */
  names: readonly string[]
  network: 'host' | 'none' | 'joined'
  addHosts: readonly HostEntry[]
  resolv: ResolvOptions
  /** The host's own address (host.containers.internal). */
  hostAddress: string | undefined
}

/** The host's own address: the first IPv4 address of the interface of its default route (what podman names host.containers.internal). */
export const hostAddress = (routes = readHostText('/proc/net/route', 64 * 1024) ?? '', ifaces = os.networkInterfaces()): string | undefined => {
  const iface = routes
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .find((f) => f[1] === '00000000' && f[7] === '00000000')?.[0]
  return iface === undefined ? undefined : ifaces[iface]?.find((a) => a.family === 'IPv4' && !a.internal)?.address
}

/** Writes the pod's files (those its networks' attach does not); returns where they all are. */
export const writePodFiles = (podDir: string, input: PodFilesInput): PodFiles => {
  const dir = path.join(podDir, POD_FILES_DIR)
  fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE })
  const at = (name: string): string => path.join(dir, name)
  writeFileAtomic(dir, 'containerenv', '', { mode: 0o644 })
  const files: PodFiles = { hosts: at('hosts'), hostname: at('hostname'), containerenv: at('containerenv'), ...(input.network !== 'none' || input.resolv.dns !== undefined ? { resolvConf: at('resolv.conf') } : {}) }
  if (input.network === 'joined') return files
  const own = input.network === 'none' ? ['127.0.0.1'] : []
  const hosts = hostsFile({ hostname: input.hostname, addresses: own, names: [...input.names], addHosts: input.addHosts, ...(input.hostAddress ? { hostAddress: input.hostAddress } : {}), base: hostHosts(), final: true })
  writeFileAtomic(dir, 'hosts', hosts, { mode: 0o644 })
  writeFileAtomic(dir, 'hostname', hostnameFile(input.hostname), { mode: 0o644 })
  if (files.resolvConf !== undefined) writeFileAtomic(dir, 'resolv.conf', resolvConf(hostResolvConf(), { ...input.resolv, keepLoopback: input.network === 'host' }), { mode: 0o644 })
  return files
}

/** The binds of a pod's files into an app, at their places in its root. */
export const podFileBinds = (files: PodFiles): Bind[] => [
  { source: files.hosts, target: '/etc/hosts', readOnly: true },
  { source: files.hostname, target: '/etc/hostname', readOnly: true },
  ...(files.resolvConf !== undefined ? [{ source: files.resolvConf, target: '/etc/resolv.conf', readOnly: true }] : []),
  { source: files.containerenv, target: '/run/.containerenv', readOnly: true },
]
