/**
 * An isolated pod on its networks (CONTRACT §14), as the runtime joins
 * and leaves them: the pod's network namespace is its infra's, made new
 * when the infra starts; while it starts, the checks and the record of
 * each network the pod names (its host ports claimed); once it runs, CNI
 * ADD of each (lib/network/attach.ts), with its published ports on the
 * first, its /etc files written in the pod's `etc/`; and DEL when the pod
 * ends. A pod whose supervisor dies without that DEL (SIGKILL) loses its
 * namespace with its infra (the veths go with it); its addresses, ports
 * and record stay until `gc` or `rm` (releaseDeadNetworks), which runs
 * DEL from the record.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { detach, gcNetworks, reserveAttach, type NetworkGcResult } from '../network/attach.js'
import type { ResolvOptions } from '../network/etc-files.js'
import { holdNetns } from '../network/netns.js'
import { normalizePort } from '../network/ports.js'
import { networkEnv, recordFile, recordsDir } from '../network/layout.js'
import { findNetwork } from '../network/networks.js'
import type { Attachment, HostEntry } from '../network/records.js'
import { isLocked } from '../pod/locks.js'
import type { PodManifest } from '../pod/manifest.js'
import { DEFAULT_NETWORK, podNetworks } from '../pod/manifest.js'
import { POD_FILES_DIR } from './pod-files.js'
import { joinUserNetwork, userNetworkProgram } from './user-network.js'

/** `--add-host NAME:IP` entries: the name up to the first colon, the address after it (an IPv6 address has colons). */
export const addHostsOf = (m: Pick<PodManifest, 'addHosts'>): HostEntry[] =>
  (m.addHosts ?? []).map((e) => ({ name: e.slice(0, e.indexOf(':')), ip: e.slice(e.indexOf(':') + 1) }))

/** What the manifest asks of the pod's resolv.conf in the place of the host's. */
export const resolvOf = (m: Pick<PodManifest, 'dns' | 'dnsSearch' | 'dnsOptions'>): ResolvOptions => ({
  ...(m.dns ? { dns: m.dns } : {}),
  ...(m.dnsSearch ? { search: m.dnsSearch } : {}),
  ...(m.dnsOptions ? { options: m.dnsOptions } : {}),
})

/** A pod on its networks: what it got, and how it leaves them. */
export interface PodNetworking {
  attachments: Attachment[]
  /** CNI DEL of every network; what fails stays for gc. `podEnding`: the infra's end, under way (detach says what runs beside it). */
  leave(podEnding?: Promise<unknown>): Promise<void>
}

export interface ReserveInput {
  dataDir: string
  podDir: string
  uuid: string
  hostname: string
}

/** The infra, whose network namespace is the pod's. */
export interface Infra {
  pid: number
  start: string | null
}

/** A pod's networks reserved before its infra runs: joined once it runs, or cancelled. */
export interface PendingNetworks {
  join(infra: Infra): Promise<PodNetworking>
  cancel(): void
}

/**
 * Reserves the networks the pod's manifest names (none for the host's
 * network or `none`): what needs no namespace is done while the infra
 * starts, the checks and the record with its host ports (reserveAttach).
 * Throws, there or at the join, what attach throws: ENONETWORK (3) for a
 * network there is none of, EBADSTATE (4) for a host port taken (naming
 * who holds it), EFAILED for a plugin's failure; nothing is left joined.
 */
export const reserveNetworks = async (m: PodManifest, input: ReserveInput): Promise<PendingNetworks | undefined> => {
  const names = podNetworks(m)
  if (names.length === 0) return undefined
  const podNames = [...new Set([...(m.name !== undefined ? [m.name] : []), ...m.apps.map((a) => a.name)])]
  // A user that is not root has no CNI: the default network is a user-mode one, as rootless podman's is.
  if (process.geteuid?.() !== 0) {
    rootlessNetworkProblem(names)
    const join = (infra: Infra): Promise<PodNetworking> =>
      joinUserNetwork({
        podDir: input.podDir,
        uuid: input.uuid,
        hostname: input.hostname,
        names: podNames,
        infraPid: infra.pid,
        ports: (m.ports ?? []).map(normalizePort),
        addHosts: addHostsOf(m),
        resolv: resolvOf(m),
        etcDir: path.join(input.podDir, POD_FILES_DIR),
      })
    return { join, cancel: () => {} }
  }
  const env = networkEnv()
  const pending = await reserveAttach(
    input.dataDir,
    {
      uuid: input.uuid,
      // podman publishes a pod's ports on its first network.
      networks: names.map((name, i) => ({ name, ...(i === 0 && m.ports !== undefined ? { ports: m.ports.map(normalizePort) } : {}) })),
      name: m.name ?? null,
      hostname: input.hostname,
      names: podNames,
      addHosts: addHostsOf(m),
      etcDir: path.join(input.podDir, POD_FILES_DIR),
      resolv: resolvOf(m),
    },
    env,
  )
  const join = async (infra: Infra): Promise<PodNetworking> => {
    const netns = `/proc/${infra.pid}/ns/net`
    // Held from the ADD to the DEL, so that a DEL that works in the namespace finds it whole however soon the infra ends.
    const held = holdNetns(netns)
    let attachments: Attachment[]
    try {
      attachments = await pending.add(netns, infra.start !== null ? { pid: infra.pid, start: infra.start } : undefined)
    } catch (er) {
      held?.release()
      throw er
    }
    const leave = async (podEnding?: Promise<unknown>): Promise<void> => {
      try {
        await detach(input.dataDir, input.uuid, env, { ...(podEnding !== undefined ? { podEnding } : {}), ...(held !== undefined ? { netns: held.path } : {}) })
      } finally {
        held?.release()
      }
    }
    return { attachments, leave }
  }
  return { join, cancel: () => pending.cancel() }
}

/**
 * What a pod's networks need of this host, checked before the pod is made
 * (prepare): each network exists (ENONETWORK, exit 3; the default one is
 * made on first use) and its plugins are installed, or, rootless,
 * slirp4netns for the default network, and no other.
 */
export const checkPodNetworks = async (dataDir: string, m: PodManifest): Promise<void> => {
  const names = podNetworks(m)
  if (names.length === 0) return
  const env = networkEnv()
  if (process.geteuid?.() !== 0) {
    // A network there is none of is exit 3 whoever asks; one that exists is out of a rootless pod's reach.
    for (const name of names) if (name !== DEFAULT_NETWORK) await findNetwork(dataDir, name, env)
    rootlessNetworkProblem(names)
    return
  }
  for (const name of names) await findNetwork(dataDir, name, env)
}

/** Throws EFAILED when a rootless pod cannot have `names`: other networks than the default, or no slirp4netns. */
const rootlessNetworkProblem = (names: readonly string[]): void => {
  if (names.length > 1 || names[0] !== DEFAULT_NETWORK) {
    throw new PodctlError('EFAILED', `a pod run by a user that is not root joins "${DEFAULT_NETWORK}" (a user-mode network) or none, not ${names.map((n) => JSON.stringify(n)).join(', ')}`, `run it as root, or with --network ${DEFAULT_NETWORK}`)
  }
  userNetworkProgram()
}

/**
 * DEL for one pod whose supervisor is gone and left its networks recorded
 * (a SIGKILL): what stop runs, as the next command that finds the dead
 * pod (CONTRACT §14). Nothing for a pod that is alive or has no record.
 */
export const releasePodNetworks = async (dataDir: string, uuid: string): Promise<void> => {
  if (!fs.existsSync(recordFile(dataDir, uuid)) || isLocked(dataDir, uuid)) return
  await detach(dataDir, uuid, networkEnv())
}

/**
 * DEL for every pod whose networks are recorded and whose supervisor is
 * gone (no live holder of its lock): what gc and rm run before they
 * delete pods, so that no address, port or rule outlives its pod. Cheap
 * where no pod was ever on a network (one lstat).
 */
export const releaseDeadNetworks = async (dataDir: string): Promise<NetworkGcResult | undefined> => {
  if (!fs.existsSync(recordsDir(dataDir))) return undefined
  return gcNetworks(dataDir, networkEnv())
}
