/** podctl run: prepare and run a pod, in the foreground or detached. */
import type { Command } from 'commander'
import { dataDirOf, type Context } from '../context.js'
import { addPodInputOptions } from '../pod-input-options.js'
import { runAction, type RunOptions } from '../run-action.js'

export const registerRun = (program: Command, ctx: Context): void => {
  const cmd = program
    .command('run')
    .description("prepare and run a pod; in the foreground podctl streams the apps' output and exits with the pod's exit code")
  addPodInputOptions(cmd)
    .option('--detach', 'return once the pod is running and print its UUID; the supervisor lives on')
    .addHelpText(
      'after',
      `
Examples:
  $ podctl run -- sh -c 'echo hi; exit 3'     # prints hi, exits 3
  $ podctl run --detach -- sleep 300          # prints the UUID
  $ podctl run --manifest web.json --uuid-file-save web.uuid`,
    )
    .action(async (command: string[], opts: RunOptions, self: Command) => {
      await runAction(ctx, dataDirOf(self), command, opts)
    })
}
