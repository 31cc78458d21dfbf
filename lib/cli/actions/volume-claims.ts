/** What the `podctl volume class` and `podctl volume claim` commands do (CONTRACT §8). */
import { PodctlError } from '../../errors.js'
import { ensureDataDir } from '../../pod/layout.js'
import { ACCESS_MODE_NAMES } from '../../volume/access-modes.js'
import { removeClaim } from '../../volume/binder.js'
import { removeFleetClaim } from '../../volume/fleet-binder.js'
import { controllerLive } from '../../volume/lease.js'
import { parseBytes } from '../../bytes.js'
import { claimsOfClass, createClaim, listClaims, readClaim, type VolumeClaim } from '../../volume/claims.js'
import { createClass, listClasses, readClass, removeClass, type VolumeClass } from '../../volume/classes.js'
import type { ClaimCreateOptions } from '../commands/volume/claim.js'
import type { ClassCreateOptions } from '../commands/volume/class.js'
import type { Context } from '../context.js'
import { formatTable, isJson, keyValueLines, relativeTime, toJson } from '../output.js'
import { forEachArgument } from '../report-error.js'
import { openFleet, type FleetRef, type FleetStore } from '../../volume/fleet-store.js'

/** Runs `fn` on the fleet's store, the connection closed after. */
const inFleet = async <T>(fleet: FleetRef, fn: (store: FleetStore) => Promise<T>): Promise<T> => {
  const store = await openFleet(fleet)
  try {
    return await fn(store)
  } finally {
    store.close()
  }
}

/** KEY=VALUE pairs of --param; EUSAGE for one without "=". */
const parseParams = (pairs: string[]): Record<string, string> => {
  const out = new Map<string, string>()
  for (const p of pairs) {
    const at = p.indexOf('=')
    if (at <= 0) throw new PodctlError('EUSAGE', `invalid --param ${JSON.stringify(p)}: expected KEY=VALUE`)
    out.set(p.slice(0, at), p.slice(at + 1))
  }
  return Object.fromEntries(out)
}

export const classCreate = async (ctx: Context, dataDir: string, name: string, opts: ClassCreateOptions, fleet?: FleetRef): Promise<void> => {
  const parameters = parseParams(opts.param ?? [])
  const options = { provisioner: opts.provisioner, parameters, reclaim: opts.reclaim, isDefault: opts.default === true }
  if (!fleet) ensureDataDir(dataDir)
  const c = fleet ? await inFleet(fleet, (store) => store.createClass(name, options)) : createClass(dataDir, name, options)
  ctx.io.out(isJson(opts.format) ? toJson(c, opts.format) : `${c.name}\n`)
}

/** A class as users see it: the stored object without its format version. */
const classView = ({ version: _, ...c }: VolumeClass) => c

export const classList = async (ctx: Context, dataDir: string, opts: { format: string }, fleet?: FleetRef): Promise<void> => {
  const classes = fleet ? await inFleet(fleet, (store) => store.listClasses()) : listClasses(dataDir)
  if (isJson(opts.format)) return ctx.io.out(toJson(classes.map(classView), opts.format))
  const rows = classes.map((c) => [c.name + (c.default ? ' (default)' : ''), c.provisioner, c.reclaim, Object.entries(c.parameters).map(([k, v]) => `${k}=${v}`).join(',') || '-'])
  ctx.io.out(formatTable(['NAME', 'PROVISIONER', 'RECLAIM', 'PARAMETERS'], rows))
}

export const classInspect = async (ctx: Context, dataDir: string, name: string, opts: { format: string }, fleet?: FleetRef): Promise<void> => {
  const c = fleet ? (await inFleet(fleet, (store) => store.readClass(name))).value : readClass(dataDir, name)
  if (isJson(opts.format)) return ctx.io.out(toJson(classView(c), opts.format))
  const lines = [`name=${c.name}`, `provisioner=${c.provisioner}`, `reclaim=${c.reclaim}`, `default=${c.default}`, `created=${c.created_at}`]
  for (const [k, v] of Object.entries(c.parameters)) lines.push(`param-${k}=${v}`)
  ctx.io.out(keyValueLines(lines))
}

export const classRm = (ctx: Context, dataDir: string, names: string[], fleet?: FleetRef): Promise<void> =>
  forEachArgument(ctx, names, async (name) => {
    if (fleet) await inFleet(fleet, (store) => store.removeClass(name))
    else removeClass(dataDir, name, (cls) => claimsOfClass(dataDir, cls))
    return `${name}\n`
  })

/** A claim as users see it (CONTRACT §8's JSON): the bookkeeping of retries stays inside. */
const claimView = (c: VolumeClaim) => ({
  name: c.name,
  class: c.class,
  size_bytes: c.size_bytes,
  access_mode: c.access_mode,
  phase: c.phase,
  volume: c.volume,
  created_at: c.created_at,
  bound_at: c.bound_at,
  provisioned_by: c.provisioned_by,
  events: c.events,
})

export const claimCreate = async (ctx: Context, dataDir: string, name: string, opts: ClaimCreateOptions, fleet?: FleetRef): Promise<void> => {
  const sizeBytes = opts.size === undefined ? undefined : parseBytes(opts.size, '--size')
  if (sizeBytes === 0) throw new PodctlError('EUSAGE', 'invalid --size "0": a volume needs more than 0 bytes')
  const options = {
    ...(opts.class !== undefined ? { class: opts.class } : {}),
    ...(sizeBytes !== undefined ? { sizeBytes } : {}),
    accessMode: ACCESS_MODE_NAMES[opts.accessMode]!,
  }
  if (!fleet) ensureDataDir(dataDir)
  const c = fleet ? await inFleet(fleet, (store) => store.createClaim(name, options)) : createClaim(dataDir, name, options)
  ctx.io.out(isJson(opts.format) ? toJson(claimView(c), opts.format) : `${c.name}\n`)
}

export const claimList = async (ctx: Context, dataDir: string, opts: { format: string }, fleet?: FleetRef): Promise<void> => {
  const claims = fleet ? await inFleet(fleet, (store) => store.listClaims()) : listClaims(dataDir)
  if (isJson(opts.format)) return ctx.io.out(toJson(claims.map(claimView), opts.format))
  const now = Date.now()
  const rows = claims.map((c) => [c.name, c.phase, c.volume ?? '-', c.class ?? '-', c.size_bytes === null ? '-' : String(c.size_bytes), c.access_mode, relativeTime(c.created_at, now)])
  ctx.io.out(formatTable(['NAME', 'PHASE', 'VOLUME', 'CLASS', 'SIZE', 'ACCESS', 'CREATED'], rows))
}

export const claimInspect = async (ctx: Context, dataDir: string, name: string, opts: { format: string }, fleet?: FleetRef): Promise<void> => {
  const c = fleet ? (await inFleet(fleet, (store) => store.readClaim(name))).value : readClaim(dataDir, name)
  if (isJson(opts.format)) return ctx.io.out(toJson(claimView(c), opts.format))
  const lines = [
    `name=${c.name}`,
    `phase=${c.phase}`,
    `volume=${c.volume ?? '-'}`,
    `class=${c.class ?? '-'}`,
    `size=${c.size_bytes ?? '-'}`,
    `access-mode=${c.access_mode}`,
    `created=${c.created_at}`,
    `bound=${c.bound_at ?? '-'}`,
    `provisioned-by=${c.provisioned_by ?? '-'}`,
  ]
  for (const e of c.events) lines.push(`event=${e.time} ${e.type} ${e.reason}${e.count > 1 ? ` (x${e.count})` : ''}: ${e.message}`)
  ctx.io.out(keyValueLines(lines))
}

/** Removes each claim; without a live controller, its volume's reclaim policy is applied here. */
export const claimRm = (ctx: Context, dataDir: string, names: string[], opts: { provisionersDir?: string }, fleet?: FleetRef): Promise<void> =>
  forEachArgument(ctx, names, async (name) => {
    const where = opts.provisionersDir !== undefined ? { provisionersDir: opts.provisionersDir } : {}
    const r = fleet
      ? await inFleet(fleet, async (store) => removeFleetClaim(store, dataDir, name, { reclaim: !(await store.leaderLive()), identity: store.identity, ...where }))
      : await removeClaim(dataDir, name, { reclaim: !controllerLive(dataDir), ...where })
    if (r.volume !== null && r.reclaim !== undefined && r.reclaim !== 'deleted' && ctx.io.errIsTTY) ctx.io.err(`volume ${r.volume}: ${r.reclaim}\n`)
    return `${name}\n`
  })
