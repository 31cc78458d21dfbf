/** podctl image: images in the store (OCI and Docker images), and their import. */
import type { Command } from 'commander'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { registerImageImport } from './import/index.js'
import { registerImageInspect } from './inspect.js'
import { registerImageList } from './list.js'
import { registerImagePrune } from './prune.js'
import { registerImagePull } from './pull.js'
import { registerImageRm } from './rm.js'
import { registerImageTag } from './tag.js'

export const image: CommandSpec = {
  name: 'image',
  description: 'images: import OCI and Docker images (or pull them with skopeo), list, inspect, tag, remove and prune them',
  define: (cmd: Command, ctx: Context): void => {
    const image = cmd.addHelpText(
      'after',
      `
Examples:
  $ podctl image import oci-archive:alpine.tar --name alpine:3
  $ podctl image pull docker://docker.io/library/alpine:3.20
  $ podctl image list
  $ podctl image inspect alpine:3
  $ podctl image rm alpine:3

Documentation: Documentation/subcommands/image.md`,
    )
    registerImageImport(image, ctx)
    registerImagePull(image, ctx)
    registerImageList(image, ctx)
    registerImageInspect(image, ctx)
    registerImageTag(image, ctx)
    registerImageRm(image, ctx)
    registerImagePrune(image, ctx)
  },
}
