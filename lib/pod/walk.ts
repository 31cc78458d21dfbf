/**
 * Walking the pods of a data dir (rkt's WalkPods): one readdir per
 * included state dir plus one of the locks dir, whatever the number of
 * pods.
 */
import fs from 'node:fs'
import { unlessNotFound } from '../errors.js'
import { POD_DIRS, checkLayout, isPodUUID, podPath, stateDirPath, type PodDir } from './layout.js'
import { lockedSet } from './locks.js'
import { Pod } from './pod.js'

/** Which state dirs walkPods visits (rkt's IncludeMask). */
export const Include = {
  embryo: 1 << 0,
  prepare: 1 << 1,
  prepared: 1 << 2,
  run: 1 << 3,
  exitedGarbage: 1 << 4,
  garbage: 1 << 5,
  /** prepare, prepared, run and exited-garbage: what `list` shows by default in rkt. */
  most: (1 << 1) | (1 << 2) | (1 << 3) | (1 << 4),
  all: 0x3f,
} as const
export type IncludeMask = number

const DIR_BIT: Record<PodDir, number> = {
  embryo: Include.embryo,
  prepare: Include.prepare,
  prepared: Include.prepared,
  run: Include.run,
  'exited-garbage': Include.exitedGarbage,
  garbage: Include.garbage,
}

/** An entry of a state dir that is not a pod (a symlink, a file, a bad name). */
export interface InvalidEntry {
  path: string
  reason: string
}

export interface WalkOptions {
  /** Called for entries that are not pod directories; they are never followed. */
  onInvalid?: (e: InvalidEntry) => void
}

/**
 * Lists the pods in the included state dirs, in lifecycle order. A pod
 * that moved on between two readdirs shows up twice; it is reported once,
 * where it is now. Entries that are not directories (a symlink planted in
 * a state dir) are skipped, never followed.
 */
export const listPods = (dataDir: string, include: IncludeMask, opts: WalkOptions = {}): Pod[] => {
  checkLayout(dataDir) // a state dir that is a link is never read through
  const locked = lockedSet(dataDir)
  const seen = new Map<string, Pod>()
  const moved = new Set<string>()
  for (const dir of POD_DIRS) {
    if ((include & DIR_BIT[dir]) === 0) continue
    const entries = unlessNotFound(() => fs.readdirSync(stateDirPath(dataDir, dir), { withFileTypes: true }))
    if (entries === undefined) continue
    for (const e of entries) {
      if (e.name.startsWith('.')) continue
      if (!e.isDirectory() || !isPodUUID(e.name)) {
        opts.onInvalid?.({
          path: podPath(dataDir, dir, e.name),
          reason: e.isSymbolicLink() ? 'a symlink, not a pod directory' : !e.isDirectory() ? 'not a directory' : 'not a pod UUID',
        })
        continue
      }
      if (seen.has(e.name)) moved.add(e.name)
      seen.set(e.name, new Pod(dataDir, e.name, dir, locked.has(e.name)))
    }
  }
  const pods: Pod[] = []
  for (const [uuid, pod] of seen) {
    if (moved.has(uuid)) {
      try {
        pod.refresh()
      } catch {
        continue // gone meanwhile
      }
      if ((include & DIR_BIT[pod.dir]) === 0) continue
    }
    pods.push(pod)
  }
  return pods
}

/**
 * Calls `fn` for every pod in the included state dirs (rkt's WalkPods).
 * Each pod's locks are released after `fn` returns, as rkt closes them.
 */
export const walkPods = async (
  dataDir: string,
  include: IncludeMask,
  fn: (pod: Pod) => void | Promise<void>,
  opts: WalkOptions = {},
): Promise<void> => {
  for (const pod of listPods(dataDir, include, opts)) {
    try {
      await fn(pod)
    } finally {
      pod.close()
    }
  }
}
