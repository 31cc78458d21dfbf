/** podctl run: prepare and run a pod, in the foreground or detached. */
import type { Command } from 'commander'
import { dataDirOf, type Context } from '../context.js'
import { addPodInputOptions, type PodInputOptions } from '../pod-input-options.js'
import { runForeground } from '../run-foreground.js'

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
    .action(async (command: string[], opts: PodInputOptions & { detach?: boolean }, self: Command) => {
      const { manifestFromInputs } = await import('../pod-input.js')
      const manifest = manifestFromInputs(opts, command, undefined, 'run')
      const dataDir = dataDirOf(self)
      if (opts.detach) {
        const [{ runDetached }, path] = await Promise.all([import('../../run/detach.js'), import('node:path')])
        const uuidFileSave = opts.uuidFileSave !== undefined ? path.resolve(opts.uuidFileSave) : undefined
        const uuid = await runDetached({ dataDir, manifest, ...(uuidFileSave !== undefined ? { uuidFileSave } : {}) })
        ctx.io.out(`${uuid}\n`)
        return
      }
      ctx.state.exitCode = await runForeground(ctx, async () => {
        const [{ createPod, discard }, { writeUUIDToFile }] = await Promise.all([import('../../pod/prepare.js'), import('../../pod/pod.js')])
        const pod = await createPod(dataDir, manifest)
        try {
          if (opts.uuidFileSave !== undefined) writeUUIDToFile(pod.uuid, opts.uuidFileSave)
          if (manifest.volumes?.length) (await import('../../volume/pod-volumes.js')).setUpPodVolumes(pod, manifest)
          pod.toRun()
        } catch (er) {
          discard(pod)
          throw er
        }
        return { pod, manifest }
      })
    })
}
