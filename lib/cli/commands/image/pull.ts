/** podctl image pull: an image fetched by skopeo (registries, credentials and mirrors are skopeo's), then imported. */
import type { Command } from 'commander'
import type { Context } from '../../context.js'
import { dataDirOf } from '../../options.js'
import { addImportOptions } from './import/index.js'
import type { ImageImportOptions } from './import/options.js'

export const registerImagePull = (image: Command, ctx: Context): void => {
  const cmd = image
    .command('pull')
    .description('fetch an image with skopeo (skopeo copy REF oci:…) and import it; prints its digest')
    .argument('<ref>', 'what skopeo copies from: docker://NAME[:TAG], oci:DIR, docker-archive:FILE, …')
  addImportOptions(cmd)
    .addHelpText('after', '\nExamples:\n  $ podctl image pull docker://docker.io/library/alpine:3.20\n  $ podctl image pull docker://quay.io/podman/hello --name hello')
    .action(async (ref: string, opts: ImageImportOptions, self: Command) => (await import('./import/action.js')).pullAction(ctx, dataDirOf(self, 'write'), ref, opts))
}
