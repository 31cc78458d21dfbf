/**
 * The options that make a pod, shared by prepare and run (and nothing
 * heavier: this is loaded at start-up).
 */
import { Option, type Command } from 'commander'

export interface PodInputOptions {
  manifest?: string
  name?: string
  env?: string[]
  uuidFileSave?: string
}

const collect = (v: string, prev: string[] = []): string[] => [...prev, v]

/** Adds the pod-input options to a command (prepare, run). */
export const addPodInputOptions = (cmd: Command): Command =>
  cmd
    .addOption(new Option('--manifest <file>', 'pod manifest (podctl/v1 JSON); "-" reads stdin'))
    .option('--name <name>', 'pod name ([a-z0-9][a-z0-9-]{0,62})')
    .option('--env <KEY=VALUE>', 'set an environment variable in every app (repeatable)', collect)
    .option('--uuid-file-save <file>', 'also write the pod UUID to this file')
    .argument('[command...]', 'after --: the program and arguments of a one-app pod')
