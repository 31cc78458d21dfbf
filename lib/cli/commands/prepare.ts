/** podctl prepare: create a pod and leave it prepared; prints its UUID. */
import type { Command } from 'commander'
import { dataDirOf, type Context } from '../context.js'
import { addPodInputOptions, type PodInputOptions } from '../pod-input-options.js'

export const registerPrepare = (program: Command, ctx: Context): void => {
  const cmd = program
    .command('prepare')
    .description('create a pod from a manifest or a command, and leave it prepared; stdout is the UUID and nothing else')
  addPodInputOptions(cmd)
    .addHelpText(
      'after',
      `
Examples:
  $ podctl prepare -- sleep 60
  $ podctl prepare --manifest web.json --uuid-file-save web.uuid
  $ cat web.json | podctl prepare --manifest - --env LOG_LEVEL=debug`,
    )
    .action(async (command: string[], opts: PodInputOptions, self: Command) => {
      const [{ writeUUIDToFile }, { discard, createPod }, { manifestFromInputs }] = await Promise.all([
        import('../../pod/pod.js'),
        import('../../pod/prepare.js'),
        import('../pod-input.js'),
      ])
      const manifest = manifestFromInputs(opts, command)
      const pod = await createPod(dataDirOf(self), manifest)
      try {
        if (opts.uuidFileSave !== undefined) writeUUIDToFile(pod.uuid, opts.uuidFileSave)
        pod.toPrepared()
      } catch (er) {
        discard(pod)
        throw er
      }
      ctx.io.out(`${pod.uuid}\n`)
    })
}
