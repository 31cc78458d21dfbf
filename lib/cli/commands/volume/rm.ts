/** podctl volume rm: remove persistent volumes that no running pod uses. */
import type { Command } from 'commander'
import { PodctlError } from '../../../errors.js'
import { dataDirOf, type Context } from '../../context.js'

export const registerVolumeRm = (volume: Command, ctx: Context): void => {
  volume
    .command('rm')
    .description('remove persistent volumes and their data; a volume a running pod uses is refused (exit 4); prints each removed name')
    .argument('<name...>', 'volume names')
    .addHelpText('after', '\nExamples:\n  $ podctl volume rm db\n  $ podctl volume rm cache scratch')
    .action(async (names: string[], _opts: unknown, self: Command) => {
      const { removeVolume } = await import('../../../volume/persistent.js')
      const dataDir = dataDirOf(self)
      let firstFailure: number | undefined
      for (const name of names) {
        try {
          removeVolume(dataDir, name)
          ctx.io.out(`${name}\n`)
        } catch (er) {
          if (!(er instanceof PodctlError)) throw er
          // Like rm: go past a bad one, report it, fail at the end.
          ctx.io.err(`podctl: ${er.message}\n${er.hint ? `${er.hint}\n` : ''}`)
          if (ctx.state.debug && er.stack) ctx.io.err(`${er.stack}\n`)
          firstFailure ??= er.exitCode
        }
      }
      if (firstFailure !== undefined) ctx.state.exitCode = firstFailure
    })
}
