/**
 * The inputs that make a pod, shared by prepare and run: a manifest file,
 * stdin, `-- CMD ARGS` or `--image`, plus the flags podman users give
 * (--name, --env, --env-file, --volume, --workdir, --hostname, --rm,
 * --network, --publish, --dns, --add-host, …).
 */
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { MAX_MANIFEST_BYTES, readUserFile } from '../fs/read.js'
import { appUserProblems } from '../pod/app-user.js'
import { API_VERSION, NAME_RE, formatProblems, manifestProblems, type App, type ManifestProblem, type Mount, type PodManifest, type Volume } from '../pod/manifest.js'
import { checkAppUsers, checkExecs, execProblems } from '../pod/prepare.js'
import { ISOLATED_ROOT } from '../runtime/generate/root.js'
import { parsePodManifest, podManifestProblems, validatePodManifest } from '../volume/manifest.js'
import { volumeSourceProblems } from '../volume/pod-volumes.js'
import { flagError, flagHint, type PodInputOptions } from './options.js'

/** An app name derived from a program path: "/usr/bin/Sleep.sh" → "sleep-sh". */
export const appNameFor = (cmd: string): string => {
  const base = path.basename(cmd).toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/^-+/, '').slice(0, 63).replace(/-+$/, '')
  return NAME_RE.test(base) ? base : 'app'
}

/** A digest as --image takes it: sha256:HEX, or 12 to 64 of its hex digits. */
const DIGEST_RE = /^(sha256:[0-9a-f]+|[0-9a-f]{12,64})$/

/** An app name from an image name: "registry.example/team/web:1.2" → "web"; "app" for a digest, which names nothing. */
const appNameForImage = (image: string): string => (DIGEST_RE.test(image) ? 'app' : appNameFor(image.replace(/@.*$/, '').replace(/:[^/]*$/, '')))

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
const userOf = (spec: string | undefined, command: string): Pick<App, 'user' | 'group'> => {
  if (spec === undefined) return {}
  const [user, group, ...rest] = spec.split(':')
  if (user === '' || group === '' || rest.length > 0) throw flagError(command, '--user', spec, 'expected USER or USER:GROUP')
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

const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * KEY as podman's `-e KEY` and an env file's bare `KEY` take it: the
 * caller's value, and nothing when the caller has none; `KEY*` is every
 * variable of the caller whose name starts with KEY.
 */
const takeFromCaller = (key: string, env: Map<string, string>): void => {
  if (key.endsWith('*')) {
    const prefix = key.slice(0, -1)
    for (const [k, v] of Object.entries(process.env)) if (k.startsWith(prefix) && ENV_NAME_RE.test(k) && v !== undefined) env.set(k, v)
  } else if (process.env[key] !== undefined) env.set(key, process.env[key]!)
}

/** Whether `key` names a variable, or (with `*` after it) the caller's variables that start with it. */
const envKeyOk = (key: string, bare: boolean): boolean => ENV_NAME_RE.test(bare && key.endsWith('*') ? `${key.slice(0, -1)}_` : key)

/**
 * --env as an environment: KEY=VALUE, or KEY (and KEY*) from podctl's own
 * environment, as podman's -e. Built in a Map: on a plain object, a key
 * such as `__proto__` would set the prototype instead of a variable.
 */
const parseEnv = (pairs: string[], command: string, env = new Map<string, string>()): Map<string, string> => {
  for (const p of pairs) {
    const eq = p.indexOf('=')
    const key = eq < 0 ? p : p.slice(0, eq)
    if (!envKeyOk(key, eq < 0)) throw flagError(command, '--env', p, 'expected KEY=VALUE, or KEY for its value in podctl\'s environment, with KEY like [A-Za-z_][A-Za-z0-9_]*')
    if (eq < 0) takeFromCaller(key, env)
    else env.set(key, p.slice(eq + 1))
  }
  return env
}

/**
 * The variables of --env-file files, in order, as podman reads them: one
 * KEY=VALUE a line (the value as written, quotes and spaces included),
 * blank lines and lines starting with # skipped, leading spaces dropped,
 * and a bare KEY (or KEY*) taken from podctl's environment.
 */
const readEnvFiles = (files: string[], command: string): Map<string, string> => {
  const env = new Map<string, string>()
  for (const file of files) {
    const lines = readUserFile(file, MAX_MANIFEST_BYTES, 'env file').toString('utf8').split('\n')
    lines.forEach((raw, i) => {
      const line = raw.replace(/\r$/, '').replace(/^\s+/, '')
      if (line === '' || line.startsWith('#')) return
      const eq = line.indexOf('=')
      const key = eq < 0 ? line.trimEnd() : line.slice(0, eq)
      if (!envKeyOk(key, eq < 0)) {
        throw new PodctlError('EUSAGE', `invalid --env-file ${file}: line ${i + 1}: ${JSON.stringify(key)} is not a variable name ([A-Za-z_][A-Za-z0-9_]*)`, 'each line is KEY=VALUE, or KEY for its value in podctl\'s environment; # starts a comment')
      }
      if (eq < 0) takeFromCaller(key, env)
      else env.set(key, line.slice(eq + 1))
    })
  }
  return env
}

/**
 * The volumes of podman's -v: HOST:CTR[:OPTIONS] (a host path, absolute
 * or starting with "."), NAME:CTR[:OPTIONS] (a persistent volume or claim)
 * or CTR alone (an empty volume); OPTIONS ro or rw, and z or Z, which
 * relabel for SELinux in podman and do nothing here.
 */
const volumesOf = (specs: string[], command: string): Pick<PodManifest, 'volumes'> & { mounts: Mount[] } => {
  const volumes: Volume[] = []
  const mounts: Mount[] = []
  specs.forEach((spec, i) => {
    const bad = (takes: string): PodctlError => flagError(command, '--volume', spec, takes)
    const parts = spec.split(':')
    if (parts.length > 3 || parts.some((x) => x === '')) throw bad('expected HOST:CTR[:ro|rw], NAME:CTR[:ro|rw] or CTR')
    const [source, target, options] = parts.length === 1 ? [undefined, parts[0]!, undefined] : parts
    if (!target!.startsWith('/')) throw bad(`the path in the pod, ${JSON.stringify(target)}, must be absolute`)
    let readOnly: boolean | undefined
    for (const o of options?.split(',') ?? []) {
      if (o === 'ro' || o === 'rw') {
        if (readOnly !== undefined) throw bad('give ro or rw once')
        readOnly = o === 'ro'
      } else if (o !== 'z' && o !== 'Z') throw bad(`${JSON.stringify(o)} is not an option podctl takes (ro, rw; z and Z are taken and do nothing)`)
    }
    const name = `volume-${i}`
    if (source === undefined) volumes.push({ name, kind: 'empty' })
    else if (source.startsWith('/') || source.startsWith('.')) volumes.push({ name, kind: 'host', source: path.resolve(source) })
    else if (NAME_RE.test(source)) volumes.push({ name, kind: 'persistent', claim: source })
    else throw bad(`${JSON.stringify(source)} is neither a host path (absolute, or starting with ".") nor the name of a persistent volume`)
    mounts.push({ volume: name, path: target!, ...(readOnly ? { readOnly } : {}) })
  })
  return { ...(volumes.length > 0 ? { volumes } : {}), mounts }
}

/**
 * The network fields of --network, -p, --dns, --dns-search, --dns-option
 * and --add-host: one network is "network", several are "networks".
 */
const networkFieldsOf = (opts: PodInputOptions): Partial<PodManifest> => {
  const n = opts.network
  return {
    ...(n === undefined ? {} : n.length === 1 ? { network: n[0]! } : { networks: n }),
    ...(opts.publish !== undefined ? { ports: opts.publish.map((p) => ({ hostPort: p.hostPort, containerPort: p.containerPort, protocol: p.protocol, ...(p.hostIP !== '' ? { hostIP: p.hostIP } : {}) })) } : {}),
    ...(opts.dns !== undefined ? { dns: opts.dns } : {}),
    ...(opts.dnsSearch !== undefined ? { dnsSearch: opts.dnsSearch } : {}),
    ...(opts.dnsOption !== undefined ? { dnsOptions: opts.dnsOption } : {}),
    ...(opts.addHost !== undefined ? { addHosts: opts.addHost } : {}),
  }
}

/** Which flag (or what) made each field of a manifest built from the command line, for its problems. */
const FLAG_OF: readonly (readonly [RegExp, string])[] = [
  [/^name\b/, '--name'],
  [/^hostname\b/, '--hostname'],
  [/^isolation\b/, '--isolation'],
  [/^networks?\b/, '--network'],
  [/^ports\b/, '--publish'],
  [/^dns\b/, '--dns'],
  [/^dnsSearch\b/, '--dns-search'],
  [/^dnsOptions\b/, '--dns-option'],
  [/^addHosts\b/, '--add-host'],
  [/^userns\b/, '--userns'],
  [/^resources\.memory\b/, '--memory'],
  [/^resources\.cpu\b/, '--cpus'],
  [/^resources\.pids\b/, '--pids-limit'],
  [/^apps\[0\]\.image\b/, '--image'],
  [/^apps\[0\]\.entrypoint\b/, '--entrypoint'],
  [/^apps\[0\]\.env\b/, '--env'],
  [/^apps\[0\]\.(user|group)\b/, '--user'],
  [/^apps\[0\]\.workingDirectory\b/, '--workdir'],
  [/^apps\[0\]\.tty\b/, '-t'],
  [/^apps\[0\]\.readOnlyRootFilesystem\b/, '--read-only'],
  [/^apps\[0\]\.capabilities\.add\b/, '--cap-add'],
  [/^apps\[0\]\.capabilities\.drop\b/, '--cap-drop'],
  [/^apps\[0\]\.stdin\b/, '-i'],
  [/^(apps\[0\]\.mounts|volumes)\b/, '--volume'],
  [/^apps\[0\](\.exec\b|$)/, 'command after --'],
]

/** The flags that make the pod's "resources", as given. */
const resourceFlags = (opts: PodInputOptions): string[] =>
  [opts.memory !== undefined && '--memory', opts.cpus !== undefined && '--cpus', opts.pidsLimit !== undefined && '--pids-limit'].filter((f): f is string => f !== false)

/** The flags that make the app's "capabilities", as given. */
const capabilityFlags = (opts: PodInputOptions): string[] => [opts.capAdd !== undefined && '--cap-add', opts.capDrop !== undefined && '--cap-drop'].filter((f): f is string => f !== false)

/**
 * The problems of a manifest that flags made, said in the flags' words:
 * `invalid --workdir: "tmp" must be an absolute path`, `--memory needs
 * --isolation namespaces`, not the manifest's fields. EUSAGE with a hint
 * for the first.
 */
const flagProblemsError = (problems: ManifestProblem[], opts: PodInputOptions, command: string): PodctlError => {
  let hint = flagHint(command)
  const said = problems.map((p, i) => {
    const limits = p.path === 'resources' ? resourceFlags(opts) : p.path === 'apps[0].capabilities' ? capabilityFlags(opts) : []
    const flag = limits.length > 0 ? limits.join(', ').replace(/, ([^,]*)$/, ' and $1') : (FLAG_OF.find(([re]) => re.test(p.path))?.[1] ?? p.path)
    const needs = /needs "isolation": "namespaces"/.test(p.problem)
    const ownNetwork = /^needs a network of the pod's own/.test(p.problem)
    if (i === 0 && needs) hint = 'add --isolation namespaces, or run an image (--image)'
    if (i === 0 && ownNetwork) hint = 'leave --network out for the default network (bridge), or name one: --network NAME'
    if (i === 0 && flag === 'command after --' && p.path.endsWith('exec[0]')) hint = 'give an absolute path or a program on PATH'
    if (i === 0 && flag === '--user' && /^no (user|group) named|another user/.test(p.problem)) hint = 'name a user and group of this host (getent passwd, getent group); only root runs apps as another user'
    if (ownNetwork) return `${flag} needs a network of the pod's own, not --network ${opts.network?.join(',') ?? ''}`
    if (needs) {
      const who = p.path === 'network' || p.path === 'networks' ? `--network ${opts.network?.join(',') ?? ''}` : p.path === 'userns' ? '--userns private' : flag
      return `${who} ${limits.length > 1 ? 'need' : 'needs'} --isolation namespaces (${p.problem.replace(/^.*?\((.*)\)$/, '$1')})`
    }
    return `invalid ${flag}: ${p.problem}`
  })
  return new PodctlError('EUSAGE', said.join('; '), hint)
}

/** The pod-wide flags that a manifest says itself: refused beside --manifest, naming the field. */
const MANIFEST_SAYS = [
  ['isolation', 'isolation', 'the pod its "isolation"'],
  ['network', 'network', 'the pod its "network" (or "networks")'],
  ['publish', 'publish', 'the pod its "ports"'],
  ['dns', 'dns', 'the pod its "dns"'],
  ['dnsSearch', 'dns-search', 'the pod its "dnsSearch"'],
  ['dnsOption', 'dns-option', 'the pod its "dnsOptions"'],
  ['addHost', 'add-host', 'the pod its "addHosts"'],
  ['userns', 'userns', 'the pod its "userns"'],
  ['memory', 'memory', 'the pod its "resources": {"memory": …}'],
  ['cpus', 'cpus', 'the pod its "resources": {"cpu": …}'],
  ['pidsLimit', 'pids-limit', 'the pod its "resources": {"pids": …}'],
  ['entrypoint', 'entrypoint', 'apps their "entrypoint"'],
  ['user', 'user', 'each app its "user" and "group"'],
  ['workdir', 'workdir', 'each app its "workingDirectory"'],
  ['interactive', 'interactive', 'each app its "stdin"'],
  ['tty', 'tty', 'each app its "tty"'],
  ['readOnly', 'read-only', 'each app its "readOnlyRootFilesystem"'],
  ['capAdd', 'cap-add', 'each app its "capabilities": {"add": […]}'],
  ['capDrop', 'cap-drop', 'each app its "capabilities": {"drop": […]}'],
  ['volume', 'volume', 'the pod its "volumes" and each app its "mounts"'],
] as const

/**
 * Builds and validates the manifest the options describe. Throws EUSAGE
 * for anything wrong, naming the flag when flags made it. Touches nothing
 * on disk but the files the options name; with `dataDir`, a host path of
 * --volume must exist and a persistent volume it names must be there.
 */
export const manifestFromInputs = (opts: PodInputOptions, command: string[], commandName = 'prepare', dataDir?: string): PodManifest => {
  if (opts.manifest !== undefined && command.length > 0) {
    throw new PodctlError('EUSAGE', 'give either --manifest or a command after --, not both')
  }
  if (opts.manifest !== undefined && opts.image !== undefined) {
    throw new PodctlError('EUSAGE', 'give either --manifest or --image, not both', 'in a manifest, give apps their "image"')
  }
  for (const [key, flag, field] of MANIFEST_SAYS) {
    if (opts.manifest !== undefined && opts[key] !== undefined) {
      throw new PodctlError('EUSAGE', `--${flag} is for a pod made from a command after -- or from --image`, `in a manifest, give ${field}`)
    }
  }
  if (opts.entrypoint !== undefined && opts.image === undefined) throw new PodctlError('EUSAGE', '--entrypoint is for a pod made from an image', 'give the image: --image NAME --entrypoint CMD')
  const fromFlags = opts.manifest === undefined
  const { mounts, ...volumes } = volumesOf(opts.volume ?? [], commandName)
  const podFields = (): Omit<PodManifest, 'apps'> => ({
    apiVersion: API_VERSION,
    ...(opts.isolation !== undefined ? { isolation: opts.isolation } : {}),
    ...networkFieldsOf(opts),
    ...(opts.userns !== undefined ? { userns: opts.userns } : {}),
    ...resourcesOf(opts),
    ...volumes,
  })
  const appFields = {
    ...(opts.workdir !== undefined ? { workingDirectory: opts.workdir } : {}),
    ...(opts.interactive ? { stdin: true } : {}),
    ...(opts.tty ? { tty: true } : {}),
    ...(opts.readOnly ? { readOnlyRootFilesystem: true } : {}),
    ...(opts.capAdd !== undefined || opts.capDrop !== undefined ? { capabilities: { ...(opts.capAdd ? { add: opts.capAdd } : {}), ...(opts.capDrop ? { drop: opts.capDrop } : {}) } } : {}),
    ...(mounts.length > 0 ? { mounts } : {}),
    ...userOf(opts.user, commandName),
  }
  let m: PodManifest
  if (opts.image !== undefined) {
    m = {
      ...podFields(),
      apps: [
        {
          name: appNameForImage(opts.image),
          image: opts.image,
          ...(opts.entrypoint !== undefined ? { entrypoint: entrypointOf(opts.entrypoint) } : {}),
          ...(command.length > 0 ? { exec: command } : {}),
          ...appFields,
        } as App,
      ],
    }
  } else if (opts.manifest !== undefined) {
    m = parsePodManifest(readUserFile(opts.manifest, MAX_MANIFEST_BYTES, 'manifest').toString('utf8'))
  } else if (command.length > 0) {
    m = { ...podFields(), apps: [{ name: appNameFor(command[0]!), exec: command, ...appFields }] }
  } else {
    throw new PodctlError('EUSAGE', 'nothing to run: give --manifest FILE (or - for stdin), a command after --, or --image IMAGE', `for example: podctl ${commandName} -- sleep 60`)
  }
  if (opts.name !== undefined) m = { ...m, name: opts.name }
  if (opts.hostname !== undefined) m = { ...m, hostname: opts.hostname }
  if (opts.rm) m = { ...m, autoRemove: true }
  if (opts.httpProxy === false) m = { ...m, httpProxy: false }
  // podman's order: the env files, then --env over them.
  const env = parseEnv(opts.env ?? [], commandName, readEnvFiles(opts.envFile ?? [], commandName))
  if (env.size > 0) m = { ...m, apps: m.apps.map((a) => ({ ...a, env: { ...(a.env ?? {}), ...Object.fromEntries(env) } })) }
  if (!fromFlags) {
    validatePodManifest(m)
    checkExecs(m, undefined, ISOLATED_ROOT)
    checkAppUsers(m)
    return m
  }
  const problems = podManifestProblems(m)
  if (problems.length === 0) problems.push(...execProblems(m, undefined, ISOLATED_ROOT), ...appUserProblems(m), ...(dataDir !== undefined ? volumeSourceProblems(dataDir, m) : []))
  if (problems.length > 0) throw flagProblemsError(problems, opts, commandName)
  return m
}

/**
 * An app for `app add`: validated as it will stand in the manifest, with
 * its program checked on PATH. Throws EUSAGE naming the bad field.
 */
export const appFromCommand = (name: string, command: string[], envPairs: string[], ephemeral: boolean): App => {
  if (command.length === 0) throw new PodctlError('EUSAGE', 'no command given', 'usage: podctl app add UUID --name NAME -- CMD [ARG...]')
  const app: App = { name, exec: command, ...(ephemeral ? { type: 'ephemeral' as const } : {}) }
  if (envPairs.length > 0) app.env = Object.fromEntries(parseEnv(envPairs, 'app'))
  const probe: PodManifest = { apiVersion: API_VERSION, mutable: true, apps: [app] }
  const invalid = manifestProblems(probe, { allowEphemeral: true })
  const problems = invalid.length > 0 ? invalid : execProblems(probe)
  if (problems.length > 0) throw new PodctlError('EUSAGE', `invalid app: ${formatProblems(problems).replaceAll('apps[0].', '')}`)
  return app
}
