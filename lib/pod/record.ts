/**
 * The pod record, `<pod>/pod.json`: everything `list` and `status` show
 * about a pod except its state, in the one file they read per pod. Only the
 * holder of the pod's lock writes it (the creator while preparing, the
 * supervisor while running, gc while marking), always by atomic replace,
 * so readers never see half a record and writers never lose each other's.
 */
import fs from 'node:fs'
import path from 'node:path'
import { randomBytes } from 'node:crypto'
import { errnoCode } from '../errors.js'
import { FILE_MODE } from './layout.js'
import { appType, type AppType, type PodManifest } from './manifest.js'

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
  /** The pid of the guardian that kills the apps if the supervisor dies. */
  guardian_pid?: number | null
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
  apps: m.apps.map((a) => ({
    name: a.name,
    type: appType(a),
    state: 'created',
    pid: null,
    started_at: null,
    finished_at: null,
    exit_code: null,
  })),
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

/**
 * Reads a pod's record, or undefined if it has none (yet) or it is
 * unreadable. Never throws for a missing or damaged file: a listing goes on.
 */
export const readRecord = (podDir: string): PodRecord | undefined => {
  let text: string
  try {
    text = fs.readFileSync(path.join(podDir, RECORD_FILE), 'utf8')
  } catch (er) {
    const code = errnoCode(er)
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined
    throw er
  }
  try {
    const r = JSON.parse(text) as PodRecord
    return r !== null && typeof r === 'object' && Array.isArray(r.apps) ? r : undefined
  } catch {
    return undefined
  }
}

/**
 * Writes `data` to `dir/name` by atomic replace: a temporary file in the
 * same directory, optionally fsynced, renamed over the target.
 */
export const writeFileAtomic = (dir: string, name: string, data: string, opts: { sync?: boolean } = {}): void => {
  const tmp = path.join(dir, `.${name}.tmp-${randomBytes(4).toString('hex')}`)
  const fd = fs.openSync(tmp, 'wx', FILE_MODE)
  try {
    fs.writeSync(fd, data)
    if (opts.sync) fs.fsyncSync(fd)
  } catch (er) {
    fs.closeSync(fd)
    fs.rmSync(tmp, { force: true })
    throw er
  }
  fs.closeSync(fd)
  try {
    fs.renameSync(tmp, path.join(dir, name))
  } catch (er) {
    fs.rmSync(tmp, { force: true })
    throw er
  }
}

/** Replaces a pod's record. The caller holds the pod lock. */
export const writeRecord = (podDir: string, r: PodRecord, opts: { sync?: boolean } = {}): void =>
  writeFileAtomic(podDir, RECORD_FILE, `${JSON.stringify(r)}\n`, opts)
