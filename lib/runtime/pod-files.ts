/**
 * The files podctl makes for an isolated pod and binds read-only into
 * every app (CONTRACT §14, §15), as podman makes a container's, so that a
 * pod's own name resolves and DNS does not depend on what an image's
 * builder left in its /etc:
 *
 * - /etc/hosts: the host's, then `host.containers.internal` (the host's
 *   own address), then, where the pod has a network of its own, its
 *   hostname (and name) at its address;
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
  network: 'host' | 'none' | 'joined'
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

/** The contents of a pod's /etc/hosts. */
export const hostsFile = (input: PodFilesInput, hostHosts: string, hostIp: string | undefined): string => {
  const lines = [hostHosts.replace(/\n*$/, '')]
  if (hostIp !== undefined) lines.push(`${hostIp}\thost.containers.internal`)
  if (input.network !== 'host') lines.push(`127.0.0.1\t${[input.hostname, ...(input.name && input.name !== input.hostname ? [input.name] : [])].join(' ')}`)
  return `${lines.filter((l) => l !== '').join('\n')}\n`
}

/** Writes the pod's files; returns where they are. */
export const writePodFiles = (podDir: string, input: PodFilesInput): PodFiles => {
  const dir = path.join(podDir, POD_FILES_DIR)
  fs.mkdirSync(dir, { recursive: true, mode: DIR_MODE })
  const put = (name: string, text: string): string => {
    writeFileAtomic(dir, name, text, { mode: 0o644 })
    return path.join(dir, name)
  }
  const hosts = put('hosts', hostsFile(input, readHostText('/etc/hosts', MAX_HOST_FILE) ?? '127.0.0.1\tlocalhost\n', hostAddress()))
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
