/** podctl stop: stop running pods. */
import type { Command } from 'commander'
import { PodctlError } from '../../errors.js'
import { parseNonNegativeDuration } from '../../duration.js'
import { dataDirOf, type Context } from '../context.js'

export const registerStop = (program: Command, ctx: Context): void => {
  program
    .command('stop')
    .description('stop running pods: SIGTERM to every app, SIGKILL after the timeout; returns when the pods have exited')
    .argument('<uuid...>', 'pod UUIDs or unambiguous prefixes')
    .option('--force', 'SIGKILL at once')
    .option('--timeout <duration>', 'time between SIGTERM and SIGKILL', '10s')
    .addHelpText('after', '\nExamples:\n  $ podctl stop 8c3b1f0e\n  $ podctl stop --timeout 30s 8c3b1f0e 4a2d9e11')
    .action(async (uuids: string[], opts: { force?: boolean; timeout: string }, self: Command) => {
      const timeoutMs = parseNonNegativeDuration(opts.timeout, '--timeout')
      const dataDir = dataDirOf(self)
      const [{ podFromUUIDString }, { stopPod }] = await Promise.all([import('../../pod/pod.js'), import('../../run/stop.js')])
      // Stop them all at once (a slow pod does not delay the others'
      // SIGTERM), but report in argument order, as rm does: the output and
      // the exit code (the first failure in that order) do not depend on
      // which pod happened to stop first.
      const outcomes = await Promise.all(
        uuids.map(async (arg): Promise<{ uuid: string } | { error: PodctlError }> => {
          try {
            const pod = podFromUUIDString(dataDir, arg)
            await stopPod(pod, { force: opts.force === true, timeoutMs })
            return { uuid: pod.uuid }
          } catch (er) {
            if (!(er instanceof PodctlError)) throw er
            return { error: er }
          }
        }),
      )
      let firstFailure: number | undefined
      for (const o of outcomes) {
        if ('uuid' in o) {
          ctx.io.out(`${o.uuid}\n`)
          continue
        }
        ctx.io.err(`podctl: ${o.error.message}\n${o.error.hint ? `${o.error.hint}\n` : ''}`)
        if (ctx.state.debug && o.error.stack) ctx.io.err(`${o.error.stack}\n`)
        firstFailure ??= o.error.exitCode
      }
      if (firstFailure !== undefined) ctx.state.exitCode = firstFailure
    })
}
