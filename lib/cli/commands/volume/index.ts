/** podctl volume: persistent volumes, and updates of a running pod's files volumes. */
import type { Command } from 'commander'
import type { CommandSpec } from '../../command-spec.js'
import type { Context } from '../../context.js'
import { registerVolumeClaim } from './claim/index.js'
import { registerVolumeClass } from './class/index.js'
import { registerVolumeCreate } from './create.js'
import { registerVolumeInspect } from './inspect.js'
import { registerVolumeList } from './list.js'
import { registerVolumeRm } from './rm.js'
import { registerVolumeUpdate } from './update.js'

export const volume: CommandSpec = {
  name: 'volume',
  description: 'volumes: persistent volumes, volume classes and claims; update the files volume of a running pod',
  define: (cmd: Command, ctx: Context): void => {
    const volume = cmd
      .addHelpText(
        'after',
        `
Examples:
  $ podctl volume create db --reclaim retain --size-limit 1G
  $ podctl volume list
  $ podctl volume inspect db --format json
  $ podctl volume update 8c3b1f0e config --from-file app.conf=./app.conf
  $ podctl volume rm db

Documentation: Documentation/subcommands/volume.md`,
      )
    registerVolumeCreate(volume, ctx)
    registerVolumeList(volume, ctx)
    registerVolumeInspect(volume, ctx)
    registerVolumeRm(volume, ctx)
    registerVolumeUpdate(volume, ctx)
    registerVolumeClass(volume, ctx)
    registerVolumeClaim(volume, ctx)
  },
}
