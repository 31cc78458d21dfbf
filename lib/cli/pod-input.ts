/**
 * The inputs that make a pod, shared by prepare and run: a manifest file,
 * stdin, or `-- CMD ARGS`, plus --name and --env.
 */
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { MAX_MANIFEST_BYTES, readUserFile } from '../fs/read.js'
import { API_VERSION, NAME_RE, formatProblems, manifestProblems, type App, type PodManifest } from '../pod/manifest.js'
import { checkAppUsers, checkExecs, execProblems } from '../pod/prepare.js'
import { ISOLATED_ROOT } from '../runtime/generate/root.js'
import { parsePodManifest, validatePodManifest } from '../volume/manifest.js'
import type { PodInputOptions } from './options.js'

/** An app name derived from a program path: "/usr/bin/Sleep.sh" → "sleep-sh". */
export const appNameFor = (cmd: string): string => {
  const base = path.basename(cmd).toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+/, '').slice(0, 63).replace(/-+$/, '')
  return NAME_RE.test(base) ? base : 'app'
}

/** An app name from an image name: "registry.example/team/web:1.2" → "web". */
const appNameForImage = (image: string): string => (image.startsWith('sha256:') ? 'app' : appNameFor(image.replace(/@.*$/, '').replace(/:[^/]*$/, '')))

/**
 * --entrypoint as podman reads it: a JSON array of strings is the program
 * and its arguments (`'["/bin/sh","-c"]'`), anything else one program.
 */
const entrypointOf = (spec: string): string[] => {
  if (spec.startsWith('[')) {
    try {
      const v: unknown = JSON.parse(spec)
      if (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string')) return v as string[]
    } catch {
      // not JSON: a program whose name starts with [
    }
  }
  return [spec]
}

/** The app fields of --user USER[:GROUP]. */
const userOf = (spec: string | undefined): Pick<App, 'user' | 'group'> => {
  if (spec === undefined) return {}
  const [user, group, ...rest] = spec.split(':')
  if (user === '' || group === '' || rest.length > 0) throw new PodctlError('EUSAGE', `invalid --user ${JSON.stringify(spec)}: expected USER or USER:GROUP`)
  return { user: user!, ...(group !== undefined ? { group } : {}) }
}

/** The pod's limits from --memory, --cpus and --pids-limit, as the manifest's top-level "resources". */
const resourcesOf = (opts: PodInputOptions): Pick<PodManifest, 'resources'> => {
  const r = {
    ...(opts.memory !== undefined ? { memory: opts.memory } : {}),
    ...(opts.cpus !== undefined ? { cpu: opts.cpus } : {}),
    ...(opts.pidsLimit !== undefined ? { pids: opts.pidsLimit } : {}),
  }
  return Object.keys(r).length > 0 ? { resources: r } : {}
}

/**
 * --env pairs as an environment. Built from a Map: on a plain object, a
 * key such as `__proto__` would set the prototype instead of a variable.
 */
const parseEnv = (pairs: string[]): Record<string, string> => {
  const env = new Map<string, string>()
  for (const p of pairs) {
    const eq = p.indexOf('=')
    const key = eq < 0 ? p : p.slice(0, eq)
    if (eq < 0 || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) {
      throw new PodctlError('EUSAGE', `invalid --env ${JSON.stringify(p)}: expected KEY=VALUE with KEY like [A-Za-z_][A-Za-z0-9_]*`)
    }
    env.set(key, p.slice(eq + 1))
  }
  return Object.fromEntries(env)
}


/**
 * Builds and validates the manifest the options describe. Throws EUSAGE
 * for anything wrong; touches nothing on disk.
 */
export const manifestFromInputs = (
  opts: PodInputOptions,
  command: string[],
  commandName = 'prepare',
): PodManifest => {
  if (opts.manifest !== undefined && command.length > 0) {
    throw new PodctlError('EUSAGE', 'give either --manifest or a command after --, not both')
  }
  if (opts.manifest !== undefined && opts.user !== undefined) {
    throw new PodctlError('EUSAGE', '--user is for a pod made from a command after --', 'in a manifest, give each app its "user" and "group"')
  }
  const podFlags = [
    ['isolation', 'isolation', '"isolation"'],
    ['network', 'network', '"network"'],
    ['userns', 'userns', '"userns"'],
    ['memory', 'memory', '"resources": {"memory": …}'],
    ['cpus', 'cpus', '"resources": {"cpu": …}'],
    ['pidsLimit', 'pids-limit', '"resources": {"pids": …}'],
    ['image', 'image', 'apps their "image"'],
    ['entrypoint', 'entrypoint', 'apps their "entrypoint"'],
  ] as const
  for (const [key, flag, field] of podFlags) {
    if (opts.manifest !== undefined && opts[key] !== undefined) {
      throw new PodctlError('EUSAGE', `--${flag} is for a pod made from a command after --`, `in a manifest, give the pod its ${field}`)
    }
  }
  if (opts.entrypoint !== undefined && opts.image === undefined) throw new PodctlError('EUSAGE', '--entrypoint is for a pod made from an image', 'give the image: --image NAME --entrypoint CMD')
  let m: PodManifest
  if (opts.manifest === undefined && opts.image !== undefined) {
    m = {
      apiVersion: API_VERSION,
      ...(opts.isolation !== undefined ? { isolation: opts.isolation } : {}),
      ...(opts.network !== undefined ? { network: opts.network } : {}),
      ...(opts.userns !== undefined ? { userns: opts.userns } : {}),
      ...resourcesOf(opts),
      apps: [
        {
          name: appNameForImage(opts.image),
          image: opts.image,
          ...(opts.entrypoint !== undefined ? { entrypoint: entrypointOf(opts.entrypoint) } : {}),
          ...(command.length > 0 ? { exec: command } : {}),
          ...userOf(opts.user),
        } as App,
      ],
    }
  } else if (opts.manifest !== undefined) {
    m = parsePodManifest(readUserFile(opts.manifest, MAX_MANIFEST_BYTES, 'manifest').toString('utf8'))
  } else if (command.length > 0) {
    m = {
      apiVersion: API_VERSION,
      ...(opts.isolation !== undefined ? { isolation: opts.isolation } : {}),
      ...(opts.network !== undefined ? { network: opts.network } : {}),
      ...(opts.userns !== undefined ? { userns: opts.userns } : {}),
      ...resourcesOf(opts),
      apps: [{ name: appNameFor(command[0]!), exec: command, ...userOf(opts.user) }],
    }
  } else {
    throw new PodctlError('EUSAGE', 'nothing to run: give --manifest FILE (or - for stdin), or a command after --', `for example: podctl ${commandName} -- sleep 60`)
  }
  if (opts.name !== undefined) m = { ...m, name: opts.name }
  if (opts.env && opts.env.length > 0) {
    const env = parseEnv(opts.env)
    m = { ...m, apps: m.apps.map((a) => ({ ...a, env: { ...(a.env ?? {}), ...env } })) }
  }
  validatePodManifest(m)
  checkExecs(m, undefined, ISOLATED_ROOT)
  checkAppUsers(m)
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
