/**
 * What classes, claims and volumes share: their events, and what a kind of
 * object is. In a data dir each is a JSON file replaced whole by an atomic
 * write under its lock; in a fleet, an etcd key.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, unlessNotFound } from '../errors.js'
import { writeFileAtomic } from '../fs/atomic.js'
import { mkdirsInside } from '../fs/inside.js'
import { readOwnFile } from '../fs/read.js'
import { NAME_RE } from '../pod/manifest.js'
import { isoTime } from '../pod/record.js'

/** The seed's event reasons, and Kubernetes' PV controller's VolumeFailedRecycle. */
export type EventReason = 'Provisioning' | 'ProvisioningSucceeded' | 'ProvisioningFailed' | 'ExternalProvisioning' | 'VolumeDeleted' | 'VolumeFailedDelete' | 'VolumeFailedRecycle'

export interface ObjectEvent {
  time: string
  type: 'Normal' | 'Warning'
  reason: EventReason
  message: string
  count: number
}

/** An event as a change asks for it: the store stamps and counts it. */
export type NewEvent = Pick<ObjectEvent, 'type' | 'reason' | 'message'>

const MAX_EVENTS = 50

/** `o` with `event` added, if any: the same as the last one counts it again (Kubernetes' event aggregation); the last MAX_EVENTS are kept. */
export const withEventOf = <T extends { events?: ObjectEvent[] }>(o: T, event: NewEvent | undefined): T => {
  if (!event) return o
  const { type, reason, message } = event
  const events = o.events ?? []
  const last = events.at(-1)
  const time = isoTime()
  const next =
    last && last.type === type && last.reason === reason && last.message === message
      ? [...events.slice(0, -1), { ...last, time, count: last.count + 1 }]
      : [...events, { time, type, reason, message, count: 1 }]
  return { ...o, events: next.slice(-MAX_EVENTS) }
}

/** One kind of object: `<data>/<dir>/<name>.json`, or `<prefix><dir>/<name>` in etcd. */
export interface ObjectKind<T> {
  /** "volume class", "volume claim": for messages. */
  what: string
  dir: string
  /** Checks a parsed object; a reason when it is not a valid one. */
  problem: (v: unknown) => string | undefined
  /** The hint of "no such object". */
  missingHint: (name: string) => string
}

/** A JSON object: not null, not an array. */
export const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

/** What `fn` returns, or undefined when it throws. */
export const unlessError = <T>(fn: () => T): T | undefined => {
  try {
    return fn()
  } catch {
    return undefined
  }
}

/** Checks a name before it becomes part of a path or a key (EUSAGE): "a/b" or "../x" must never reach one. */
export const checkName = (what: string, name: string): void => {
  if (!NAME_RE.test(name)) throw new PodctlError('EUSAGE', `invalid ${what} name ${JSON.stringify(name)}: 1 to 63 characters of a-z, 0-9 and "-", starting with a letter or digit`)
}

/** A stored object of `kind`, parsed and checked: the object, or what is wrong with it. */
export const parseObject = <T>(kind: ObjectKind<T>, text: string): { value: T } | { problem: string } => {
  const v: unknown = unlessError(() => JSON.parse(text)) // JSON has no undefined
  const problem = v === undefined ? 'not valid JSON' : kind.problem(v)
  return problem ? { problem } : { value: v as T }
}

export const objectsDir = (dataDir: string, kind: ObjectKind<unknown>): string => path.join(dataDir, kind.dir)
const objectFile = (dataDir: string, kind: ObjectKind<unknown>, name: string): string => {
  checkName(kind.what, name)
  return path.join(objectsDir(dataDir, kind), `${name}.json`)
}

/** The object, or undefined when there is none; EFAILED when its file is damaged. */
export const readObject = <T>(dataDir: string, kind: ObjectKind<T>, name: string): T | undefined => {
  const file = objectFile(dataDir, kind, name)
  const f = readOwnFile(file)
  if ('missing' in f) return undefined
  const o = 'damaged' in f ? { problem: f.damaged } : parseObject(kind, f.bytes.toString('utf8'))
  if ('problem' in o) throw new PodctlError('EFAILED', `${kind.what} ${name} is damaged: ${o.problem}`, `look at ${file}; remove it by hand if it cannot be repaired`)
  return o.value
}

/** The object; ENOVOLUME naming it when there is none. */
export const mustExist = <T>(o: T | undefined, kind: ObjectKind<T>, name: string, where = ''): T => {
  if (o === undefined) throw new PodctlError('ENOVOLUME', `no such ${kind.what}${where}: ${name}`, kind.missingHint(name))
  return o
}

/** Replaces (or creates) the object's file atomically, synced: the caller holds its lock. */
export const writeObject = (dataDir: string, kind: ObjectKind<unknown>, name: string, value: unknown): void => {
  objectFile(dataDir, kind, name)
  writeFileAtomic(mkdirsInside(dataDir, kind.dir), `${name}.json`, `${JSON.stringify(value)}\n`, { sync: true })
}

/** Removes the object's file (the caller holds its lock). */
export const removeObject = (dataDir: string, kind: ObjectKind<unknown>, name: string): void => void unlessNotFound(() => fs.unlinkSync(objectFile(dataDir, kind, name)))

/** Every valid object of a kind, by name (a damaged one is left out: inspect names it). */
export const listObjects = <T>(dataDir: string, kind: ObjectKind<T>): T[] =>
  (unlessNotFound(() => fs.readdirSync(objectsDir(dataDir, kind))) ?? [])
    .filter((n) => n.endsWith('.json') && !n.startsWith('.'))
    .map((n) => n.slice(0, -5))
    .sort()
    .flatMap((n) => unlessError(() => readObject(dataDir, kind, n)) ?? [])
