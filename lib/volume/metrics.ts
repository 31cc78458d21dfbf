/** Volume usage (Kubernetes' MetricsDu, MetricsStatFS, CachedMetrics), cached briefly for library users that poll. */
import fs from 'node:fs'
import path from 'node:path'
import { unlessError } from '../storage/objects.js'
import type { Metrics } from './types.js'

/** A walk gives up (used = null) after this many entries: a host path may be a whole file system. */
export const MAX_WALK_ENTRIES = 200_000
/** How long computed metrics are reused. */
export const METRICS_TTL_MS = 2_000

/**
 * Disk usage of `root` as du(1) counts it (an inode once, links never followed, but `root` itself with
 * `followRoot`: a host source the manifest names); undefined if missing or too large.
 */
export const diskUsage = (root: string, opts: { followRoot?: boolean; maxEntries?: number } = {}): { bytes: number; inodes: number } | undefined => {
  const maxEntries = opts.maxEntries ?? MAX_WALK_ENTRIES
  const st = unlessError(() => (opts.followRoot ? fs.statSync(root) : fs.lstatSync(root)))
  if (st === undefined) return undefined
  const seen = new Set<string>()
  let bytes = 0
  let inodes = 0
  const count = (s: fs.Stats): void => {
    if (s.nlink > 1 && !s.isDirectory()) {
      const key = `${s.dev}:${s.ino}`
      if (seen.has(key)) return
      seen.add(key)
    }
    bytes += s.blocks * 512
    inodes++
  }
  count(st)
  if (!st.isDirectory()) return { bytes, inodes }
  const stack = [root]
  while (stack.length > 0) {
    const dir = stack.pop()!
    // Unreadable, or gone meanwhile: counted as what we saw.
    for (const name of unlessError(() => fs.readdirSync(dir)) ?? []) {
      if (inodes >= maxEntries) return undefined
      const p = path.join(dir, name)
      const s = unlessError(() => fs.lstatSync(p))
      if (s === undefined) continue
      count(s)
      if (s.isDirectory()) stack.push(p)
    }
  }
  return { bytes, inodes }
}

/** Capacity and available bytes of the file system holding `p`. */
export const fsSpace = (p: string): { capacity: number; available: number } | undefined => {
  const s = unlessError(() => fs.statfsSync(p))
  return s && { capacity: s.blocks * s.bsize, available: s.bavail * s.bsize }
}

const cache = new Map<string, { at: number; metrics: Metrics }>()

/** Metrics of the data at `p`; capacity and available only with `ownStorage` (else it shares the pod's file system). */
export const volumeMetrics = (p: string, ownStorage: boolean, opts: { followRoot: boolean }, now = Date.now()): Metrics => {
  const key = `${ownStorage ? 's' : 'd'}${opts.followRoot ? 'f' : 'n'}:${p}`
  const hit = cache.get(key)
  if (hit && now - hit.at < METRICS_TTL_MS) return { ...hit.metrics }
  const usage = diskUsage(p, { followRoot: opts.followRoot })
  // statfs follows links; only ask it about a real directory (or the host source).
  const space = ownStorage && usage !== undefined && (opts.followRoot || fs.lstatSync(p, { throwIfNoEntry: false })?.isSymbolicLink() === false) ? fsSpace(p) : undefined
  const metrics: Metrics = {
    used_bytes: usage?.bytes ?? null,
    used_inodes: usage?.inodes ?? null,
    capacity_bytes: space?.capacity ?? null,
    available_bytes: space?.available ?? null,
  }
  cache.set(key, { at: now, metrics })
  return { ...metrics }
}

/** Forgets cached metrics (after a change podctl made itself). */
export const clearMetricsCache = (): void => cache.clear()
