/** What the `podctl volume` commands do: persistent volumes, and updates of files volumes. */
import { PodctlError, shortId } from '../../../errors.js'
import { ensureDataDir } from '../../../pod/layout.js'
import { podFromArg } from '../../../pod/find.js'
import { parseBytes } from '../../../bytes.js'
import { ACCESS_MODE_NAMES } from '../../../storage/access-modes.js'
import { pvView } from '../../../storage/local/pv-view.js'
import { checkNewVolume, createVolume, listVolumes, removeVolume } from '../../../storage/local/volumes.js'
import { payloadFromSources, updateFilesVolume } from '../../../volume/update.js'
import { pvInspect, pvInspectLines } from '../../../volume/view.js'
import type { Context } from '../../context.js'
import { formatTable, isJson, relativeTime, toJson, wantsHeader } from '../../output.js'
import { forEachArgument } from '../../report-error.js'
import type { CreateOptions, UpdateOptions, VolumeListOptions } from './options.js'

export const create = (ctx: Context, dataDir: string, name: string, opts: CreateOptions): void => {
  const sizeLimitBytes = opts.sizeLimit !== undefined ? parseBytes(opts.sizeLimit, '--size-limit') : null
  checkNewVolume(dataDir, name, { sizeLimitBytes }) // before the data dir is made
  ensureDataDir(dataDir)
  const rec = createVolume(dataDir, name, { reclaim: opts.reclaim, accessMode: ACCESS_MODE_NAMES[opts.accessMode]!, sizeLimitBytes })
  ctx.io.out(isJson(opts.format) ? toJson(pvView(dataDir, rec), opts.format) : `${rec.name}\n`)
}

export const inspect = (ctx: Context, dataDir: string, name: string, opts: { format: string }): void => {
  const v = pvInspect(dataDir, name)
  ctx.io.out(isJson(opts.format) ? toJson(v, opts.format) : pvInspectLines(v))
}

export const list = (ctx: Context, dataDir: string, opts: VolumeListOptions): void => {
  const views = listVolumes(dataDir).map((r) => pvView(dataDir, r))
  if (isJson(opts.format)) {
    ctx.io.out(toJson(views, opts.format))
    return
  }
  const now = Date.now()
  const rows = views.map((v) => [
    v.name,
    v.phase,
    v.claim ?? '-',
    v.access_mode,
    v.reclaim,
    v.size_limit_bytes === null ? '-' : String(v.size_limit_bytes),
    String(v.claims.length),
    v.in_use_by.map((u) => (opts.full ? u : shortId(u))).join(',') || '-',
    opts.full ? v.created_at : relativeTime(v.created_at, now),
  ])
  ctx.io.out(formatTable(wantsHeader(opts) ? ['NAME', 'PHASE', 'CLAIM', 'ACCESS', 'RECLAIM', 'SIZE-LIMIT', 'BOUND', 'IN-USE-BY', 'CREATED'] : undefined, rows))
}

/** Removes each volume, printing its name; goes past a bad one. */
export const rm = (ctx: Context, dataDir: string, names: string[]): Promise<void> =>
  forEachArgument(ctx, names, (name) => {
    removeVolume(dataDir, name)
    return `${name}\n`
  })

export const update = (ctx: Context, dataDir: string, uuid: string, name: string, opts: UpdateOptions): void => {
  if ((opts.fromFile ?? []).length === 0 && opts.fromDir === undefined) {
    throw new PodctlError('EUSAGE', 'no content given: use --from-file REL=PATH (repeatable) or --from-dir DIR', 'usage: podctl volume update UUID VOLUME --from-file REL=PATH... | --from-dir DIR')
  }
  const payload = payloadFromSources({ ...(opts.fromFile ? { fromFile: opts.fromFile } : {}), ...(opts.fromDir !== undefined ? { fromDir: opts.fromDir } : {}) })
  const pod = podFromArg(dataDir, uuid)
  const onWait = (pid: number | undefined): void =>
    ctx.io.err(`podctl: waiting for another operation on volume ${name} of pod ${shortId(pod.uuid)}${pid !== undefined ? ` (process ${pid})` : ''}\n`)
  const { changed } = updateFilesVolume(pod, name, payload, { wait: opts.wait, timeoutMs: opts.timeout, onWait })
  ctx.io.out(`${name} ${changed ? 'updated' : 'unchanged'}\n`)
}
