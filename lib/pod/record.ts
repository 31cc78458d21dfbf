/**
 * The pod record, `<pod>/pod.json`: everything `list` and `status` show
 * about a pod except its state, in the one file they read per pod. Only the
 * holder of the pod's lock writes it (the creator while preparing, the
 * supervisor while running, gc while marking), always by atomic replace,
 * so readers never see half a record and writers never lose each other's.
 */
import fs from 'node:fs'
import path from 'node:path'
import { errnoCode } from '../errors.js'
import { writeFileAtomic } from '../fs/atomic.js'
import { appType, type App, type AppType, type PodManifest } from './manifest.js'

export type AppState = 'created' | 'running' | 'exited' | 'unknown'

export interface AppRecord {
  name: string
  type: AppType
  state: AppState
  pid: number | null
  started_at: string | null
  finished_at: string | null
  exit_code: number | null
  /** The app's start time from /proc, to tell it from a reused pid. */
  pid_start?: string | null
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
  exit_code: number | null
  labels: Record<string, string>
  annotations: Record<string, string>
  apps: AppRecord[]
  /** When the supervisor declared itself ready (all regular apps started). */
  ready_at?: string | null
}

export const RECORD_FILE = 'pod.json'
export const MANIFEST_FILE = 'manifest'

/** RFC 3339 UTC with milliseconds, as CONTRACT §5 wants. */
export const isoTime = (d: Date | number = Date.now()): string => new Date(d).toISOString()

/** The record of a freshly prepared pod. */
export const initialRecord = (uuid: string, m: PodManifest, createdAt: Date): PodRecord => ({
  uuid,
  name: m.name ?? null,
  created_at: isoTime(createdAt),
  started_at: null,
  gc_marked_at: null,
  pid: null,
  mutable: m.mutable === true,
  exit_code: null,
  labels: { ...(m.labels ?? {}) },
  annotations: { ...(m.annotations ?? {}) },
  apps: m.apps.map(newAppRecord),
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
  exit_code: null,
  labels: {},
  annotations: {},
  apps: [],
})

// One buffer for every record read: list reads one small file per pod, and
// open + read + close into a reused buffer costs less than readFileSync's
// open + fstat + read + close into a fresh one (measured in
// Documentation/performance.md).
const READ_BUFFER_BYTES = 64 * 1024
let readBuffer: Buffer | undefined

/**
 * Reads a file that is almost always small into a buffer of its own (off
 * the JavaScript heap, so 10,000 of them cost the garbage collector
 * nothing); a larger one is read whole all the same.
 */
const readSmallFile = (file: string): Buffer => {
  const buf = (readBuffer ??= Buffer.allocUnsafe(READ_BUFFER_BYTES))
  const fd = fs.openSync(file, 'r')
  try {
    const n = fs.readSync(fd, buf, 0, buf.length, 0)
    if (n < buf.length) {
      const out = Buffer.allocUnsafe(n)
      buf.copy(out, 0, 0, n)
      return out
    }
  } finally {
    fs.closeSync(fd)
  }
  return fs.readFileSync(file)
}

/**
 * Reads a pod's record, or undefined if it has none (yet) or it is
 * unreadable. Never throws for a missing or damaged file: a listing goes on.
 */
export const readRecord = (podDir: string): PodRecord | undefined => {
  const bytes = readRecordBytes(podDir)
  return bytes === undefined ? undefined : parseRecordText(bytes.toString('utf8'))
}

/** A pod's record as stored (bytes of UTF-8 JSON), or undefined if it has none. */
export const readRecordBytes = (podDir: string): Buffer | undefined => {
  try {
    return readSmallFile(path.join(podDir, RECORD_FILE))
  } catch (er) {
    const code = errnoCode(er)
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined
    throw er
  }
}

/** Parses a stored record (either layout); undefined if it is damaged. */
export const parseRecordText = (text: string): PodRecord | undefined => {
  let stored: StoredRecord
  try {
    stored = JSON.parse(text) as StoredRecord
  } catch {
    return undefined
  }
  if (stored === null || typeof stored !== 'object' || !Array.isArray(stored.apps)) return undefined
  const { private: priv, ...r } = stored
  if (priv !== null && typeof priv === 'object') {
    const { app_pid_start: starts, ...rest } = priv
    Object.assign(r, rest)
    if (starts !== null && typeof starts === 'object') {
      for (const a of r.apps) if (typeof starts[a.name] === 'string') a.pid_start = starts[a.name]!
    }
  }
  return r
}

// How a record is stored: the fields of CONTRACT §5 (all but `state`), in
// its order, with `apps` last; then, only when there are any, the fields
// only podctl uses, under "private". A record without "private" therefore
// ends with "]}", and `podctl list` copies its bytes into its output instead
// of parsing and re-serializing it (lib/pod/view.ts podViewJsonBytes).
type StoredRecord = Omit<PodRecord, 'ready_at'> & {
  private?: Record<string, unknown> & { app_pid_start?: Record<string, string> }
}

const PUBLIC_KEYS = ['uuid', 'name', 'created_at', 'started_at', 'gc_marked_at', 'pid', 'mutable', 'exit_code', 'labels', 'annotations', 'apps'] as const
const APP_PUBLIC_KEYS = ['name', 'type', 'state', 'pid', 'started_at', 'finished_at', 'exit_code'] as const

/** A record as stored in pod.json (one line). */
export const recordText = (r: PodRecord): string => {
  const out: Record<string, unknown> = {}
  for (const k of PUBLIC_KEYS) out[k] = r[k]
  out.apps = r.apps.map((a) => {
    const o: Record<string, unknown> = {}
    for (const k of APP_PUBLIC_KEYS) o[k] = a[k]
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
