/**
 * What classes, claims and volumes have in common: their events, as the
 * Kubernetes objects of seed 004 keep them, and what a kind of object is
 * (where it lives, how a stored one is checked). In a data dir each is one
 * JSON file under a directory, replaced whole by an atomic
 * write-then-rename under the object's lock, as the pod manifest is, and
 * read without following a link; in a fleet, one etcd key.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, unlessNotFound } from '../errors.js'
import { writeFileAtomic } from '../fs/atomic.js'
import { mkdirsInside } from '../fs/inside.js'
import { readOwnFile } from '../fs/read.js'
import { NAME_RE } from '../pod/manifest.js'
import { isoTime } from '../pod/record.js'

export type EventType = 'Normal' | 'Warning'

/** The seed's event reasons, and Kubernetes' PV controller's VolumeFailedRecycle. */
export type EventReason =
  | 'Provisioning'
  | 'ProvisioningSucceeded'
  | 'ProvisioningFailed'
  | 'ExternalProvisioning'
  | 'VolumeDeleted'
  | 'VolumeFailedDelete'
  | 'VolumeFailedRecycle'

export interface ObjectEvent {
  time: string
  type: EventType
  reason: EventReason
  message: string
  count: number
}

/** An event as a change asks for it: the store stamps and counts it. */
export type NewEvent = Pick<ObjectEvent, 'type' | 'reason' | 'message'>

export const MAX_EVENTS = 50

/**
 * The events with one more: the same type, reason and message as the last
 * one counts it again (as Kubernetes' event aggregation does); only the
 * last MAX_EVENTS are kept.
 */
export const withEvent = (events: readonly ObjectEvent[], { type, reason, message }: NewEvent): ObjectEvent[] => {
  const last = events.at(-1)
  const time = isoTime()
  const next =
    last && last.type === type && last.reason === reason && last.message === message
      ? [...events.slice(0, -1), { ...last, time, count: last.count + 1 }]
      : [...events, { time, type, reason, message, count: 1 }]
  return next.slice(-MAX_EVENTS)
}

/** `o` with `event` added to its events, when there is one. */
export const withEventOf = <T extends { events?: ObjectEvent[] }>(o: T, event: NewEvent | undefined): T => (event ? { ...o, events: withEvent(o.events ?? [], event) } : o)

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

export const objectsDir = (dataDir: string, kind: ObjectKind<unknown>): string => path.join(dataDir, kind.dir)
const objectFile = (dataDir: string, kind: ObjectKind<unknown>, name: string): string => {
  // The name becomes a path: "a/b" or "../x" must never reach one.
  if (!NAME_RE.test(name)) throw new PodctlError('EUSAGE', `invalid ${kind.what} name ${JSON.stringify(name)}: 1 to 63 characters of a-z, 0-9 and "-", starting with a letter or digit`)
  return path.join(objectsDir(dataDir, kind), `${name}.json`)
}

/** The object, or undefined when there is none; EFAILED when its file is damaged. */
export const readObject = <T>(dataDir: string, kind: ObjectKind<T>, name: string): T | undefined => {
  const file = objectFile(dataDir, kind, name)
  const f = readOwnFile(file)
  if ('missing' in f) return undefined
  const damaged = (why: string): PodctlError =>
    new PodctlError('EFAILED', `${kind.what} ${name} is damaged: ${why}`, `look at ${file}; remove it by hand if it cannot be repaired`)
  if ('damaged' in f) throw damaged(f.damaged)
  let v: unknown
  try {
    v = JSON.parse(f.bytes.toString('utf8'))
  } catch {
    throw damaged('not valid JSON')
  }
  const problem = kind.problem(v)
  if (problem) throw damaged(problem)
  return v as T
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
    .flatMap((n) => {
      try {
        return readObject(dataDir, kind, n) ?? []
      } catch {
        return []
      }
    })
