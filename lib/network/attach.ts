/**
 * Pods on networks: what the runtime calls when a pod's network namespace
 * exists (attach), when the pod stops or goes (detach), and what gc calls
 * for pods that died without a detach (gcNetworks). Documentation/devel/
 * networks.md has the design; in short:
 *
 * - Every ADD is recorded before it starts (lib/network/records.ts), with
 *   the whole conflist it runs, so DEL can always run, from the record
 *   alone: with the pod gone, its namespace gone, its network removed.
 * - A pod's ADDs and DELs hold the pod's network lock; the port check and
 *   the record of the ports it claims are made under the data dir's
 *   networks lock, so two pods never both publish one host port.
 * - A DEL after a crash first waits for a plugin the crash left running
 *   (its process group), so that an ADD finishing late cannot hold an
 *   address after the DEL.
 * - A DEL names the namespace only while the path still is the namespace
 *   ADD ran in (same device and inode, and the same holder process when it
 *   is /proc/PID/ns/net): a reused pid's namespace is never touched.
 * - Pods on a named network know each other by name through /etc/hosts,
 *   rewritten in place for every pod of the network when one comes or
 *   goes (lib/network/etc-files.ts).
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, errnoCode, shortId } from '../errors.js'
import { sweepDeadTemporaries } from '../fs/atomic.js'
import { lockHeldAt } from '../lock/lock.js'
import { acquireLockIn } from '../lock/with-lock.js'
import { isLocked } from '../pod/locks.js'
import { procStart, sameProcess } from '../proc/identity.js'
import { parseIp } from './cidr.js'
import { activePlugins, addList, delList, type CallTarget, type CniResult } from './cni.js'
import { hostHosts, hostResolvConf, hostnameFile, hostsFile, resolvConf, rewriteInPlace, writeEtcFiles, type HostsPeer, type ResolvOptions } from './etc-files.js'
import { rulesCurrent, applyRules } from './firewall.js'
import { DEFAULT_NETWORK, ipamDir, podNetworkLock, recordsDir, type NetworkEnv } from './layout.js'
import { delNeedsNetns } from './config.js'
import { checkRoute, findNetwork, firewallNets, ownNetworks, withNetworksLock, type Network } from './networks.js'
import { makePodNetns, podNetnsPath, removePodNetns } from './netns.js'
import { checkPortsFree, clashes, describeHostPort, normalizePort, type PortMapping } from './ports.js'
import {
  allRecords,
  attachmentOf,
  ensureRecordsDir,
  readRecord,
  recordAttachments,
  recordedPods,
  removeRecord,
  writeRecord,
  type Attachment,
  type AttachmentRecord,
  type HostEntry,
  type PodNetworkRecord,
} from './records.js'

/** One network a pod joins, and what it asks of it. */
export interface NetworkRequest {
  name: string
  /** Host ports forwarded to the pod on this network (portmap). */
  ports?: readonly PortMapping[]
  /** More names other pods of this network know the pod by. */
  aliases?: readonly string[]
  /** An address of the network's subnet to take (host-local's IP argument). */
  ip?: string
}

export interface AttachRequest {
  uuid: string
  /** The pod's network namespace: a bound one (createPodNetns), or /proc/PID/ns/net of its infra with `holder`. */
  netns: string
  /** The process whose namespace `netns` is, when it is a /proc path. */
  holder?: { pid: number; start: string }
  /** Whether detach removes `netns` (made by createPodNetns). */
  ownNetns?: boolean
  /** In order; the first is eth0, the next eth1, … */
  networks: readonly NetworkRequest[]
  /** The pod's name (messages about its ports). */
  name?: string | null
  hostname: string
  /** Names other pods of its named networks know it by: its name, its apps' names. */
  names?: readonly string[]
  addHosts?: readonly HostEntry[]
  /** A directory of the pod where its hosts, resolv.conf and hostname are written (and hosts kept current); none if absent. */
  etcDir?: string
  resolv?: ResolvOptions
}

const LOCK_WAIT_MS = 60_000

/** The pod's network lock, which an attach, a reservation and a detach hold for as long as they change its record. */
const takePodNetworkLock = (dataDir: string, uuid: string): { release(): void } => {
  ensureRecordsDir(dataDir)
  return acquireLockIn(podNetworkLock(dataDir, uuid), `the networks of pod ${shortId(uuid)}`, { wait: true, timeoutMs: LOCK_WAIT_MS })
}

const withPodLock = async <T>(dataDir: string, uuid: string, fn: () => Promise<T>): Promise<T> => {
  const held = takePodNetworkLock(dataDir, uuid)
  try {
    return await fn()
  } finally {
    held.release()
  }
}

/** Whether a live process holds the pod's network lock (an attach, a reservation, a detach). */
const networkLockHeld = (dataDir: string, uuid: string): boolean => lockHeldAt(podNetworkLock(dataDir, uuid))

const requireRoot = (): void => {
  if ((process.geteuid?.() ?? 0) !== 0) throw new PodctlError('EFAILED', 'attaching a pod to a CNI network needs root', 'a podctl that is not root gives its pods a user-mode network (slirp4netns or pasta)')
}

/** A namespace's identity: its device and inode (nsfs), as strings. */
const netnsIdentity = (p: string): { dev: string; ino: string } | undefined => {
  try {
    const st = fs.statSync(p, { bigint: true })
    return { dev: st.dev.toString(), ino: st.ino.toString() }
  } catch {
    return undefined
  }
}

/** Whether `p` is the namespace the record was attached in. */
const isRecordedNetns = (rec: PodNetworkRecord, p: string): boolean => {
  const now = netnsIdentity(p)
  return rec.netnsId !== null && now !== undefined && now.dev === rec.netnsId.dev && now.ino === rec.netnsId.ino
}

/** The namespace path DEL may name: the recorded one while it is still that namespace, else "" (plugins then free what is outside it). */
const netnsForDel = (rec: PodNetworkRecord): string => {
  if (rec.netns === '' || rec.netnsId === null) return ''
  if (rec.holder !== null && !sameProcess(rec.holder.pid, rec.holder.start)) return ''
  return isRecordedNetns(rec, rec.netns) ? rec.netns : ''
}

/** Checks a request before anything is written: EUSAGE naming what is wrong. */
const checkRequest = (req: ReserveRequest): void => {
  if (req.networks.length === 0) throw new PodctlError('EUSAGE', 'attach: no network named')
  const names = req.networks.map((n) => n.name)
  const twice = names.find((n, i) => names.indexOf(n) !== i)
  if (twice !== undefined) throw new PodctlError('EUSAGE', `network ${twice} is named twice`)
  const all: PortMapping[] = []
  for (const n of req.networks) {
    for (const p of n.ports ?? []) {
      const m = normalizePort(p)
      if (all.some((o) => clashes(o, m))) throw new PodctlError('EUSAGE', `host port ${describeHostPort(m)} is published twice`)
      all.push(m)
    }
    if (n.ip !== undefined && parseIp(n.ip) === undefined) throw new PodctlError('EUSAGE', `invalid address ${JSON.stringify(n.ip)} for network ${n.name}`)
  }
}

/** Puts the data dir's firewall rules back if this boot has not seen them (one small read when it has). */
const ensureRules = async (dataDir: string, nets: readonly Network[]): Promise<void> => {
  if (!nets.some((n) => n.own && n.info.driver === 'bridge')) return
  if (rulesCurrent(dataDir, firewallNets(dataDir))) return
  await withNetworksLock(dataDir, () => applyRules(dataDir, firewallNets(dataDir)))
}

const target = (rec: PodNetworkRecord, a: AttachmentRecord, netns: string): CallTarget => ({ containerId: rec.uuid, netns, ifname: a.ifname, args: a.args })

/** The plugin a record says was running: waits (up to `ms`) until its process group is gone. */
const waitForPlugin = async (running: AttachmentRecord['running'], ms: number): Promise<void> => {
  if (running === null || running === undefined) return
  const groupAlive = (): boolean => {
    try {
      process.kill(-running.pid, 0)
      return true
    } catch (er) {
      return errnoCode(er) === 'EPERM'
    }
  }
  // A leader alive with its start time is ours: its group can be ended now.
  if (sameProcess(running.pid, running.start)) {
    try {
      process.kill(-running.pid, 'SIGKILL')
    } catch {
      // gone meanwhile
    }
  }
  const deadline = Date.now() + ms
  while (groupAlive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
}

/**
 * Joins a pod to its networks: CNI ADD of each, in order, on interfaces
 * eth0, eth1, …; then the pod's /etc files (when `etcDir` is given) and
 * the hosts files of the pods it shares a named network with. The
 * attachments as list and status show them. A failure deletes what was
 * added (nothing half-set) and throws: EBADSTATE for a host port that is
 * taken (naming who holds it) or a pod attached already, ENONETWORK for
 * an unknown network, EFAILED for a plugin's failure (what it said).
 */
export const attach = async (dataDir: string, req: AttachRequest, env: NetworkEnv): Promise<Attachment[]> => {
  const { netns, holder, ...rest } = req
  if (netnsIdentity(netns) === undefined) throw noNetns(req.uuid, netns)
  return (await reserveAttach(dataDir, rest, env)).add(netns, holder)
}

/** What reserveAttach needs: attach's request but the namespace, which need not exist yet. */
export type ReserveRequest = Omit<AttachRequest, 'netns' | 'holder'>

/**
 * A pod's networks reserved: attach's checks made, its record written
 * (its host ports claimed) and its network lock held, until `add` runs
 * CNI ADD in its namespace (as attach, whose result it returns) or
 * `cancel` drops the record. A runtime reserves while the pod's infra
 * starts, and adds once the infra's namespace exists.
 */
export interface PendingAttach {
  add(netns: string, holder?: { pid: number; start: string }): Promise<Attachment[]>
  cancel(): void
}

/** Checks a request and writes its record, holding the pod's network lock: attach's part before the namespace. */
export const reserveAttach = async (dataDir: string, req: ReserveRequest, env: NetworkEnv): Promise<PendingAttach> => {
  requireRoot()
  checkRequest(req)
  const nets: Network[] = []
  for (const n of req.networks) nets.push(await findNetwork(dataDir, n.name, env))
  for (const n of nets) checkRoute(n)
  await ensureRules(dataDir, nets)
  const lock = takePodNetworkLock(dataDir, req.uuid)
  let rec: PodNetworkRecord
  try {
    const old = readRecord(dataDir, req.uuid)
    if (old !== undefined && ('damaged' in old || old.attachments.length > 0)) throw attachedAlready(req.uuid)
    rec = {
      uuid: req.uuid,
      name: req.name ?? null,
      // A namespace createPodNetns made is recorded already; another is named by add.
      netns: old?.netns ?? '',
      netnsId: old?.netnsId ?? null,
      holder: null,
      // A namespace createPodNetns made stays podctl's to remove.
      ownNetns: req.ownNetns === true || old?.ownNetns === true,
      hostname: req.hostname,
      names: [...(req.names ?? [])],
      addHosts: [...(req.addHosts ?? [])],
      etcDir: req.etcDir ?? null,
      attachments: req.networks.map((n, i): AttachmentRecord => {
        const capabilityArgs = n.ports !== undefined && n.ports.length > 0 ? { portMappings: n.ports.map(normalizePort) } : {}
        return {
          network: n.name,
          ifname: `eth${i}`,
          // What ADD runs is what DEL runs: the record keeps the list as run.
          config: activePlugins(nets[i]!.conflist, capabilityArgs),
          capabilityArgs,
          args: [['IgnoreUnknown', '1'], ...(n.ip !== undefined ? ([['IP', n.ip]] as [string, string][]) : [])],
          aliases: [...(n.aliases ?? [])],
          state: 'adding',
          result: null,
          running: null,
        }
      }),
    }
    await releaseDeadPeers(dataDir, rec, env)
    // The ports are checked and claimed (the record written) at once: a second pod asking for one sees the first's claim.
    await withNetworksLock(dataDir, () => {
      const ports = publishedPorts(rec.attachments)
      if (ports.length > 0) checkPortsFree(ports, allRecords(dataDir).filter((r) => r.uuid !== req.uuid))
      writeRecord(dataDir, rec)
    })
  } catch (er) {
    lock.release()
    throw er
  }
  let settled = false
  const settle = (): void => {
    if (settled) throw new Error('bug: a reservation of networks is added or cancelled once')
    settled = true
  }
  /** Nothing was added: the record goes, but one of a namespace createPodNetns made, which the pod's detach removes. */
  const unreserve = (): void => {
    rec.attachments = []
    if (rec.ownNetns) writeRecord(dataDir, rec)
    else removeRecord(dataDir, rec.uuid)
  }
  return {
    cancel: () => {
      settle()
      try {
        unreserve()
      } finally {
        lock.release()
      }
    },
    add: async (netns, holder) => {
      settle()
      try {
        if (rec.netns !== '' && rec.netns !== netns) {
          unreserve()
          throw attachedAlready(req.uuid)
        }
        const netnsId = netnsIdentity(netns)
        if (netnsId === undefined) {
          unreserve()
          throw noNetns(req.uuid, netns)
        }
        Object.assign(rec, { netns, netnsId, holder: holder ?? null })
        await addAll(dataDir, rec, env, req.resolv)
        return recordAttachments(rec)
      } finally {
        lock.release()
      }
    },
  }
}

const attachedAlready = (uuid: string): PodctlError =>
  new PodctlError('EBADSTATE', `pod ${shortId(uuid)} is attached to networks already`, 'detach it first (its networks are deleted when it stops)')

const noNetns = (uuid: string, netns: string): PodctlError => new PodctlError('EFAILED', `pod ${shortId(uuid)}'s network namespace ${netns} does not exist`)

/** ADD of a reserved record's attachments, in its namespace, then its /etc files and its peers' names; on a failure, DEL of what was added. */
const addAll = async (dataDir: string, rec: PodNetworkRecord, env: NetworkEnv, resolv: ResolvOptions | undefined): Promise<void> => {
  try {
    for (const a of rec.attachments) {
      const onSpawn = (pid: number): void => {
        a.running = { pid, start: procStart(pid) ?? '' }
        writeRecord(dataDir, rec)
      }
      const result = await addList(a.config, target(rec, a, rec.netns), a.capabilityArgs, env, { onSpawn })
      a.state = 'added'
      a.result = result
      a.running = null
      writeRecord(dataDir, rec)
    }
    if (rec.etcDir !== null) writeEtcFiles(rec.etcDir, { hosts: hostsFile(hostsInput(rec, [])), 'resolv.conf': resolvConf(hostResolvConf(), resolv), hostname: hostnameFile(rec.hostname) })
    await refreshNames(dataDir, namedNetworks(rec))
  } catch (er) {
    try {
      await delRecord(dataDir, rec, env, { keepNetns: true })
    } catch {
      // The record stays; gc deletes what is left.
    }
    // Peers that learnt its name forget it.
    await refreshNames(dataDir, namedNetworks(rec)).catch(() => {})
    throw er
  }
}

/**
 * DEL of each of a record's attachments, last first; the record shrinks as
 * they go, and goes when they all have, with the namespace podctl made
 * (unless `keepNetns`: an attach that failed leaves it to the pod's detach).
 * `podEnding`: as detach has it.
 */
const delRecord = async (dataDir: string, rec: PodNetworkRecord, env: NetworkEnv, opts: { keepNetns?: boolean } & DetachOptions = {}): Promise<void> => {
  let first: unknown
  for (const a of [...rec.attachments].reverse()) {
    try {
      await waitForPlugin(a.running, env.timeoutMs)
      a.running = null
      // While the pod ends: at once, without the namespace where that leaves
      // nothing, or in the namespace the caller holds; else once it has ended.
      const outside = opts.podEnding !== undefined && !delNeedsNetns(a.config)
      const held = opts.netns !== undefined && isRecordedNetns(rec, opts.netns) ? opts.netns : undefined
      if (!outside && held === undefined) await opts.podEnding?.catch(() => {})
      const netns = outside ? '' : (held ?? netnsForDel(rec))
      try {
        await delList(a.config, target(rec, a, netns), a.capabilityArgs, a.result ?? undefined, env)
      } catch (er) {
        // The namespace can go while the plugins work in it (the pod's infra
        // ending at the same time): then again without it, as for a pod gone.
        if (netns === '' || netnsForDel(rec) !== '') throw er
        await delList(a.config, target(rec, a, ''), a.capabilityArgs, a.result ?? undefined, env)
      }
      rec.attachments = rec.attachments.filter((x) => x !== a)
    } catch (er) {
      first ??= er
    }
  }
  if (rec.attachments.length > 0) {
    writeRecord(dataDir, rec)
    throw first
  }
  if (rec.ownNetns && opts.keepNetns === true) return writeRecord(dataDir, rec)
  // The namespace first: a record without attachments still says it is to be removed.
  if (rec.ownNetns) await removePodNetns(rec.netns)
  removeRecord(dataDir, rec.uuid)
}

/** The host ports attachments publish (portmap's capability argument, as recorded). */
const publishedPorts = (atts: readonly AttachmentRecord[]): PortMapping[] => atts.flatMap((a) => (a.capabilityArgs.portMappings ?? []) as PortMapping[])

/**
 * DEL for the pods whose supervisors died holding what `rec` asks for: a
 * host port it publishes, or a name in the hosts files of a named network
 * it joins. CONTRACT §14 has the next command that finds a dead pod run
 * its DEL; a pod that wants its port or its peers' names is that command.
 * The records are read only where they are read anyway (ports, names).
 */
const releaseDeadPeers = async (dataDir: string, rec: PodNetworkRecord, env: NetworkEnv): Promise<void> => {
  const ports = publishedPorts(rec.attachments)
  const named = namedNetworks(rec)
  if (ports.length === 0 && named.length === 0) return
  const inTheWay = (other: PodNetworkRecord): boolean =>
    other.attachments.some((a) => named.includes(a.network) || publishedPorts([a]).some((t) => ports.some((p) => clashes(p, normalizePort(t)))))
  // Dead: no process holds its pod's lock or its network lock (a reservation waiting for its namespace), and
  // its namespace is gone with its infra (a namespace of the record's that is still there, such as one
  // createPodNetns made, belongs to something alive).
  const dead = (other: PodNetworkRecord): boolean => !isLocked(dataDir, other.uuid) && !networkLockHeld(dataDir, other.uuid) && netnsForDel(other) === ''
  for (const other of allRecords(dataDir)) {
    if (other.uuid === rec.uuid || !inTheWay(other) || !dead(other)) continue
    // What cannot be deleted now stays for gc; the port check then names the pod.
    await detach(dataDir, other.uuid, env).catch(() => {})
  }
}

export interface DetachOptions {
  /** The end of the pod's infra, under way. */
  podEnding?: Promise<unknown>
  /** A path to the pod's namespace that the caller holds open (holdNetns): named while it is the recorded one. */
  netns?: string
}

/**
 * Takes a pod off its networks: CNI DEL from its record, for every
 * attachment, whether the pod, its namespace or its networks still exist;
 * then the pods it shared a named network with forget its name. Does
 * nothing for a pod with no record (idempotent). A DEL that fails keeps
 * its attachment in the record for the next try (gc), and is thrown.
 * While the pod ends (DetachOptions), a network whose DEL needs no
 * namespace (delNeedsNetns) is deleted beside its end, the others in the
 * namespace the caller holds, or once the end has settled.
 */
export const detach = async (dataDir: string, uuid: string, env: NetworkEnv, opts: DetachOptions = {}): Promise<void> => {
  await withPodLock(dataDir, uuid, async () => {
    const rec = readRecord(dataDir, uuid)
    if (rec === undefined) return
    if ('damaged' in rec) throw new PodctlError('EFAILED', `cannot delete pod ${shortId(uuid)}'s networks: ${rec.damaged}`, 'its addresses are freed by the next gc; remove the file once they are')
    const named = namedNetworks(rec)
    await delRecord(dataDir, rec, env, opts)
    await refreshNames(dataDir, named)
  })
}

/**
 * Makes a network namespace for the pod (/run/netns/podctl-<uuid>, as `ip
 * netns add` does), recorded first so that detach, or gc after a crash,
 * removes it. A runtime starts the pod's infra in it and passes its path
 * to attach; it outlives the infra, so DEL always finds what ADD made.
 */
export const createPodNetns = async (dataDir: string, uuid: string): Promise<string> => {
  requireRoot()
  return withPodLock(dataDir, uuid, async () => {
    if (readRecord(dataDir, uuid) !== undefined) throw new PodctlError('EBADSTATE', `pod ${shortId(uuid)} has a network namespace or networks already`)
    const netns = podNetnsPath(uuid)
    writeRecord(dataDir, { uuid, name: null, netns, netnsId: null, holder: null, ownNetns: true, hostname: '', names: [], addHosts: [], etcDir: null, attachments: [] })
    try {
      await makePodNetns(uuid)
    } catch (er) {
      await removePodNetns(netns).catch(() => {})
      removeRecord(dataDir, uuid)
      throw er
    }
    return netns
  })
}

/** A pod's attachments, as list's NETWORKS column and the pod JSON show them; [] for a pod with none. */
export const attachmentsOf = (dataDir: string, uuid: string): Attachment[] => {
  const rec = readRecord(dataDir, uuid)
  return rec === undefined || 'damaged' in rec ? [] : recordAttachments(rec)
}

/** rkt's NETWORKS cell: `bridge:ip4=10.90.0.5`, networks separated by ", ". */
export const formatNetworks = (atts: readonly Attachment[]): string =>
  atts.map((a) => `${a.name}:${[a.ip !== null ? `ip4=${a.ip}` : '', a.ip6 !== null ? `ip6=${a.ip6}` : ''].filter((s) => s !== '').join(',') || 'no address'}`).join(', ')

export interface NetworkGcResult {
  /** Pods whose networks were deleted. */
  detached: string[]
  /** Addresses freed that no record held (a record lost), as NETWORK/ADDRESS. */
  released: string[]
  failed: { uuid: string; reason: string }[]
}

/**
 * gc's network pass: DEL for every recorded pod that is not alive (by
 * default: no live process holds its pod lock or its network lock), then, for host-local
 * addresses of the data dir's networks that no record accounts for, DEL
 * by container id. Goes past a failure, and reports it.
 */
export const gcNetworks = async (dataDir: string, env: NetworkEnv, opts: { alive?: (uuid: string) => boolean } = {}): Promise<NetworkGcResult> => {
  const alive = opts.alive ?? ((uuid: string) => isLocked(dataDir, uuid) || networkLockHeld(dataDir, uuid))
  const out: NetworkGcResult = { detached: [], released: [], failed: [] }
  // Addresses are listed before records are read: an ADD records itself before it takes one.
  const held = ipamHolders(dataDir)
  for (const uuid of recordedPods(dataDir)) {
    if (alive(uuid)) continue
    try {
      await detach(dataDir, uuid, env)
      out.detached.push(uuid)
    } catch (er) {
      out.failed.push({ uuid, reason: (er as Error).message })
    }
  }
  // A record's write killed before its rename leaves its temporary.
  sweepDeadTemporaries(recordsDir(dataDir))
  // A damaged record accounts for nothing: its addresses are freed by container id like a lost one's.
  const recorded = new Set(allRecords(dataDir).map((r) => r.uuid))
  const networks = new Map(ownNetworks(dataDir).flatMap((n) => ('damaged' in n ? [] : [[n.info.name, n] as const])))
  for (const h of held) {
    if (recorded.has(h.id) || alive(h.id)) continue
    const n = networks.get(h.network)
    if (n === undefined) continue
    try {
      await delList(n.conflist, { containerId: h.id, netns: '', ifname: h.ifname, args: [['IgnoreUnknown', '1']] }, {}, undefined, env)
      out.released.push(`${h.network}/${h.address}`)
    } catch (er) {
      out.failed.push({ uuid: h.id, reason: (er as Error).message })
    }
  }
  return out
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** host-local's reservations in the data dir: one file per address, holding the container id and the interface. */
export const ipamHolders = (dataDir: string): { network: string; address: string; id: string; ifname: string }[] => {
  const out: { network: string; address: string; id: string; ifname: string }[] = []
  let nets: string[]
  try {
    nets = fs.readdirSync(ipamDir(dataDir))
  } catch {
    return out
  }
  for (const network of nets) {
    let files: string[]
    try {
      files = fs.readdirSync(path.join(ipamDir(dataDir), network))
    } catch {
      continue
    }
    for (const address of files) {
      if (parseIp(address) === undefined) continue
      let text: string
      try {
        text = fs.readFileSync(path.join(ipamDir(dataDir), network, address), 'utf8').slice(0, 1024)
      } catch {
        continue
      }
      const [id, ifname] = text.split(/\r?\n/)
      if (id !== undefined && UUID_RE.test(id.trim())) out.push({ network, address, id: id.trim(), ifname: ifname?.trim() || 'eth0' })
    }
  }
  return out
}

/** The networks of a record whose pods know each other by name: all but the default one. */
const namedNetworks = (rec: PodNetworkRecord): string[] => rec.attachments.map((a) => a.network).filter((n) => n !== DEFAULT_NETWORK)

/** The gateway a result gives the pod's first address: the host, as the pod reaches it. */
const gatewayOf = (result: CniResult | null): string | undefined => {
  const ips = Array.isArray(result?.ips) ? result.ips : []
  const first = ips[0] as { gateway?: unknown } | undefined
  return typeof first?.gateway === 'string' ? first.gateway : undefined
}

/** What a pod's /etc/hosts is made of, given every record (its peers'). */
const hostsInput = (rec: PodNetworkRecord, all: readonly PodNetworkRecord[]) => {
  const added = rec.attachments.filter((a) => a.state === 'added')
  const own = added.map((a) => attachmentOf(a.network, a.ifname, a.result))
  const peers: HostsPeer[] = []
  for (const a of added) {
    if (a.network === DEFAULT_NETWORK) continue
    for (const other of all) {
      if (other.uuid === rec.uuid) continue
      for (const b of other.attachments) {
        if (b.network !== a.network || b.state !== 'added') continue
        const at = attachmentOf(b.network, b.ifname, b.result)
        for (const ip of [at.ip, at.ip6]) if (ip !== null) peers.push({ ip, names: [...new Set([other.hostname, ...other.names, ...b.aliases])] })
      }
    }
  }
  const gateway = gatewayOf(added[0]?.result ?? null)
  return {
    hostname: rec.hostname,
    addresses: own.flatMap((a) => [a.ip, a.ip6].filter((x): x is string => x !== null)),
    names: [...rec.names, ...added.flatMap((a) => a.aliases)],
    addHosts: rec.addHosts,
    ...(gateway !== undefined ? { hostAddress: gateway } : {}),
    peers,
    base: hostHosts(),
  }
}

/**
 * Rewrites, in place, the hosts file of every pod on these networks that
 * has one: how names stay current as pods come and go. Under the data
 * dir's networks lock, reading the records then, so that the last of two
 * pods attaching at once writes what both did.
 */
export const refreshNames = async (dataDir: string, networks: readonly string[]): Promise<void> => {
  if (networks.length === 0) return
  await withNetworksLock(dataDir, () => {
    const all = allRecords(dataDir)
    for (const rec of all) {
      if (rec.etcDir === null || !rec.attachments.some((a) => networks.includes(a.network))) continue
      rewriteInPlace(rec.etcDir, 'hosts', hostsFile(hostsInput(rec, all)))
    }
  })
}
