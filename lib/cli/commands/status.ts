/** podctl status: one pod, as key=value lines or JSON; optionally wait. */
import { Option, type Command } from 'commander'
import { parseNonNegativeDuration } from '../../duration.js'
import type { PodView } from '../../pod/view.js'
import { volumeStatusLine } from '../../volume/status-line.js'
import { dataDirOf, FORMATS, type Context } from '../context.js'
import { isJson, toJson } from '../output.js'

interface StatusOptions {
  format: string
  wait?: true
  waitReady?: true
  waitFor?: string
  waitReadyFor?: string
}

// CONTRACT §4 writes `--wait[=DURATION]`: a duration only ever follows "=",
// so `status --wait UUID` waits on UUID. Commander's optional values would
// take the UUID as the duration, so --wait is a flag and `--wait=D` is
// rewritten to a hidden `--wait-for=D` before parsing.
const WAIT_FLAGS: Record<string, string> = { '--wait': '--wait-for', '--wait-ready': '--wait-ready-for' }

/** Rewrites `--wait=D` / `--wait-ready=D` in a status command line; leaves anything after `--`. */
export const splitWaitValues = (argv: string[]): string[] => {
  const end = argv.indexOf('--')
  const status = argv.indexOf('status')
  if (status < 0 || (end >= 0 && status > end)) return argv
  return argv.map((a, i) => {
    if (end >= 0 && i > end) return a
    const eq = a.indexOf('=')
    const to = eq > 0 ? WAIT_FLAGS[a.slice(0, eq)] : undefined
    return to ? `${to}${a.slice(eq)}` : a
  })
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

const timeoutSignal = (value: string | undefined, flag: string): AbortSignal | undefined =>
  value === undefined ? undefined : AbortSignal.timeout(parseNonNegativeDuration(value, flag))

export const registerStatus = (program: Command, ctx: Context): void => {
  program
    .command('status')
    .description('show the status of one pod')
    .argument('<uuid>', 'pod UUID or unambiguous prefix')
    .addOption(new Option('--format <format>', 'output format (table means key=value lines)').choices(FORMATS).default('table'))
    .option('--wait', 'wait until the pod has finished; --wait=DURATION waits at most DURATION (e.g. --wait=30s), then exits 5')
    .option('--wait-ready', 'wait until the pod is ready; --wait-ready=DURATION waits at most DURATION, then exits 5')
    .addOption(new Option('--wait-for <duration>').hideHelp())
    .addOption(new Option('--wait-ready-for <duration>').hideHelp())
    .addHelpText('after', '\nExamples:\n  $ podctl status 8c3b1f0e\n  $ podctl status 8c3b1f0e --wait=1m --format json')
    .action(async (uuid: string, opts: StatusOptions, self: Command) => {
      ctx.state.format = opts.format
      // Parse durations before touching anything.
      const readySignal = timeoutSignal(opts.waitReadyFor, '--wait-ready')
      const finishSignal = timeoutSignal(opts.waitFor, '--wait')
      const readyWanted = opts.waitReady === true || opts.waitReadyFor !== undefined
      const finishWanted = opts.wait === true || opts.waitFor !== undefined
      const [{ podFromUUIDString }, { podView }, { waitFinished, waitReady }, { reapOrphans }] = await Promise.all([
        import('../../pod/pod.js'),
        import('../../pod/view.js'),
        import('../../pod/wait.js'),
        import('../../pod/reap.js'),
      ])
      const pod = podFromUUIDString(dataDirOf(self), uuid)
      if (readyWanted) await waitReady(pod, readySignal ? { signal: readySignal } : {})
      if (finishWanted) await waitFinished(pod, finishSignal ? { signal: finishSignal } : {})
      reapOrphans(pod)
      const v = (await import('../../volume/view.js')).withVolumes(pod, podView(pod))
      ctx.io.out(isJson(opts.format) ? toJson(v, opts.format) : statusLines(v))
    })
}
