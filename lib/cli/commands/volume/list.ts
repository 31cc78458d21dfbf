/** podctl volume list: persistent volumes, as a table or JSON. */
import { Option, type Command } from 'commander'
import { dataDirOf, FORMATS, type Context } from '../../context.js'
import { formatTable, isJson, relativeTime, toJson } from '../../output.js'

interface ListOptions {
  format: string
  full?: boolean
  legacy: boolean
}

export const registerVolumeList = (volume: Command, ctx: Context): void => {
  volume
    .command('list')
    .alias('ls')
    .description('list persistent volumes: access mode, reclaim policy, size limit, the running pods using each')
    .addOption(new Option('--format <format>', 'output format').choices(FORMATS).default('table'))
    .option('--full', 'full pod UUIDs and RFC 3339 times')
    .option('--no-legacy', 'no header line')
    .addHelpText('after', '\nExamples:\n  $ podctl volume list\n  $ podctl volume list --format json')
    .action(async (opts: ListOptions, self: Command) => {
      ctx.state.format = opts.format
      const [{ listVolumes }, { pvView }] = await Promise.all([import('../../../volume/persistent.js'), import('../../../volume/pv-view.js')])
      const dataDir = dataDirOf(self)
      const views = listVolumes(dataDir).map((r) => pvView(dataDir, r))
      if (isJson(opts.format)) {
        ctx.io.out(toJson(views, opts.format))
        return
      }
      const now = Date.now()
      const rows = views.map((v) => [
        v.name,
        v.access_mode,
        v.reclaim,
        v.size_limit_bytes === null ? '-' : String(v.size_limit_bytes),
        String(v.claims.length),
        v.in_use_by.map((u) => (opts.full ? u : u.slice(0, 8))).join(',') || '-',
        opts.full ? v.created_at : relativeTime(v.created_at, now),
      ])
      ctx.io.out(formatTable(opts.legacy ? ['NAME', 'ACCESS', 'RECLAIM', 'SIZE-LIMIT', 'BOUND', 'IN-USE-BY', 'CREATED'] : undefined, rows))
    })
}
