/** podctl list: all pods, as a table or JSON (CONTRACT §5). */
import { Option, type Command } from 'commander'
import { dataDirOf, FORMATS, type Context } from '../context.js'
import { listOutput, type ListOptions } from '../list-output.js'

const collect = (v: string, prev: string[] = []): string[] => [...prev, v]

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
      ctx.io.out(await listOutput(dataDirOf(self), opts))
    })
}
