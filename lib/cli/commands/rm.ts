/** podctl rm: remove pods that are not running. */
import type { Command } from 'commander'
import { PodctlError } from '../../errors.js'
import { dataDirOf, type Context } from '../context.js'
import { progressReporter } from '../output.js'

export const registerRm = (program: Command, ctx: Context): void => {
  program
    .command('rm')
    .description('remove pods that are not running; prints each removed UUID')
    .argument('[uuid...]', 'pod UUIDs or unambiguous prefixes')
    .option('--uuid-file <file>', 'also remove the pod whose UUID is in this file')
    .addHelpText('after', '\nExamples:\n  $ podctl rm 8c3b1f0e\n  $ podctl rm --uuid-file web.uuid')
    .action(async (uuids: string[], opts: { uuidFile?: string }, self: Command) => {
      const [{ removePod }, { podFromUUIDString, readUUIDFromFile }] = await Promise.all([
        import('../../pod/gc.js'),
        import('../../pod/pod.js'),
      ])
      const args = [...uuids]
      if (opts.uuidFile !== undefined) args.push(readUUIDFromFile(opts.uuidFile))
      if (args.length === 0) throw new PodctlError('EUSAGE', 'no pod given', 'usage: podctl rm UUID... [--uuid-file FILE]')
      const dataDir = dataDirOf(self)
      const progress = progressReporter(ctx.io, 'rm', true)
      let firstFailure: number | undefined
      args.forEach((arg, i) => {
        try {
          const pod = podFromUUIDString(dataDir, arg)
          removePod(pod)
          ctx.io.out(`${pod.uuid}\n`)
        } catch (er) {
          if (!(er instanceof PodctlError)) throw er
          // rm goes past a bad pod, reports it, and fails at the end.
          ctx.io.err(`podctl: ${er.message}\n${er.hint ? `${er.hint}\n` : ''}`)
          if (ctx.state.debug && er.stack) ctx.io.err(`${er.stack}\n`)
          firstFailure ??= er.exitCode
        }
        progress.report(i + 1, args.length)
      })
      progress.finish()
      if (firstFailure !== undefined) ctx.state.exitCode = firstFailure
    })
}
