/**
 * The options that several commands share, defined once: the global flags,
 * --format, durations, repeatable values and the data dir. Every command
 * line is parsed by commander alone (lib/cli/program.ts).
 */
import { Option, type Command } from 'commander'
import { PodctlError } from '../errors.js'
import { parseNonNegativeDuration } from '../duration.js'
import { checkDataDirTrust, checkLayout, resolveDataDir } from '../pod/layout.js'
import type { Context } from './context.js'

/** Output formats of every command that prints data. */
export const FORMATS = ['table', 'json', 'json-pretty'] as const

/** --dir, --debug: valid before or after the command word (not after `--`). */
export const addGlobalOptions = (program: Command, ctx: Context): Command =>
  program
    .addOption(new Option('--dir <path>', 'data dir (default: $PODCTL_DIR, /var/lib/podctl as root, else $XDG_DATA_HOME/podctl)'))
    .addOption(new Option('--debug', 'show stack traces and timings on stderr'))
    .on('option:debug', () => {
      ctx.state.debug = true
    })

/**
 * The data dir a command works on (CONTRACT §1 resolution order), checked
 * (CONTRACT §10): its layout for every command; for a command that writes
 * or deletes, also that nobody else can change it.
 */
export const dataDirOf = (cmd: Command, access: 'read' | 'write'): string => {
  const dataDir = resolveDataDir((cmd.optsWithGlobals() as { dir?: string }).dir)
  checkLayout(dataDir)
  if (access === 'write') checkDataDirTrust(dataDir)
  return dataDir
}

/**
 * --format for a command that prints data. The choice is noted as soon as
 * it is parsed, so that an error after it is printed as JSON too.
 */
export const addFormatOption = (cmd: Command, ctx: Context, description = 'output format'): Command =>
  cmd.addOption(new Option('--format <format>', description).choices(FORMATS).default('table')).on('option:format', (value: string) => {
    ctx.state.format = value
  })

/** --no-legend, with --no-legacy kept as a hidden alias. */
export const addLegendOptions = (cmd: Command): Command => cmd.option('--no-legend', 'no header line').addOption(new Option('--no-legacy', 'no header line').hideHelp())

/** Collects a repeatable option's values. */
export const collect = (value: string, previous: string[] = []): string[] => [...previous, value]

const durationOptions = new WeakSet<Option>()

/**
 * A non-negative duration in Go's syntax (`90s`, `1h30m`); the action sees
 * milliseconds. Durations are checked once the whole command line is
 * parsed (parseDurations), so that a bad one is reported in the --format
 * given after it.
 */
/** An option's parser for a whole number of at least `min`. */
export const count =
  (flag: string, min: number) =>
  (text: string): number => {
    if (!/^\d+$/.test(text) || Number(text) < min) throw new PodctlError('EUSAGE', `invalid ${flag} ${JSON.stringify(text)}: not a whole number of at least ${min}`)
    return Number(text)
  }

export const durationOption = (flags: string, description: string, defaultText?: string): Option => {
  const o = new Option(flags, description)
  if (defaultText !== undefined) o.default(defaultText)
  durationOptions.add(o)
  return o
}

/** Replaces the text of each duration option of `cmd` by milliseconds; EUSAGE for a bad one. */
export const parseDurations = (cmd: Command): void => {
  for (const o of cmd.options) {
    if (!durationOptions.has(o)) continue
    const key = o.attributeName()
    const value: unknown = cmd.getOptionValue(key)
    if (typeof value === 'string') cmd.setOptionValue(key, parseNonNegativeDuration(value, o.long ?? o.flags))
  }
}

/** What makes a pod on the command line (prepare, run). */
export interface PodInputOptions {
  manifest?: string
  name?: string
  env?: string[]
  uuidFileSave?: string
  /** USER[:GROUP] of a one-app pod made from `-- CMD`. */
  user?: string
}

/** Adds the pod-input options to a command (prepare, run): a manifest, or a command after `--`. */
export const addPodInputOptions = (cmd: Command): Command =>
  cmd
    .addOption(new Option('--manifest <file>', 'pod manifest (podctl/v1 JSON); "-" reads stdin'))
    .option('-n, --name <name>', 'pod name ([a-z0-9][a-z0-9-]{0,62})')
    .option('-e, --env <KEY=VALUE>', 'set an environment variable in every app (repeatable)', collect)
    .option('--uuid-file-save <file>', 'also write the pod UUID to this file')
    .option('--user <user[:group]>', 'with -- CMD: run the app as this user (and group), by name or number (root only)')
    .argument('[command...]', 'after --: the program and arguments of a one-app pod')
