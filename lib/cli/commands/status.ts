/** podctl status: one pod, as key=value lines or JSON; optionally wait. */
import { Option, type Command } from 'commander'
import { parseNonNegativeDuration } from '../../duration.js'
import type { PodView } from '../../pod/view.js'
import { volumeStatusLine } from '../../volume/status-line.js'
import { dataDirOf, FORMATS, type Context } from '../context.js'
import { isJson, toJson } from '../output.js'

interface StatusOptions {
  format: string
  wait?: string | true
  waitReady?: string | true
}

/** rkt-style key=value lines; keys with no value yet are left out. */
export const statusLines = (v: PodView): string => {
  const lines = [`state=${v.state}`]
  if (v.created_at) lines.push(`created=${v.created_at}`)
  if (v.started_at) lines.push(`started=${v.started_at}`)
  if (v.pid !== null) lines.push(`pid=${v.pid}`)
  lines.push(`exited=${v.state === 'exited' || v.state === 'exited garbage' || v.state === 'exited deleting'}`)
  for (const a of v.apps) if (a.exit_code !== null) lines.push(`app-${a.name}=${a.exit_code}`)
  for (const vol of v.volumes ?? []) lines.push(volumeStatusLine(vol))
  return `${lines.join('\n')}\n`
}

const timeoutSignal = (value: string | true | undefined, flag: string): AbortSignal | undefined =>
  value === true || value === undefined ? undefined : AbortSignal.timeout(parseNonNegativeDuration(value, flag))

export const registerStatus = (program: Command, ctx: Context): void => {
  program
    .command('status')
    .description('show the status of one pod')
    .argument('<uuid>', 'pod UUID or unambiguous prefix')
    .addOption(new Option('--format <format>', 'output format (table means key=value lines)').choices(FORMATS).default('table'))
    .option('--wait [duration]', 'wait until the pod has finished (for at most DURATION, e.g. --wait=30s)')
    .option('--wait-ready [duration]', 'wait until the pod is ready (for at most DURATION)')
    .addHelpText('after', '\nExamples:\n  $ podctl status 8c3b1f0e\n  $ podctl status 8c3b1f0e --wait=1m --format json')
    .action(async (uuid: string, opts: StatusOptions, self: Command) => {
      ctx.state.format = opts.format
      // Parse durations before touching anything.
      const readySignal = opts.waitReady !== undefined ? timeoutSignal(opts.waitReady, '--wait-ready') : undefined
      const finishSignal = opts.wait !== undefined ? timeoutSignal(opts.wait, '--wait') : undefined
      const [{ podFromUUIDString }, { podView }, { waitFinished, waitReady }, { reapOrphans }] = await Promise.all([
        import('../../pod/pod.js'),
        import('../../pod/view.js'),
        import('../../pod/wait.js'),
        import('../../pod/reap.js'),
      ])
      const pod = podFromUUIDString(dataDirOf(self), uuid)
      if (opts.waitReady !== undefined) await waitReady(pod, readySignal ? { signal: readySignal } : {})
      if (opts.wait !== undefined) await waitFinished(pod, finishSignal ? { signal: finishSignal } : {})
      reapOrphans(pod)
      const v = (await import('../../volume/view.js')).withVolumes(pod, podView(pod))
      ctx.io.out(isJson(opts.format) ? toJson(v, opts.format) : statusLines(v))
    })
}
