/** podctl image import: an image from an OCI layout, an OCI archive or a Docker archive into the store. */
import type { Command } from 'commander'
import type { Context } from '../../../context.js'
import { dataDirOf } from '../../../options.js'
import type { ImageImportOptions } from './options.js'

/** The options import and pull share. */
export const addImportOptions = (cmd: Command): Command =>
  cmd
    .option('--name <name[:tag]>', 'name the image (tag "latest" when none is given) instead of taking the name the source gives it')
    .option('--platform <os/arch>', 'from a multi-platform image, this platform instead of this machine\'s (e.g. linux/arm64)')
    .option('--max-size <bytes>', 'refuse an image that writes more than this while it is staged, or again while it is unpacked (e.g. 500M, 2Gi)', '10Gi')

export const registerImageImport = (image: Command, ctx: Context): void => {
  const cmd = image
    .command('import')
    .description('import an image: an OCI layout (DIR or oci:DIR[:TAG]), an OCI archive (oci-archive:FILE[:TAG]), a Docker archive (docker-archive:FILE, what docker save and podman save write), or - for an archive on stdin; prints its digest')
    .argument('<source>', 'DIR, FILE, oci:DIR[:TAG], oci-archive:FILE[:TAG], docker-archive:FILE[:NAME], or -')
  addImportOptions(cmd)
    .addHelpText('after', '\nExamples:\n  $ podctl image import oci-archive:alpine.tar --name alpine:3\n  $ podctl image import oci:./layout:v2\n  $ docker save busybox | podctl image import -')
    .action(async (source: string, opts: ImageImportOptions, self: Command) => (await import('./action.js')).importAction(ctx, dataDirOf(self, 'write'), source, opts))
}
