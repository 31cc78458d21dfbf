/**
 * The mount plan of a pod: where each app sees each volume, the mounts nested
 * under another mount of the same app (whose mount point is made inside the
 * parent volume, as kubelet's MakeNestedMountpoints does), and the order
 * volumes are set up in (Documentation/devel/volumes.md). Pure: no I/O.
 */
import path from 'node:path'
import type { ManifestProblem, PodManifest, Volume } from '../pod/manifest.js'

/** One app's mount of one volume. */
export interface PlannedMount {
  app: string
  /** Field path of the mount in the manifest, for messages: apps[0].mounts[1]. */
  at: string
  volume: string
  /** Normalized absolute mount path. */
  path: string
  /** Set when the mount is below another mount of the same app. */
  parent?: { volume: string; at: string; path: string; rel: string }
}

/** Where a mount point is made: a link, relative to the pod dir, to a volume. */
export interface MountPoint {
  /** The link, relative to the pod dir: apps/web/var/lib/data, or volumes/data/cache. */
  link: string
  volume: string
  /** The mounts that need this link (nested ones can be shared by several apps). */
  mounts: PlannedMount[]
}

/** "/a//b/" → "/a/b": the form in which mount paths are compared. */
export const normalizeMountPath = (p: string): string => path.posix.normalize(p).replace(/(.)\/+$/, '$1')

const under = (child: string, parent: string): boolean => child.startsWith(`${parent}/`)

/** The mounts of every app that has any, with nesting resolved. */
export const planMounts = (m: PodManifest): PlannedMount[] =>
  m.apps.flatMap((a, i) => {
    const mine: PlannedMount[] = (a.mounts ?? []).map((mt, j) => ({
      app: a.name,
      at: `apps[${i}].mounts[${j}]`,
      volume: mt.volume,
      path: normalizeMountPath(mt.path),
    }))
    for (const pm of mine) {
      // The innermost mount of this app that contains this one (the first of equals: sort is stable).
      const best = mine.filter((o) => o !== pm && under(pm.path, o.path)).sort((x, y) => y.path.length - x.path.length)[0]
      if (best) pm.parent = { volume: best.volume, at: best.at, path: best.path, rel: pm.path.slice(best.path.length + 1) }
    }
    return mine
  })

/** The mount points to make, one per distinct link. */
export const mountPoints = (plan: PlannedMount[]): MountPoint[] => {
  const byLink = new Map<string, MountPoint>()
  for (const pm of plan) {
    const link = pm.parent ? `volumes/${pm.parent.volume}/${pm.parent.rel}` : `apps/${pm.app}${pm.path}`
    const mp = byLink.get(link)
    if (mp) mp.mounts.push(pm)
    else byLink.set(link, { link, volume: pm.volume, mounts: [pm] })
  }
  return [...byLink.values()]
}

/** Problems of the mount plan of an otherwise valid manifest: bad nesting, two mounts in one place, nesting cycles. */
export const mountProblems = (m: PodManifest): ManifestProblem[] => {
  const problems: ManifestProblem[] = []
  const kinds = new Map<string, Volume['kind']>((m.volumes ?? []).map((v) => [v.name, v.kind]))
  const nested: PlannedMount[] = []
  for (const pm of planMounts(m)) {
    if (!pm.parent) continue
    const where = `${pm.at}.path`
    const pk = kinds.get(pm.parent.volume)
    if (pm.parent.volume === pm.volume) {
      problems.push({ path: where, problem: `${JSON.stringify(pm.path)} mounts volume "${pm.volume}" inside itself (under ${pm.parent.at}, ${JSON.stringify(pm.parent.path)})` })
    } else if (pk !== 'empty') {
      problems.push({
        path: where,
        problem: `${JSON.stringify(pm.path)} is under ${pm.parent.at} (${JSON.stringify(pm.parent.path)}), a ${pk} volume; mounts can be nested only under empty volumes, whose mount points podctl may create`,
      })
    } else {
      nested.push(pm)
    }
  }
  // Nested mount points live inside the parent volume, which every app
  // that mounts it shares: two of them must not need the same place.
  nested.forEach((pm, i) => {
    const p = pm.parent!
    for (const o of nested.slice(0, i)) {
      const op = o.parent!
      if (op.volume !== p.volume) continue
      if (op.rel === p.rel && o.volume !== pm.volume) {
        problems.push({ path: `${pm.at}.path`, problem: `conflicts with ${o.at}: both need "${p.rel}" in volume "${p.volume}", for volumes "${o.volume}" and "${pm.volume}"` })
      } else if (under(p.rel, op.rel) || under(op.rel, p.rel)) {
        const [outer, inner] = under(p.rel, op.rel) ? [o, pm] : [pm, o]
        problems.push({
          path: `${pm.at}.path`,
          problem: `conflicts with ${o.at}: "${inner.parent!.rel}" in volume "${p.volume}" would be inside "${outer.parent!.rel}", the mount point of volume "${outer.volume}"`,
        })
      }
    }
  })
  if (problems.length === 0) {
    const cycle = nestingCycle(nested)
    if (cycle) problems.push({ path: `${cycle.at}.path`, problem: `nests volumes in a cycle (${cycle.volumes.join(' → ')}): each would contain the other` })
  }
  return problems
}

type Cycle = { at: string; volumes: string[] }

/** A cycle of nesting (parent volume → nested volume), if any, with the mount that closes it. */
const nestingCycle = (nested: PlannedMount[]): Cycle | undefined => {
  const done = new Set<string>()
  // Depth first below the stack's last volume: one met again on the stack closes a cycle.
  const visit = (stack: string[]): Cycle | undefined => {
    for (const pm of nested.filter((n) => n.parent!.volume === stack.at(-1))) {
      if (stack.includes(pm.volume)) return { at: pm.at, volumes: [...stack.slice(stack.indexOf(pm.volume)), pm.volume] }
      const c = done.has(pm.volume) ? undefined : visit([...stack, pm.volume])
      if (c) return c
    }
    done.add(stack.at(-1)!)
    return undefined
  }
  for (const pm of nested) {
    const c = done.has(pm.parent!.volume) ? undefined : visit([pm.parent!.volume])
    if (c) return c
  }
  return undefined
}

/** The volumes of a manifest without mount problems in set-up order: a volume before those nested in it. */
export const setUpOrder = (m: PodManifest): string[] => {
  const vols = (m.volumes ?? []).map((v) => v.name)
  const parentsOf = new Map<string, Set<string>>()
  for (const pm of planMounts(m)) {
    if (pm.parent && pm.parent.volume !== pm.volume) {
      parentsOf.set(pm.volume, (parentsOf.get(pm.volume) ?? new Set()).add(pm.parent.volume))
    }
  }
  const out = new Set<string>()
  const place = (v: string, depth: number): void => {
    if (out.has(v) || depth > vols.length) return
    for (const p of parentsOf.get(v) ?? []) place(p, depth + 1)
    out.add(v)
  }
  for (const v of vols) place(v, 0)
  return [...out]
}
