/**
 * The files podctl makes for an isolated pod and binds read-only into
 * every app (CONTRACT §14, §15), as podman makes a container's, so that a
 * pod's own name resolves and DNS does not depend on what an image's
 * builder left in its /etc:
 *
 * - /etc/hosts: the host's entries, then localhost,
 *   `host.containers.internal` (the host's own address) and, where the
 *   pod has a network of its own, its hostname (and name) at its address,
 *   with only the names the host's lack;
 * - /etc/hostname: the pod's hostname;
 * - /etc/resolv.conf: the host's, where the pod has the host's network
 *   (with `network: none` an image app keeps its image's own, as podman
 *   leaves it: nothing can be resolved anyway);
 * - /run/.containerenv: empty, as podman leaves it for a container that
 *   is not privileged; its presence says "in a container".
 *
 * Written when the pod starts, under `<pod>/etc/`, each by an atomic
 * rename.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { writeFileAtomic } from '../fs/atomic.js'
import { DIR_MODE } from '../fs/modes.js'
import { readHostText } from '../fs/read.js'
import type { Bind, PodFiles } from './generate/facts.js'

/** Where a pod's generated files are, in the pod dir. */
export const POD_FILES_DIR = 'etc'

/** A host's /etc/hosts or /etc/resolv.conf is small; a bound on what is copied. */
const MAX_HOST_FILE = 1024 * 1024

export interface PodFilesInput {
  hostname: string
  /** The pod's name, when it has one besides its hostname. */
  name?: string
  network: 'host' | 'none'
}

/** The host's own address: the first IPv4 address of the interface of its default route. */
export const hostAddress = (routes = readHostText('/proc/net/route', MAX_HOST_FILE) ?? '', ifaces = os.networkInterfaces()): string | undefined => {
  const iface = routes
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .find((f) => f[1] === '00000000' && f[7] === '00000000')?.[0]
  return iface === undefined ? undefined : ifaces[iface]?.find((a) => a.family === 'IPv4' && !a.internal)?.address
}

/** One line of a hosts file: an address and its names. */
interface HostEntry {
  ip: string
  names: string[]
}

/** The entries of a hosts file, as podman reads the host's: comments cut, a line without a name skipped. */
const parseHosts = (text: string): HostEntry[] =>
  text
    .split('\n')
    .map((l) => l.replace(/#.*$/, '').trim().split(/\s+/))
    .filter((f) => f.length >= 2)
    .map(([ip, ...names]) => ({ ip: ip!, names }))

/**
 * The contents of a pod's /etc/hosts, as podman 4 writes a container's:
 * the host's entries, one `IP<TAB>NAMES` line each, then localhost (v4
 * and v6), `host.containers.internal` and, where the pod has a network
 * of its own, its hostname (and name) at its address, each with only the
 * names the lines above do not have yet.
 */
export const hostsFile = (input: PodFilesInput, hostHosts: string, hostIp: string | undefined): string => {
  const own: HostEntry[] = [
    { ip: '127.0.0.1', names: ['localhost'] },
    { ip: '::1', names: ['localhost'] },
    ...(hostIp !== undefined ? [{ ip: hostIp, names: ['host.containers.internal'] }] : []),
    ...(input.network !== 'host' ? [{ ip: '127.0.0.1', names: [input.hostname, ...(input.name && input.name !== input.hostname ? [input.name] : [])] }] : []),
  ]
  const lines: string[] = []
  const seen = new Set<string>()
  for (const e of parseHosts(hostHosts)) {
    e.names.forEach((n) => seen.add(n))
    lines.push(`${e.ip}\t${e.names.join(' ')}`)
  }
  for (const e of own) {
    const names = e.names.filter((n) => !seen.has(n))
    if (names.length > 0) lines.push(`${e.ip}\t${names.join(' ')}`)
  }
  return `${lines.join('\n')}\n`
}

/** Writes the pod's files; returns where they are. */
export const writePodFiles = (podDir: string, input: PodFilesInput): PodFiles => {
  const dir = path.join(podDir, POD_FILES_DIR)
  fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE })
  const put = (name: string, text: string): string => {
    writeFileAtomic(dir, name, text, { mode: 0o644 })
    return path.join(dir, name)
  }
  const hosts = put('hosts', hostsFile(input, readHostText('/etc/hosts', MAX_HOST_FILE) ?? '', hostAddress()))
  const hostname = put('hostname', input.hostname)
  const containerenv = put('containerenv', '')
  const resolv = input.network === 'host' ? readHostText('/etc/resolv.conf', MAX_HOST_FILE) : undefined
  return { hosts, hostname, containerenv, ...(resolv !== undefined ? { resolvConf: put('resolv.conf', resolv) } : {}) }
}

/** The binds of a pod's files into an app, at their places in its root. */
export const podFileBinds = (files: PodFiles): Bind[] => [
  { source: files.hosts, target: '/etc/hosts', readOnly: true },
  { source: files.hostname, target: '/etc/hostname', readOnly: true },
  ...(files.resolvConf !== undefined ? [{ source: files.resolvConf, target: '/etc/resolv.conf', readOnly: true }] : []),
  { source: files.containerenv, target: '/run/.containerenv', readOnly: true },
]
