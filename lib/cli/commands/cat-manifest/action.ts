/** What `podctl cat-manifest` does. */
import { podFromArg } from '../../../pod/find.js'
import type { Context } from '../../context.js'
import type { CatManifestOptions } from './options.js'

/** Prints the manifest as stored (one line), or indented. */
export const catManifest = (ctx: Context, dataDir: string, uuid: string, opts: CatManifestOptions): void => {
  const { raw, manifest } = podFromArg(dataDir, uuid).podManifest()
  ctx.io.out(opts.prettyPrint === true || opts.pretty === true ? `${JSON.stringify(manifest, null, 2)}\n` : raw.endsWith('\n') ? raw : `${raw}\n`)
}
