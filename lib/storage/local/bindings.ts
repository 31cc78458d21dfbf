/**
 * The pods bound to a persistent volume, one file a pod from its set-up to
 * its removal, written by lib/volume under the volume's lock. A binding
 * holds only while its pod runs under the supervisor that bound it, so a
 * SIGKILLed supervisor lets go at once (Documentation/devel/volumes.md, Claims).
 */
import fs from 'node:fs'
import path from 'node:path'
import { unlessNotFound } from '../../errors.js'
import { readOwnText } from '../../fs/read.js'
import { parseOwner, sameOwner } from '../../lock/owner.js'
import { POD_DIRS, podPath } from '../../pod/layout.js'
import { isLocked, lockOwner } from '../../pod/locks.js'
import type { AccessMode } from '../../pod/manifest.js'
import { unlessError } from '../objects.js'
import { pvBindingsDir } from './layout.js'

export interface PodBinding {
  pod: string
  mode: AccessMode
  read_only: boolean
  /** Owner record (lib/lock/owner.ts) of the process that bound it: the pod's supervisor. */
  owner: string
  claimed_at: string
}

/** The file of pod `uuid`'s binding to volume `name`. */
export const bindingFile = (dataDir: string, name: string, uuid: string): string => path.join(pvBindingsDir(dataDir, name), `${uuid}.json`)

/** The bindings of a volume (pods bound to it, running or not). */
export const readBindings = (dataDir: string, name: string): PodBinding[] =>
  (unlessNotFound(() => fs.readdirSync(pvBindingsDir(dataDir, name))) ?? [])
    .filter((n) => n.endsWith('.json') && !n.startsWith('.'))
    .sort()
    // Removed meanwhile, or a torn write of an older podctl: not a binding.
    .flatMap((n) => unlessError(() => JSON.parse(readOwnText(path.join(pvBindingsDir(dataDir, name), n)) ?? '') as PodBinding) ?? [])

/** Whether a binding holds: the process that made it is alive and holds the pod's lock (it is that pod's supervisor, so the pod runs). */
export const bindingHolds = (dataDir: string, b: PodBinding): boolean => {
  const made = parseOwner(b.owner)
  if (!made || !isLocked(dataDir, b.pod)) return false
  const now = lockOwner(dataDir, b.pod)
  return now !== undefined && sameOwner(now, made)
}

const podExists = (dataDir: string, uuid: string): boolean => POD_DIRS.some((d) => fs.lstatSync(podPath(dataDir, d, uuid), { throwIfNoEntry: false })?.isDirectory() === true)

/** The bindings of a volume, those of pods that no longer exist (removed by hand, or by an older podctl) dropped; under the volume's lock. */
export const dropStaleBindings = (dataDir: string, name: string): PodBinding[] =>
  readBindings(dataDir, name).filter((b) => {
    if (podExists(dataDir, b.pod)) return true
    fs.rmSync(bindingFile(dataDir, name, b.pod), { force: true })
    return false
  })
