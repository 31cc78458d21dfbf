/**
 * The inputs that make a pod, shared by prepare and run: a manifest file,
 * stdin, or `-- CMD ARGS`, plus --name and --env.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { API_VERSION, NAME_RE, formatProblems, manifestProblems, type App, type PodManifest } from '../pod/manifest.js'
import { checkExecs, execProblems } from '../pod/prepare.js'
import { parsePodManifest, validatePodManifest } from '../volume/manifest.js'
import type { PodInputOptions } from './options.js'

/** An app name derived from a program path: "/usr/bin/Sleep.sh" → "sleep-sh". */
export const appNameFor = (cmd: string): string => {
  const base = path.basename(cmd).toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+/, '').slice(0, 63).replace(/-+$/, '')
  return NAME_RE.test(base) ? base : 'app'
}

const parseEnv = (pairs: string[]): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const p of pairs) {
    const eq = p.indexOf('=')
    const key = eq < 0 ? p : p.slice(0, eq)
    if (eq < 0 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) {
      throw new PodctlError('EUSAGE', `invalid --env ${JSON.stringify(p)}: expected KEY=VALUE with KEY like [A-Za-z_][A-Za-z0-9_]*`)
    }
    env[key] = p.slice(eq + 1)
  }
  return env
}

const readManifestText = (source: string, stdin: () => string): string => {
  if (source === '-') return stdin()
  try {
    return fs.readFileSync(source, 'utf8')
  } catch (er) {
    const code = (er as NodeJS.ErrnoException).code
    throw new PodctlError('EUSAGE', `cannot read manifest ${source}: ${code === 'ENOENT' ? 'no such file' : (er as Error).message}`)
  }
}

/**
 * Builds and validates the manifest the options describe. Throws EUSAGE
 * for anything wrong; touches nothing on disk.
 */
export const manifestFromInputs = (
  opts: PodInputOptions,
  command: string[],
  stdin: () => string = () => fs.readFileSync(0, 'utf8'),
  commandName = 'prepare',
): PodManifest => {
  if (opts.manifest !== undefined && command.length > 0) {
    throw new PodctlError('EUSAGE', 'give either --manifest or a command after --, not both')
  }
  let m: PodManifest
  if (opts.manifest !== undefined) {
    m = parsePodManifest(readManifestText(opts.manifest, stdin))
  } else if (command.length > 0) {
    m = { apiVersion: API_VERSION, apps: [{ name: appNameFor(command[0]!), exec: command }] }
  } else {
    throw new PodctlError('EUSAGE', 'nothing to run: give --manifest FILE (or - for stdin), or a command after --', `for example: podctl ${commandName} -- sleep 60`)
  }
  if (opts.name !== undefined) m = { ...m, name: opts.name }
  if (opts.env && opts.env.length > 0) {
    const env = parseEnv(opts.env)
    m = { ...m, apps: m.apps.map((a) => ({ ...a, env: { ...(a.env ?? {}), ...env } })) }
  }
  validatePodManifest(m)
  checkExecs(m)
  return m
}

/**
 * An app for `app add`: validated as it will stand in the manifest, with
 * its program checked on PATH. Throws EUSAGE naming the bad field.
 */
export const appFromCommand = (name: string, command: string[], envPairs: string[], ephemeral: boolean): App => {
  if (command.length === 0) throw new PodctlError('EUSAGE', 'no command given', 'usage: podctl app add UUID --name NAME -- CMD [ARG...]')
  const app: App = { name, exec: command, ...(ephemeral ? { type: 'ephemeral' as const } : {}) }
  if (envPairs.length > 0) app.env = parseEnv(envPairs)
  const probe: PodManifest = { apiVersion: API_VERSION, mutable: true, apps: [app] }
  const invalid = manifestProblems(probe, { allowEphemeral: true })
  const problems = invalid.length > 0 ? invalid : execProblems(probe)
  if (problems.length > 0) throw new PodctlError('EUSAGE', `invalid app: ${formatProblems(problems).replaceAll('apps[0].', '')}`)
  return app
}
