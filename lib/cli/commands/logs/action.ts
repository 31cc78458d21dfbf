/** What `podctl logs` does. */
import { parseNonNegativeDuration } from '../../../duration.js'
import { PodctlError, shortId } from '../../../errors.js'
import { podFromArg } from '../../../pod/find.js'
import { followLogs, formatLine, logEnds, readAppLogLines, selectLines } from '../../../run/logs.js'
import type { Context } from '../../context.js'
import type { LogsOptions } from './options.js'

// RFC 3339: a date, a time (seconds and fraction optional), and Z or an offset.
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2})$/

/** --since: a duration back from now (10m) or a time (RFC 3339), as ms since the epoch. */
export const parseSince = (text: string, now: number): number => {
  if (RFC3339.test(text)) {
    const t = Date.parse(text)
    if (!Number.isNaN(t)) return t
  } else if (/^[0-9.]/.test(text)) {
    try {
      return now - parseNonNegativeDuration(text, '--since')
    } catch {
      // reported below, with both forms
    }
  }
  throw new PodctlError('EUSAGE', `invalid --since ${JSON.stringify(text)}: expected a duration (10m, 1h30m) or a time (2026-11-25T16:00:00Z)`)
}

/** Prints the logs of the pod's apps (or one), then follows them if asked. */
export const logs = async (ctx: Context, dataDir: string, uuid: string, opts: LogsOptions): Promise<void> => {
  let tail: number | undefined
  if (opts.tail !== undefined) {
    if (!/^\d+$/.test(opts.tail)) throw new PodctlError('EUSAGE', `invalid --tail ${JSON.stringify(opts.tail)}: expected a whole number of lines`)
    tail = Number(opts.tail)
  }
  const since = opts.since === undefined ? undefined : parseSince(opts.since, Date.now())
  const pod = podFromArg(dataDir, uuid)
  let apps = pod.record().apps.map((a) => a.name)
  if (opts.app !== undefined) {
    if (!apps.includes(opts.app)) {
      throw new PodctlError('ENOPOD', `pod ${shortId(pod.uuid)} has no app named ${JSON.stringify(opts.app)}`, `its apps: ${apps.join(', ') || 'none'}`)
    }
    apps = [opts.app]
  }
  const several = apps.length > 1
  const format = (app: string) => ({ ...(several ? { app } : {}), timestamps: opts.timestamps === true })
  // Taken before the history is read: what is written meanwhile is followed, not lost.
  const ends = opts.follow ? logEnds(pod, apps) : undefined
  for (const app of apps) {
    const lines = selectLines(readAppLogLines(pod, app, ends?.find((e) => e.app === app)), { ...(since === undefined ? {} : { since }), ...(tail === undefined ? {} : { tail }) })
    const text = lines.map((l) => formatLine(l, format(app))).join('')
    // One app's unfinished last line must not run into the next app's first.
    ctx.io.out(several && text !== '' && !text.endsWith('\n') ? `${text}\n` : text)
  }
  if (ends) await followLogs(pod, ends, (app, line) => ctx.io.out(formatLine(line, format(app))))
}
