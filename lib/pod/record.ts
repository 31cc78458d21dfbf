/**
 * The pod record, `<pod>/pod.json`: everything `list` and `status` show
 * about a pod except its state, in the one file they read per pod. Only the
 * holder of the pod's lock writes it (the creator while preparing, the
 * supervisor while running, gc while marking), always by atomic replace,
 * so readers never see half a record and writers never lose each other's.
 */
import path from 'node:path'
import { writeFileAtomic } from '../fs/atomic.js'
import { MAX_RECORD_BYTES, readOwnFile, type OwnFile } from '../fs/read.js'
import { appType, isolationOf, networkOf, type App, type AppType, type Isolation, type Network, type PodManifest } from './manifest.js'

export type AppState = 'created' | 'running' | 'exited' | 'unknown'

export interface AppRecord {
  name: string
  type: AppType
  state: AppState
  pid: number | null
  started_at: string | null
  finished_at: string | null
  exit_code: number | null
  /** Why it ended besides its exit code (CONTRACT §12: "oom-killed"); absent or null otherwise. */
  reason?: string | null
  /** Set on an app with every capability and no seccomp filter: no boundary at all. */
  privileged?: boolean
  /** CONTRACT §13: the digest of the image the app runs from, and the name it was given by. */
  image?: string
  image_name?: string | null
  /** How its root was made from the image: an overlay, or a copy where overlayfs cannot be mounted. */
  rootfs?: 'overlay' | 'copy' | null
  /** The app's start time from /proc, to tell it from a reused pid. */
  pid_start?: string | null
}

/**
 * A pod's place on one network (CONTRACT §14), as the runtime records it
 * once CNI's ADD has answered: `list`'s NETWORKS column and the pod JSON's
 * `networks`. The network room's `Attachment` is this type.
 */
export interface NetworkAttachment {
  /** The network's name. */
  name: string
  ip: string | null
  ip6: string | null
  /** The pod's interface on it (eth0, eth1, …). */
  iface: string
  mac: string | null
}

export interface PodRecord {
  uuid: string
  name: string | null
  created_at: string | null
  started_at: string | null
  gc_marked_at: string | null
  /** The supervisor's pid while it lives, else the last one. */
  pid: number | null
  mutable: boolean
  /** CONTRACT §9. */
  isolation: Isolation
  network: Network
  /** Where the pod is attached, once it is (lib/runtime); null or absent before, and for a pod on the host's network or none. */
  networks?: NetworkAttachment[] | null
  /** The OCI runtime an isolated pod was prepared with (CONTRACT §12), by name; null for host processes. */
  runtime: string | null
  /** Where that runtime's program is. */
  runtime_path?: string | null
  exit_code: number | null
  labels: Record<string, string>
  annotations: Record<string, string>
  apps: AppRecord[]
  /** The host pid and start time of the pod's first process (the namespaces' holder) while it runs. */
  holder_pid?: number | null
  holder_start?: string | null
  /** When the supervisor declared itself ready (all regular apps started). */
  ready_at?: string | null
  /** Why the supervisor itself failed, when it did (CONTRACT §10). */
  failure?: string | null
}

export const RECORD_FILE = 'pod.json'
export const MANIFEST_FILE = 'manifest'

/** RFC 3339 UTC with milliseconds, as CONTRACT §5 wants. */
export const isoTime = (d: Date | number = Date.now()): string => new Date(d).toISOString()

/** The record of a freshly prepared pod; `runtime` is the OCI runtime of an isolated one. */
export const initialRecord = (uuid: string, m: PodManifest, createdAt: Date, runtime?: { name: string; path: string }, imageNames?: ReadonlyMap<string, string | null>): PodRecord => ({
  uuid,
  name: m.name ?? null,
  created_at: isoTime(createdAt),
  started_at: null,
  gc_marked_at: null,
  pid: null,
  mutable: m.mutable === true,
  isolation: isolationOf(m),
  network: networkOf(m),
  networks: null,
  runtime: runtime?.name ?? null,
  ...(runtime ? { runtime_path: runtime.path } : {}),
  exit_code: null,
  labels: { ...(m.labels ?? {}) },
  annotations: { ...(m.annotations ?? {}) },
  apps: m.apps.map((a) => ({ ...newAppRecord(a), ...(a.image !== undefined ? { image_name: imageNames?.get(a.name) ?? null } : {}) })),
})

/** The record of an app that has not started yet. */
export const newAppRecord = (a: App): AppRecord => ({
  name: a.name,
  type: appType(a),
  state: 'created',
  pid: null,
  started_at: null,
  finished_at: null,
  exit_code: null,
  ...(a.privileged === true ? { privileged: true } : {}),
  ...(a.image !== undefined ? { image: a.image } : {}),
})

/** An empty record for a pod whose pod.json is missing (a crash while preparing). */
export const emptyRecord = (uuid: string): PodRecord => ({
  uuid,
  name: null,
  created_at: null,
  started_at: null,
  gc_marked_at: null,
  pid: null,
  mutable: false,
  isolation: 'host',
  network: 'host',
  networks: null,
  runtime: null,
  exit_code: null,
  labels: {},
  annotations: {},
  apps: [],
})

/** Where a record was read from: its bytes, nothing yet, or why it cannot be read. */
export type RecordFile = OwnFile

/** A pod's record file as stored: never read through a link, never more than MAX_RECORD_BYTES. */
export const readRecordFile = (podDir: string): RecordFile => readOwnFile(path.join(podDir, RECORD_FILE), MAX_RECORD_BYTES)

type Check = (v: unknown) => boolean
const isStr: Check = (v) => typeof v === 'string'
const strOrNull: Check = (v) => v === null || typeof v === 'string'
const intOrNull: Check = (v) => v === null || Number.isSafeInteger(v)
const isBool: Check = (v) => typeof v === 'boolean'
const stringMap: Check = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every(isStr)
const oneOf = (...xs: string[]): Check => (v) => typeof v === 'string' && xs.includes(v)

const optional = (check: Check): Check => (v) => v === undefined || check(v)
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)
const attachment: Check = (v) => isObject(v) && isStr(v.name) && strOrNull(v.ip) && strOrNull(v.ip6) && isStr(v.iface) && strOrNull(v.mac)
const attachments: Check = (v) => v === null || (Array.isArray(v) && v.every(attachment))

const RECORD_FIELDS: Record<string, Check> = {
  uuid: isStr,
  name: strOrNull,
  created_at: strOrNull,
  started_at: strOrNull,
  gc_marked_at: strOrNull,
  pid: intOrNull,
  mutable: isBool,
  isolation: oneOf('host', 'namespaces'),
  network: (v) => typeof v === 'string' && v !== '',
  // Absent in a record written before pods had networks.
  networks: optional(attachments),
  runtime: strOrNull,
  exit_code: intOrNull,
  labels: stringMap,
  annotations: stringMap,
}
const APP_FIELDS: Record<string, Check> = {
  name: isStr,
  type: oneOf('init', 'regular', 'ephemeral'),
  state: oneOf('created', 'running', 'exited', 'unknown'),
  pid: intOrNull,
  started_at: strOrNull,
  finished_at: strOrNull,
  exit_code: intOrNull,
  reason: optional(strOrNull),
  privileged: optional(isBool),
  image: optional(isStr),
  image_name: optional(strOrNull),
  rootfs: optional(strOrNull),
}

const fieldProblem = (o: Record<string, unknown>, fields: Record<string, Check>, at: string): string | undefined => {
  for (const [k, ok] of Object.entries(fields)) {
    if (!ok(o[k])) return `${at}${k} is ${o[k] === undefined ? 'missing' : `wrong: ${JSON.stringify(o[k])?.slice(0, 40)}`}`
  }
  return undefined
}

/** Why a parsed record cannot be used, in one line, or undefined if it can. */
export const recordProblem = (stored: unknown, uuid?: string): string | undefined => {
  if (stored === null || typeof stored !== 'object' || Array.isArray(stored)) return 'pod.json is not a JSON object'
  const o = stored as Record<string, unknown>
  const top = fieldProblem(o, RECORD_FIELDS, 'pod.json: ')
  if (top) return top
  if (uuid !== undefined && o.uuid !== uuid) return `pod.json records another pod (${String(o.uuid).slice(0, 36)})`
  if (!Array.isArray(o.apps)) return 'pod.json: apps is not a list'
  for (const [i, a] of o.apps.entries()) {
    if (a === null || typeof a !== 'object' || Array.isArray(a)) return `pod.json: apps[${i}] is not an object`
    const bad = fieldProblem(a as Record<string, unknown>, APP_FIELDS, `pod.json: apps[${i}].`)
    if (bad) return bad
  }
  if (o.private !== undefined && (o.private === null || typeof o.private !== 'object')) return 'pod.json: private is not an object'
  return undefined
}

/** Parses a stored record: the record, or why it is damaged (one line). */
export const parseRecord = (text: string, uuid?: string): { record: PodRecord } | { damaged: string } => {
  let stored: unknown
  try {
    stored = JSON.parse(text)
  } catch {
    return { damaged: text.trim() === '' ? 'pod.json is empty' : 'pod.json is not valid JSON' }
  }
  const problem = recordProblem(stored, uuid)
  if (problem !== undefined) return { damaged: problem }
  const { private: priv, ...r } = stored as StoredRecord
  r.networks ??= null
  if (priv !== undefined) {
    const { app_pid_start: starts, ...rest } = priv
    Object.assign(r, rest)
    if (starts !== null && typeof starts === 'object') {
      for (const a of r.apps) if (typeof starts[a.name] === 'string') a.pid_start = starts[a.name]!
    }
  }
  return { record: r }
}

/** Parses a stored record; undefined if it is damaged. */
export const parseRecordText = (text: string): PodRecord | undefined => {
  const r = parseRecord(text)
  return 'record' in r ? r.record : undefined
}

/** Reads a pod's record; undefined if it has none or it is damaged. */
export const readRecord = (podDir: string): PodRecord | undefined => {
  const f = readRecordFile(podDir)
  return 'bytes' in f ? parseRecordText(f.bytes.toString('utf8')) : undefined
}

// How a record is stored: the fields of CONTRACT §5 (all but `state`), in
// its order, with `apps` last; then, only when there are any, the fields
// only podctl uses, under "private". A record without "private" therefore
// ends with "]}", and `podctl list` copies its bytes into its output instead
// of parsing and re-serializing it (lib/pod/view.ts podViewJsonBytes).
type StoredRecord = Omit<PodRecord, 'ready_at'> & {
  private?: Record<string, unknown> & { app_pid_start?: Record<string, string> }
}

const PUBLIC_KEYS = ['uuid', 'name', 'created_at', 'started_at', 'gc_marked_at', 'pid', 'mutable', 'isolation', 'network', 'networks', 'runtime', 'exit_code', 'labels', 'annotations', 'apps'] as const
const APP_PUBLIC_KEYS = ['name', 'type', 'state', 'pid', 'started_at', 'finished_at', 'exit_code'] as const
/** App fields that are written only when they say something. */
const APP_OPTIONAL_KEYS = ['reason', 'privileged', 'image', 'image_name', 'rootfs'] as const

/** A record as stored in pod.json (one line). */
export const recordText = (r: PodRecord): string => {
  const out: Record<string, unknown> = {}
  for (const k of PUBLIC_KEYS) out[k] = r[k]
  // Written null rather than left out, so that list's JSON can copy the record's bytes (lib/pod/view.ts).
  out.networks = r.networks ?? null
  out.apps = r.apps.map((a) => {
    const o: Record<string, unknown> = {}
    for (const k of APP_PUBLIC_KEYS) o[k] = a[k]
    for (const k of APP_OPTIONAL_KEYS) if (a[k] !== undefined && a[k] !== null) o[k] = a[k]
    return o
  })
  const priv: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(r)) {
    if (!(PUBLIC_KEYS as readonly string[]).includes(k) && v !== undefined && v !== null) priv[k] = v
  }
  const starts: Record<string, string> = {}
  for (const a of r.apps) if (a.pid_start) starts[a.name] = a.pid_start
  if (Object.keys(starts).length > 0) priv.app_pid_start = starts
  if (Object.keys(priv).length > 0) out.private = priv
  return `${JSON.stringify(out)}\n`
}

/** Replaces a pod's record. The caller holds the pod lock. */
export const writeRecord = (podDir: string, r: PodRecord, opts: { sync?: boolean } = {}): void =>
  writeFileAtomic(podDir, RECORD_FILE, recordText(r), opts)
