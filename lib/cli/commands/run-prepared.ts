/** podctl run-prepared: run a prepared pod, in the foreground or detached. */
import type { Command } from 'commander'
import { dataDirOf, type Context } from '../context.js'
import { runForeground } from '../run-foreground.js'

export const registerRunPrepared = (program: Command, ctx: Context): void => {
  program
    .command('run-prepared')
    .description("run a prepared pod; in the foreground podctl streams the apps' output and exits with the pod's exit code")
    .argument('<uuid>', 'pod UUID or unambiguous prefix')
    .option('--detach', 'return once the pod is running; the supervisor lives on')
    .addHelpText('after', '\nExamples:\n  $ podctl run-prepared 8c3b1f0e\n  $ podctl run-prepared --detach 8c3b1f0e')
    .action(async (uuid: string, opts: { detach?: boolean }, self: Command) => {
      const dataDir = dataDirOf(self)
      const { podFromUUIDString } = await import('../../pod/pod.js')
      const pod = podFromUUIDString(dataDir, uuid)
      if (opts.detach) {
        const { runDetached } = await import('../../run/detach.js')
        ctx.io.out(`${await runDetached({ dataDir, uuid: pod.uuid })}\n`)
        return
      }
      const { startPrepared } = await import('../../run/start.js')
      ctx.state.exitCode = await runForeground(ctx, async () => startPrepared(pod))
    })
}
