/** podctl list: all pods, as a table or JSON (CONTRACT §5). */
import type { Command } from 'commander'
import type { CommandSpec } from '../command-spec.js'
import type { Context } from '../context.js'
import { addFormatOption, collect, dataDirOf } from '../options.js'

export interface ListOptions {
  format: string
  full?: boolean
  /** false: no header line (--no-legacy). */
  legacy: boolean
  state?: string[]
}

export const list: CommandSpec = {
  name: 'list',
  description: 'list all pods',
  define: (cmd: Command, ctx: Context): void => {
    addFormatOption(cmd, ctx)
      .option('--full', 'full UUIDs and RFC 3339 times')
      .option('--no-legacy', 'no header line')
      .option('--state <state>', 'only pods in this state (repeatable), e.g. running, exited, "exited garbage"', collect)
      .addHelpText('after', '\nExamples:\n  $ podctl list\n  $ podctl list --state running --format json')
      .action(async (opts: ListOptions, self: Command) => ctx.io.out(await (await import('../actions/list.js')).listOutput(dataDirOf(self, 'read'), opts)))
  },
}
