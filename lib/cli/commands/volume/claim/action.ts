/** What the `podctl volume claim` commands do (CONTRACT §8), on the data dir's claims or, with --cluster, the fleet's. */
import { parseBytes } from '../../../../bytes.js'
import { PodctlError } from '../../../../errors.js'
import { ensureDataDir } from '../../../../pod/layout.js'
import { ACCESS_MODE_NAMES } from '../../../../storage/access-modes.js'
import { removeClaim } from '../../../../storage/binder.js'
import type { VolumeClaim } from '../../../../storage/claims.js'
import type { FleetRef } from '../../../../storage/fleet/store.js'
import { withStore } from '../../../../storage/open.js'
import type { Context } from '../../../context.js'
import { formatTable, isJson, keyValueLines, relativeTime, toJson, wantsHeader, type LegendOptions } from '../../../output.js'
import { forEachArgument } from '../../../report-error.js'
import type { ClaimCreateOptions } from './options.js'

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
  const c = await withStore(dataDir, fleet, (store) => store.createClaim(name, options))
  ctx.io.out(isJson(opts.format) ? toJson(claimView(c), opts.format) : `${c.name}\n`)
}

export const claimList = async (ctx: Context, dataDir: string, opts: { format: string } & LegendOptions, fleet?: FleetRef): Promise<void> => {
  const claims = await withStore(dataDir, fleet, (store) => store.listClaims())
  if (isJson(opts.format)) return ctx.io.out(toJson(claims.map(claimView), opts.format))
  const now = Date.now()
  const rows = claims.map((c) => [c.name, c.phase, c.volume ?? '-', c.class ?? '-', c.size_bytes === null ? '-' : String(c.size_bytes), c.access_mode, relativeTime(c.created_at, now)])
  ctx.io.out(formatTable(wantsHeader(opts) ? ['NAME', 'PHASE', 'VOLUME', 'CLASS', 'SIZE', 'ACCESS', 'CREATED'] : undefined, rows))
}

export const claimInspect = async (ctx: Context, dataDir: string, name: string, opts: { format: string }, fleet?: FleetRef): Promise<void> => {
  const c = (await withStore(dataDir, fleet, (store) => store.readClaim(name))).value
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
    const r = await withStore(dataDir, fleet, async (store) => removeClaim(store, name, { reclaim: !(await store.leaderLive()), provisionersDir: opts.provisionersDir }))
    if (r.volume !== null && r.reclaim !== undefined && r.reclaim !== 'deleted' && ctx.io.errIsTTY) ctx.io.err(`volume ${r.volume}: ${r.reclaim}\n`)
    return `${name}\n`
  })
