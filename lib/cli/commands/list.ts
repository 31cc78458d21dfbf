/** podctl list: all pods, as a table or JSON (CONTRACT §5). */
import { Option, type Command } from 'commander'
import type { PodState } from '../../pod/state.js'
import type { PodView } from '../../pod/view.js'
import { dataDirOf, FORMATS, type Context } from '../context.js'
import { formatTable, isJson, relativeTime, toJson } from '../output.js'

interface ListOptions {
  format: string
  full?: boolean
  legacy: boolean
  state?: string[]
}

const collect = (v: string, prev: string[] = []): string[] => [...prev, v]

const byCreation = (a: PodView, b: PodView): number =>
  (a.created_at ?? '').localeCompare(b.created_at ?? '') || a.uuid.localeCompare(b.uuid)

export const registerList = (program: Command, ctx: Context): void => {
  program
    .command('list')
    .description('list all pods')
    .addOption(new Option('--format <format>', 'output format').choices(FORMATS).default('table'))
    .option('--full', 'full UUIDs and RFC 3339 times')
    .option('--no-legacy', 'no header line')
    .option('--state <state>', 'only pods in this state (repeatable), e.g. running, exited, "exited garbage"', collect)
    .addHelpText('after', '\nExamples:\n  $ podctl list\n  $ podctl list --state running --format json')
    .action(async (opts: ListOptions, self: Command) => {
      ctx.state.format = opts.format
      // The core is imported here, not at start-up: every command pays
      // Node's start-up, only this one pays for listing.
      const [{ PodctlError }, { dataDirExists }, { parseState }, { podView }, { Include, listPods }, { reapOrphans }] = await Promise.all([
        import('../../errors.js'),
        import('../../pod/layout.js'),
        import('../../pod/state.js'),
        import('../../pod/view.js'),
        import('../../pod/walk.js'),
        import('../../pod/reap.js'),
      ])
      const wanted = new Set<PodState>()
      for (const s of opts.state ?? []) {
        const st = parseState(s)
        if (!st) throw new PodctlError('EUSAGE', `unknown state ${JSON.stringify(s)}`, 'states: embryo, preparing, aborted prepare, prepared, running, exited, exited deleting, exited garbage, deleting, garbage')
        wanted.add(st)
      }
      const dataDir = dataDirOf(self)
      const pods = dataDirExists(dataDir) ? listPods(dataDir, Include.all) : []
      const views = pods
        .filter((p) => wanted.size === 0 || wanted.has(p.state))
        .map((p) => {
          const v = podView(p)
          // An exited pod whose record still shows a running app lost its
          // supervisor: make sure that app did not outlive it.
          if (v.apps.some((a) => a.state === 'unknown')) reapOrphans(p)
          return v
        })
        .sort(byCreation)
      if (isJson(opts.format)) {
        ctx.io.out(toJson(views, opts.format))
        return
      }
      const now = Date.now()
      const time = (t: string | null): string => (opts.full ? (t ?? '-') : relativeTime(t, now))
      const rows = views.map((v) => [
        opts.full ? v.uuid : v.uuid.slice(0, 8),
        v.name ?? '-',
        v.apps.map((a) => a.name).join(',') || '-',
        v.state,
        time(v.created_at),
        time(v.started_at),
      ])
      ctx.io.out(formatTable(opts.legacy ? ['UUID', 'NAME', 'APPS', 'STATE', 'CREATED', 'STARTED'] : undefined, rows))
    })
}
