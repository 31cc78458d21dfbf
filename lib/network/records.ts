/**
 * A pod's attachments, `<data>/networks/pods/<uuid>.json`: CNI's result
 * cache, kept so that DEL never needs the pod. Each attachment is recorded
 * before its ADD starts (state `adding`, with the whole conflist it runs,
 * its interface name, arguments and port mappings) and again with the
 * result once ADD answers (`added`); whatever a crash interrupts, the
 * record holds what DEL needs, and the record goes only when every DEL has
 * succeeded. Written by atomic replace by the holder of the pod's network
 * lock (networks/locks/<uuid>); read by anyone.
 */
import fs from 'node:fs'
import { unlessNotFound } from '../errors.js'
import { writeFileAtomic } from '../fs/atomic.js'
import { DIR_MODE } from '../fs/modes.js'
import { readOwnFile } from '../fs/read.js'
import type { NetworkAttachment } from '../pod/record.js'
import { parseIp } from './cidr.js'
import type { CapabilityArgs, CniResult, Conflist } from './cni.js'
import { networksDir, recordFile, recordsDir } from './layout.js'

/** A name another pod's /etc/hosts gives an address (`--add-host NAME:IP`). */
export interface HostEntry {
  name: string
  ip: string
}

export interface AttachmentRecord {
  network: string
  ifname: string
  /** The conflist ADD ran with, whole: DEL runs the same, whatever became of the network since. */
  config: Conflist
  capabilityArgs: CapabilityArgs
  /** CNI_ARGS. */
  args: [string, string][]
  /** More names of the pod on this network. */
  aliases: string[]
  /** `adding` until ADD answered; either way, DEL is owed from the moment this is written. */
  state: 'adding' | 'added'
  result: CniResult | null
  /** The plugin running for it at the last write, if any: a DEL after a crash waits for its process group. */
  running: { pid: number; start: string } | null
}

export interface PodNetworkRecord {
  uuid: string
  /** The pod's name, for messages (a port another pod publishes). */
  name: string | null
  netns: string
  /** The namespace's identity when ADD ran (st_dev, st_ino): a DEL names the path only while it is still that namespace. */
  netnsId: { dev: string; ino: string } | null
  /** The process whose /proc/PID/ns/net `netns` is, when it is one: the path means nothing once it has died. */
  holder: { pid: number; start: string } | null
  /** Whether podctl made `netns` (createPodNetns) and removes it after DEL. */
  ownNetns: boolean
  hostname: string
  /** Names other pods on its named networks know it by (its name, its apps'). */
  names: string[]
  addHosts: HostEntry[]
  /** Where its /etc/hosts and friends are (lib/network/etc-files.ts), to rewrite as peers come and go; null when it has none. */
  etcDir: string | null
  attachments: AttachmentRecord[]
}

/** What `list`, `status` and the pod JSON show of one attachment (CONTRACT §14): the pod record's type, which the runtime writes into pod.json. */
export type Attachment = NetworkAttachment

/** Creates networks/ and networks/pods/ if missing. */
export const ensureRecordsDir = (dataDir: string): void => {
  for (const d of [networksDir(dataDir), recordsDir(dataDir)]) {
    try {
      fs.mkdirSync(d, { mode: DIR_MODE })
    } catch (er) {
      if ((er as NodeJS.ErrnoException).code !== 'EEXIST') throw er
    }
  }
}

export const writeRecord = (dataDir: string, rec: PodNetworkRecord): void => {
  writeFileAtomic(recordsDir(dataDir), `${rec.uuid}.json`, `${JSON.stringify(rec)}\n`)
}

export const removeRecord = (dataDir: string, uuid: string): void => {
  fs.rmSync(recordFile(dataDir, uuid), { force: true })
}

/** A pod's record; undefined when it has none; `{damaged}` when it cannot be read as one. */
export const readRecord = (dataDir: string, uuid: string): PodNetworkRecord | { damaged: string } | undefined => {
  const f = readOwnFile(recordFile(dataDir, uuid))
  if ('missing' in f) return undefined
  if ('damaged' in f) return { damaged: f.damaged }
  try {
    const v = JSON.parse(f.bytes.toString('utf8')) as PodNetworkRecord
    if (v.uuid !== uuid || !Array.isArray(v.attachments)) return { damaged: `${recordFile(dataDir, uuid)} is not a network record of pod ${uuid}` }
    return v
  } catch (er) {
    return { damaged: `${recordFile(dataDir, uuid)}: ${(er as Error).message}` }
  }
}

const UUID_JSON = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.json$/

/** The uuids of the pods that have a record. */
export const recordedPods = (dataDir: string): string[] =>
  (unlessNotFound(() => fs.readdirSync(recordsDir(dataDir))) ?? []).filter((n) => UUID_JSON.test(n)).map((n) => n.slice(0, -'.json'.length))

/** Every readable record (damaged ones left out). */
export const allRecords = (dataDir: string): PodNetworkRecord[] =>
  recordedPods(dataDir).flatMap((uuid) => {
    const r = readRecord(dataDir, uuid)
    return r === undefined || 'damaged' in r ? [] : [r]
  })

const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

/**
 * The addresses and the pod's interface of a CNI result (1.0.0, and 0.3/0.4
 * with their `version` fields, which change nothing here): the first IPv4
 * and IPv6 address given to the interface `ifname`, and its MAC.
 */
export const attachmentOf = (network: string, ifname: string, result: CniResult | null): Attachment => {
  const interfaces = Array.isArray(result?.interfaces) ? result.interfaces : []
  const ownIndex = interfaces.findIndex((i) => isObj(i) && i.name === ifname && typeof i.sandbox === 'string' && i.sandbox !== '')
  const own = ownIndex >= 0 ? (interfaces[ownIndex] as Record<string, unknown>) : undefined
  let ip: string | null = null
  let ip6: string | null = null
  for (const e of Array.isArray(result?.ips) ? result.ips : []) {
    if (!isObj(e) || typeof e.address !== 'string') continue
    if (typeof e.interface === 'number' && ownIndex >= 0 && e.interface !== ownIndex) continue
    const addr = e.address.split('/')[0]!
    const fam = parseIp(addr)?.family
    if (fam === 4) ip ??= addr
    else if (fam === 6) ip6 ??= addr
  }
  return { name: network, ip, ip6, iface: ifname, mac: typeof own?.mac === 'string' ? own.mac : null }
}

/** A record's attachments as `list` and `status` show them (ADDs that answered). */
export const recordAttachments = (rec: PodNetworkRecord): Attachment[] => rec.attachments.filter((a) => a.state === 'added').map((a) => attachmentOf(a.network, a.ifname, a.result))
