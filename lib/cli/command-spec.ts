/**
 * A top-level command as lib/cli/program.ts registers it: its name and
 * description, which `podctl --help` lists, and the rest of its definition
 * (arguments, options, help text, action), which is added only to the
 * command that commander dispatches to: a command line builds one
 * command's option table, not every command's.
 */
import type { Command } from 'commander'
import type { Context } from './context.js'

export interface CommandSpec {
  name: string
  /** Other names for it (podman's `ps` for list). */
  aliases?: readonly string[]
  description: string
  /** Adds the command's arguments, options, help and action to `cmd`. */
  define(cmd: Command, ctx: Context): void
}
