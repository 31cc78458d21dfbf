/** podctl cat-manifest: print a pod's manifest as stored. */
import type { Command } from 'commander'
import { dataDirOf, type Context } from '../context.js'

export const registerCatManifest = (program: Command, ctx: Context): void => {
  program
    .command('cat-manifest')
    .description("print a pod's manifest as stored")
    .argument('<uuid>', 'pod UUID or unambiguous prefix')
    .option('--pretty-print', 'indent the JSON')
    .addHelpText('after', '\nExample:\n  $ podctl cat-manifest 8c3b1f0e --pretty-print')
    .action(async (uuid: string, opts: { prettyPrint?: boolean }, self: Command) => {
      const { podFromUUIDString } = await import('../../pod/pod.js')
      const pod = podFromUUIDString(dataDirOf(self), uuid)
      const { raw, manifest } = pod.podManifest()
      ctx.io.out(opts.prettyPrint ? `${JSON.stringify(manifest, null, 2)}\n` : raw.endsWith('\n') ? raw : `${raw}\n`)
    })
}
