/** podctl volume create: a persistent volume. */
import { Option, type Command } from 'commander'
import { dataDirOf, FORMATS, type Context } from '../../context.js'
import { isJson, toJson } from '../../output.js'

interface CreateOptions {
  reclaim: 'retain' | 'delete' | 'recycle'
  sizeLimit?: string
  accessMode: string
  format: string
}

/** Access modes by their names and Kubernetes' abbreviations. */
export const ACCESS_MODE_NAMES: Record<string, 'ReadWriteOnce' | 'ReadWriteMany'> = {
  ReadWriteOnce: 'ReadWriteOnce',
  RWO: 'ReadWriteOnce',
  ReadWriteMany: 'ReadWriteMany',
  RWX: 'ReadWriteMany',
}

export const registerVolumeCreate = (volume: Command, ctx: Context): void => {
  volume
    .command('create')
    .description('create a persistent volume: a named volume that outlives pods (manifest: {"kind": "persistent", "claim": NAME}); prints its name')
    .argument('<name>', 'volume name: 1 to 63 characters of a-z, 0-9 and "-"')
    .addOption(new Option('--reclaim <policy>', 'what happens when the last pod bound to it is removed').choices(['retain', 'delete', 'recycle']).default('retain'))
    .option('--size-limit <bytes>', 'usage limit, checked when a pod claims it (e.g. 1048576, 512M, 1Gi)')
    .addOption(new Option('--access-mode <mode>', 'ReadWriteOnce (RWO): one running pod at a time; ReadWriteMany (RWX): several').choices(Object.keys(ACCESS_MODE_NAMES)).default('ReadWriteOnce'))
    .addOption(new Option('--format <format>', 'output format (table prints the name)').choices(FORMATS).default('table'))
    .addHelpText('after', '\nExamples:\n  $ podctl volume create db\n  $ podctl volume create scratch --reclaim recycle --size-limit 512M --access-mode ReadWriteMany')
    .action(async (name: string, opts: CreateOptions, self: Command) => {
      ctx.state.format = opts.format
      const [{ parseBytes }, { createVolume, checkVolumeName }, { pvView }, { ensureDataDir }] = await Promise.all([
        import('../../../volume/bytes.js'),
        import('../../../volume/persistent.js'),
        import('../../../volume/pv-view.js'),
        import('../../../pod/layout.js'),
      ])
      checkVolumeName(name)
      const sizeLimitBytes = opts.sizeLimit !== undefined ? parseBytes(opts.sizeLimit, '--size-limit') : null
      const dataDir = dataDirOf(self)
      ensureDataDir(dataDir)
      const rec = createVolume(dataDir, name, { reclaim: opts.reclaim, accessMode: ACCESS_MODE_NAMES[opts.accessMode]!, sizeLimitBytes })
      ctx.io.out(isJson(opts.format) ? toJson(pvView(dataDir, rec), opts.format) : `${rec.name}\n`)
    })
}
