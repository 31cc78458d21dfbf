/** What the `podctl volume class` commands do (CONTRACT §8), on the data dir's classes or, with --cluster, the fleet's. */
import { PodctlError } from '../../../../errors.js'
import { ensureDataDir } from '../../../../pod/layout.js'
import type { VolumeClass } from '../../../../storage/classes.js'
import type { FleetRef } from '../../../../storage/fleet/store.js'
import { withStore } from '../../../../storage/open.js'
import type { Context } from '../../../context.js'
import { formatTable, isJson, keyValueLines, toJson, wantsHeader, type LegendOptions } from '../../../output.js'
import { forEachArgument } from '../../../report-error.js'
import type { ClassCreateOptions } from './options.js'

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

/** A class as users see it: the stored object without its format version. */
const classView = ({ version: _, ...c }: VolumeClass) => c

export const classCreate = async (ctx: Context, dataDir: string, name: string, opts: ClassCreateOptions, fleet?: FleetRef): Promise<void> => {
  const options = { provisioner: opts.provisioner, parameters: parseParams(opts.param ?? []), reclaim: opts.reclaim, isDefault: opts.default === true }
  if (!fleet) ensureDataDir(dataDir)
  const c = await withStore(dataDir, fleet, (store) => store.createClass(name, options))
  ctx.io.out(isJson(opts.format) ? toJson(c, opts.format) : `${c.name}\n`)
}

export const classList = async (ctx: Context, dataDir: string, opts: { format: string } & LegendOptions, fleet?: FleetRef): Promise<void> => {
  const classes = await withStore(dataDir, fleet, (store) => store.listClasses())
  if (isJson(opts.format)) return ctx.io.out(toJson(classes.map(classView), opts.format))
  const rows = classes.map((c) => [c.name + (c.default ? ' (default)' : ''), c.provisioner, c.reclaim, Object.entries(c.parameters).map(([k, v]) => `${k}=${v}`).join(',') || '-'])
  ctx.io.out(formatTable(wantsHeader(opts) ? ['NAME', 'PROVISIONER', 'RECLAIM', 'PARAMETERS'] : undefined, rows))
}

export const classInspect = async (ctx: Context, dataDir: string, name: string, opts: { format: string }, fleet?: FleetRef): Promise<void> => {
  const c = await withStore(dataDir, fleet, (store) => store.readClass(name))
  if (isJson(opts.format)) return ctx.io.out(toJson(classView(c), opts.format))
  const lines = [`name=${c.name}`, `provisioner=${c.provisioner}`, `reclaim=${c.reclaim}`, `default=${c.default}`, `created=${c.created_at}`]
  for (const [k, v] of Object.entries(c.parameters)) lines.push(`param-${k}=${v}`)
  ctx.io.out(keyValueLines(lines))
}

export const classRm = (ctx: Context, dataDir: string, names: string[], fleet?: FleetRef): Promise<void> =>
  forEachArgument(ctx, names, async (name) => {
    await withStore(dataDir, fleet, (store) => store.removeClass(name))
    return `${name}\n`
  })
