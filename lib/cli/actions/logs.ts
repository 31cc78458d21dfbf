/** What `podctl logs` does. */
import { PodctlError } from '../../errors.js'
import { podFromUUIDString } from '../../pod/pod.js'
import { followLogs, prefixLines, readAppLog, tailLines } from '../../run/logs.js'
import type { LogsOptions } from '../commands/logs.js'
import type { Context } from '../context.js'

/** Prints the logs of the pod's apps (or one), then follows them if asked. */
export const logs = async (ctx: Context, dataDir: string, uuid: string, opts: LogsOptions): Promise<void> => {
  let tail: number | undefined
  if (opts.tail !== undefined) {
    if (!/^\d+$/.test(opts.tail)) throw new PodctlError('EUSAGE', `invalid --tail ${JSON.stringify(opts.tail)}: expected a whole number of lines`)
    tail = Number(opts.tail)
  }
  const pod = podFromUUIDString(dataDir, uuid)
  let apps = pod.record().apps.map((a) => a.name)
  if (opts.app !== undefined) {
    if (!apps.includes(opts.app)) {
      throw new PodctlError('ENOPOD', `pod ${pod.uuid.slice(0, 8)} has no app named ${JSON.stringify(opts.app)}`, `its apps: ${apps.join(', ') || 'none'}`)
    }
    apps = [opts.app]
  }
  const several = apps.length > 1
  for (const app of apps) {
    const text = prefixLines(tailLines(readAppLog(pod, app), tail), several ? app : undefined)
    // One app's unfinished last line must not run into the next app's first.
    ctx.io.out(several && text !== '' && !text.endsWith('\n') ? `${text}\n` : text)
  }
  if (opts.follow) await followLogs(pod, apps, (app, text) => ctx.io.out(prefixLines(text, several ? app : undefined)))
}
