/**
 * The podctl program: every command, its options and its help, declared
 * with commander, which parses every command line. Each command is
 * registered by name and description; the rest of its definition is added
 * when commander dispatches to it (the preSubcommand hook) or shows its
 * help, so a command line builds one command's option table. A command's
 * behaviour lives in lib/cli/actions/ and is loaded only when it runs.
 */
import { Argument, Command } from 'commander'
import type { CommandSpec } from './command-spec.js'
import { app } from './commands/app/index.js'
import { catManifest } from './commands/cat-manifest/index.js'
import { controller } from './commands/controller/index.js'
import { enter } from './commands/enter/index.js'
import { gc } from './commands/gc/index.js'
import { image } from './commands/image/index.js'
import { list } from './commands/list/index.js'
import { logs } from './commands/logs/index.js'
import { network } from './commands/network/index.js'
import { node } from './commands/node/index.js'
import { prepare } from './commands/prepare/index.js'
import { rm } from './commands/rm/index.js'
import { runPrepared } from './commands/run-prepared/index.js'
import { stats } from './commands/stats/index.js'
import { run } from './commands/run/index.js'
import { inspect } from './commands/inspect/index.js'
import { status } from './commands/status/index.js'
import { stop } from './commands/stop/index.js'
import { version } from './commands/version/index.js'
import { volume } from './commands/volume/index.js'
import type { Context } from './context.js'
import { addGlobalOptions, addGlobalOptionsBelow, parseDurations } from './options.js'
import { podctlVersion } from './version-info.js'

/** In the order `podctl --help` lists them. */
const COMMANDS: readonly CommandSpec[] = [prepare, run, runPrepared, list, status, inspect, stop, logs, enter, stats, rm, gc, app, catManifest, volume, image, network, controller, node, version]

/** Builds the program. exitOverride and the output settings are set before the commands, which copy them. */
export const buildProgram = (ctx: Context): Command => {
  const program = new Command('podctl')
    .description('podctl: a daemonless pod lifecycle manager (rkt-style pods for Node.js)')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => ctx.io.out(s),
      writeErr: (s) => ctx.io.err(s),
      outputError: (s, write) => write(`podctl: ${s.replace(/^error: /, '')}`),
      // Help is as wide as a terminal would be; asking process.stdout for
      // its width would create the stream (and its cost) on every command.
      getOutHelpWidth: () => 80,
      getErrHelpWidth: () => 80,
    })
    .showSuggestionAfterError(true)
    // The program's options come before the command word; each command
    // takes the global ones after it too (addGlobalOptions).
    .enablePositionalOptions()
    // Every command's --help lists --dir and --debug too, but not the
    // program's -v, --version, which is not a command's, nor a parent
    // command's own options (controller's --workers are not status's).
    .configureHelp({
      showGlobalOptions: true,
      visibleGlobalOptions: (cmd: Command) => {
        let root = cmd
        while (root.parent) root = root.parent
        return root.options.filter((o) => !o.hidden && o.long !== '--version')
      },
    })
    // `help [command...]` is a command of ours (below): commander's own
    // shows a command's help without dispatching to it.
    .helpCommand(false)
  addGlobalOptions(program, ctx)
    .version(podctlVersion(), '-v, --version', 'print the podctl version')
    .addHelpText(
      'after',
      `
Examples:
  $ podctl prepare -- sleep 60          # prints the new pod's UUID
  $ podctl list
  $ podctl status 8c3b1f0e --format json
  $ podctl gc --grace-period 0s

Documentation: Documentation/subcommands/<command>.md`,
    )
  const pending = new Map<Command, CommandSpec>()
  for (const spec of COMMANDS) pending.set(program.command(spec.name).aliases(spec.aliases ?? []).description(spec.description), spec)
  const define = (cmd: Command): void => {
    const spec = pending.get(cmd)
    if (spec === undefined) return
    pending.delete(cmd)
    spec.define(cmd, ctx)
    addGlobalOptionsBelow(cmd, ctx)
  }
  program
    .hook('preSubcommand', (_program, sub) => define(sub))
    .hook('preAction', (_program, action) => parseDurations(action))
  program
    .command('completion')
    .description('print a shell completion script: source <(podctl completion bash)')
    .addArgument(new Argument('<shell>', 'the shell').choices(['bash', 'zsh', 'fish']))
    .addHelpText('after', '\nExamples:\n  $ source <(podctl completion bash)          # in ~/.bashrc\n  $ podctl completion fish > ~/.config/fish/completions/podctl.fish')
    .action(async (shell: 'bash' | 'zsh' | 'fish') => ctx.io.out((await import('./completion.js')).completionScript(shell)))
  // What the completion scripts call, with the shell's words after "--" so
  // that none of them is taken as an option: the candidates for the last
  // word, one a line.
  program
    .command('__complete', { hidden: true })
    .argument('[words...]')
    .allowUnknownOption()
    .helpOption(false)
    .action(async (words: string[]) => {
      const { complete } = await import('./completion.js')
      const out = complete(program, define, words)
      ctx.io.out(out.length > 0 ? `${out.join('\n')}\n` : '')
    })
  program
    .command('help')
    .description('display help for a command')
    .argument('[command...]', 'the command, e.g. status or volume create')
    .action((names: string[]) => {
      let cmd = program
      for (const name of names) {
        const sub = cmd.commands.find((c) => c.name() === name || c.aliases().includes(name))
        if (sub === undefined) {
          cmd.error(`unknown command '${name}'`, { code: 'commander.unknownCommand', exitCode: 2 })
        }
        define(sub!)
        cmd = sub!
      }
      cmd.outputHelp()
    })
  for (const cmd of program.commands) if (!pending.has(cmd)) addGlobalOptionsBelow(cmd, ctx)
  return program
}
