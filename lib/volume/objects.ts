/**
 * The stored objects of dynamic provisioning (classes, claims): one JSON
 * file each under a directory of the data dir, replaced whole by an atomic
 * write-then-rename under the object's lock, as the pod manifest is, and
 * read without following a link. Each keeps its last events, as the
 * Kubernetes objects of seed 004 do.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { writeFileAtomic } from '../fs/atomic.js'
import { mkdirsInside } from '../fs/inside.js'
import { DIR_MODE } from '../fs/modes.js'
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

export const MAX_EVENTS = 50

/**
 * The events with one more: the same type, reason and message as the last
 * one counts it again (as Kubernetes' event aggregation does); only the
 * last MAX_EVENTS are kept.
 */
export const withEvent = (events: readonly ObjectEvent[], type: EventType, reason: EventReason, message: string): ObjectEvent[] => {
  const last = events.at(-1)
  const time = isoTime()
  const next =
    last && last.type === type && last.reason === reason && last.message === message
      ? [...events.slice(0, -1), { ...last, time, count: last.count + 1 }]
      : [...events, { time, type, reason, message, count: 1 }]
  return next.slice(-MAX_EVENTS)
}

/** Where one kind of object lives: `<data>/<dir>/<name>.json`. */
export interface ObjectKind<T> {
  /** "class", "claim": for messages. */
  what: string
  dir: string
  /** Checks a parsed file; a reason when it is not a valid object. */
  problem: (v: unknown) => string | undefined
  /** The hint of "no such object". */
  missingHint: (name: string) => string
}

export const objectsDir = (dataDir: string, kind: ObjectKind<unknown>): string => path.join(dataDir, kind.dir)
export const objectFile = (dataDir: string, kind: ObjectKind<unknown>, name: string): string => {
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
export const mustReadObject = <T>(dataDir: string, kind: ObjectKind<T>, name: string): T => {
  const o = readObject(dataDir, kind, name)
  if (o === undefined) throw new PodctlError('ENOVOLUME', `no such ${kind.what}: ${name}`, kind.missingHint(name))
  return o
}

/** Replaces (or creates) the object's file atomically, synced: the caller holds its lock. */
export const writeObject = (dataDir: string, kind: ObjectKind<unknown>, name: string, value: unknown): void => {
  const dir = objectsDir(dataDir, kind)
  mkdirsInside(dataDir, kind.dir, DIR_MODE)
  writeFileAtomic(dir, `${name}.json`, `${JSON.stringify(value)}\n`, { sync: true })
}

/** Removes the object's file (the caller holds its lock); false if there was none. */
export const removeObject = (dataDir: string, kind: ObjectKind<unknown>, name: string): boolean => {
  try {
    fs.unlinkSync(objectFile(dataDir, kind, name))
    return true
  } catch (er) {
    if ((er as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw er
  }
}

/** The names of the stored objects of a kind, sorted. */
export const objectNames = (dataDir: string, kind: ObjectKind<unknown>): string[] => {
  let names: string[]
  try {
    names = fs.readdirSync(objectsDir(dataDir, kind))
  } catch (er) {
    if ((er as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw er
  }
  return names.filter((n) => n.endsWith('.json') && !n.startsWith('.')).map((n) => n.slice(0, -5)).sort()
}
