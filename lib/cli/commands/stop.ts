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
      let firstFailure: number | undefined
      // Stop them all at once: a slow pod does not delay the others' SIGTERM.
      await Promise.all(
        uuids.map(async (arg) => {
          try {
            const pod = podFromUUIDString(dataDir, arg)
            await stopPod(pod, { force: opts.force === true, timeoutMs })
            ctx.io.out(`${pod.uuid}\n`)
          } catch (er) {
            if (!(er instanceof PodctlError)) throw er
            ctx.io.err(`podctl: ${er.message}\n${er.hint ? `${er.hint}\n` : ''}`)
            firstFailure ??= er.exitCode
          }
        }),
      )
      if (firstFailure !== undefined) ctx.state.exitCode = firstFailure
    })
}
