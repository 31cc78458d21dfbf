/**
 * The options that several commands share, defined once: the global flags,
 * --format, durations, repeatable values and the data dir. Every command
 * line is parsed by commander alone (lib/cli/program.ts).
 */
import { Option, type Command } from 'commander'
import os from 'node:os'
import path from 'node:path'
import type { ClusterOptions } from '../cluster/client.js'
import type { FleetRef } from '../storage/pod-claims.js'
import { PodctlError } from '../errors.js'
import { sizeBytes } from '../bytes.js'
import { digestPrefixOf, tryParseName } from '../image/reference.js'
import { HOSTNAME_RE, MIN_CPU, MIN_MEMORY_BYTES, MIN_PIDS, NAME_RE, NETWORK_NAME_RE, cpuCores } from '../pod/manifest.js'
import { isDnsOption, isIpAddress, isSearchDomain, parseAddHost, parsePublish, type PublishedPort } from '../pod/network-rules.js'
import { parseNonNegativeDuration } from '../duration.js'
import { checkDataDirTrust, checkLayout, resolveDataDir } from '../pod/layout.js'
// Loaded for the directories of the data dir they register with
// lib/pod/layout.ts, which dataDirOf checks before every command, whatever
// its action's bundle loads.
import '../image/layout.js'
import '../network/layout.js'
import '../storage/local/layout.js'
import type { Context } from './context.js'

/** Output formats of every command that prints data. */
export const FORMATS = ['table', 'json', 'json-pretty'] as const

/**
 * The global options (--dir, --debug, …): the program's, and a hidden copy
 * on every command below it, so that they are taken before or after the
 * command word (not after `--`). The program parses its own options only
 * before the command word (enablePositionalOptions, lib/cli/program.ts),
 * as podman does, so that a command may give a short flag a meaning of
 * its own: `podctl -v` is the version, `podctl run -v` a volume.
 */
export const addGlobalOptions = (cmd: Command, ctx: Context, hidden = false): Command => {
  const add = (o: Option): void => void cmd.addOption(hidden ? o.hideHelp() : o)
  add(new Option('--dir <path>', 'data dir (default: $PODCTL_DIR, /var/lib/podctl as root, else $XDG_DATA_HOME/podctl)'))
  add(new Option('--debug', 'show stack traces and timings on stderr'))
  cmd.on('option:debug', () => {
    ctx.state.debug = true
  })
  add(new Option('--runtime <name|path>', 'OCI runtime of isolated pods (default: $PODCTL_RUNTIME, else crun or runc, the first that works here)'))
  add(new Option('--cluster <urls>', 'etcd endpoints of the fleet, comma-separated (default: $PODCTL_CLUSTER); see fleet.md'))
  add(new Option('--no-cluster', 'this node alone, even with $PODCTL_CLUSTER set (its own pods and volumes when etcd is away)'))
  add(new Option('--node <name>', 'this node\'s name in the fleet (default: $PODCTL_NODE, the hostname)'))
  // Rarely changed, so out of every command's help; fleet.md and commands.md list them.
  add(new Option('--cluster-prefix <prefix>', 'the prefix of podctl\'s keys in etcd (default: /podctl/)').hideHelp())
  add(new Option('--cluster-cacert <file>', 'CA certificate of the etcd members (TLS)').hideHelp())
  add(new Option('--cluster-cert <file>', 'client certificate for etcd (TLS)').hideHelp())
  add(new Option('--cluster-key <file>', 'client key for etcd (TLS)').hideHelp())
  return cmd
}

/** Gives `cmd` and every command below it the hidden global options it lacks. */
export const addGlobalOptionsBelow = (cmd: Command, ctx: Context): void => {
  if (!cmd.options.some((o) => o.long === '--dir')) addGlobalOptions(cmd, ctx, true)
  for (const sub of cmd.commands) addGlobalOptionsBelow(sub, ctx)
}

interface ClusterGlobals {
  /** false: --no-cluster. */
  cluster?: string | false
  node?: string
  clusterPrefix?: string
  clusterCacert?: string
  clusterCert?: string
  clusterKey?: string
}

/**
 * The fleet a command names (`--cluster`, or $PODCTL_CLUSTER), or
 * undefined: then nothing touches the network.
 */
export const clusterOf = (cmd: Command): ClusterOptions | undefined => {
  const g = cmd.optsWithGlobals() as ClusterGlobals
  if (g.cluster === false) return undefined
  const urls = g.cluster ?? process.env.PODCTL_CLUSTER
  if (urls === undefined || urls === '') {
    if (g.cluster === '') throw new PodctlError('EUSAGE', '--cluster is empty', 'give the etcd endpoints: --cluster http://127.0.0.1:2379')
    return undefined
  }
  const endpoints = urls.split(',').map((u) => u.trim())
  for (const e of endpoints) {
    if (!/^https?:\/\/[^/\s]+\/?$/.test(e)) throw new PodctlError('EUSAGE', `invalid --cluster endpoint ${JSON.stringify(e)}: expected http://HOST:PORT or https://HOST:PORT`)
  }
  const given = g.clusterPrefix ?? '/podctl/'
  const prefix = given.endsWith('/') ? given : `${given}/`
  if (!prefix.startsWith('/')) throw new PodctlError('EUSAGE', `invalid --cluster-prefix ${JSON.stringify(given)}: it must start with "/"`)
  return {
    endpoints,
    prefix,
    ...(g.clusterCacert === undefined ? {} : { caCert: g.clusterCacert }),
    ...(g.clusterCert === undefined ? {} : { cert: g.clusterCert }),
    ...(g.clusterKey === undefined ? {} : { key: g.clusterKey }),
    ...(process.env.PODCTL_CLUSTER_USER ? { user: process.env.PODCTL_CLUSTER_USER, password: process.env.PODCTL_CLUSTER_PASSWORD ?? '' } : {}),
  }
}

/** The fleet and this node's name in it, when the command names a fleet (`--cluster`). */
export const fleetOf = (cmd: Command): FleetRef | undefined => {
  const cluster = clusterOf(cmd)
  return cluster ? { cluster, node: nodeOf(cmd) } : undefined
}

/** This node's name in the fleet: --node, $PODCTL_NODE, or the hostname. */
export const nodeOf = (cmd: Command): string => {
  const name = (cmd.optsWithGlobals() as ClusterGlobals).node ?? process.env.PODCTL_NODE ?? os.hostname()
  if (!NAME_RE.test(name)) throw new PodctlError('EUSAGE', `invalid node name ${JSON.stringify(name)}: 1 to 63 characters of a-z, 0-9 and "-", starting with a letter or digit`, 'name it with --node NAME')
  return name
}

/** The OCI runtime a command names for the isolated pods it makes (--runtime), or undefined for the default. */
export const runtimeOf = (cmd: Command): string | undefined => {
  const r = (cmd.optsWithGlobals() as { runtime?: string }).runtime
  if (r === '') throw new PodctlError('EUSAGE', '--runtime is empty', 'name a runtime (runc, crun) or give its path, or leave --runtime out')
  return r
}

/**
 * The data dir a command works on (CONTRACT §1 resolution order), checked
 * (CONTRACT §10): its layout for every command; for a command that writes
 * or deletes, also that nobody else can change it.
 */
export const dataDirOf = (cmd: Command, access: 'read' | 'write'): string => {
  const dir = (cmd.optsWithGlobals() as { dir?: string }).dir
  // Only a caller in this process can hand over such a value: no exec'd argument holds a NUL.
  if (dir?.includes('\0')) throw new PodctlError('EUSAGE', `invalid --dir ${JSON.stringify(dir)}: a path has no NUL character`)
  const dataDir = resolveDataDir(dir)
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

/**
 * --provisioners-dir, on the commands that call exec provisioners (the
 * controller, and those that provision or reclaim inline): where this
 * node's `exec:NAME` programs are. The action sees an absolute path.
 */
export const provisionersDirOption = (): Option =>
  new Option('--provisioners-dir <dir>', 'where this node\'s exec:NAME provisioners are: the program DIR/NAME (default /etc/podctl/provisioners)').argParser((dir: string) => {
    if (dir === '') throw new PodctlError('EUSAGE', '--provisioners-dir must not be empty')
    return path.resolve(dir)
  })

/** Collects a repeatable option's values. */
export const collect = (value: string, previous: string[] = []): string[] => [...previous, value]

/** A repeatable flag whose values may be lists too (podman's --cap-add NET_ADMIN,SYS_TIME). */
export const collectList = (value: string, previous: string[] = []): string[] => [...previous, ...value.split(',').filter((v) => v !== '')]

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
  /** KEY=VALUE, KEY (the caller's value) or KEY* (the caller's variables that start with KEY). */
  env?: string[]
  /** Files of KEY=VALUE lines (--env-file). */
  envFile?: string[]
  uuidFileSave?: string
  /** USER[:GROUP] of a one-app pod made from `-- CMD`. */
  user?: string
  /** CONTRACT §9, for a pod made from `-- CMD`. */
  isolation?: 'host' | 'namespaces'
  /** CONTRACT §14: host, none, or the networks to join (--network a,b, or --network given again). */
  network?: string[]
  /** -p/--publish, each value parsed (a range is several). */
  publish?: PublishedPort[]
  dns?: string[]
  dnsSearch?: string[]
  dnsOption?: string[]
  /** NAME:IP. */
  addHost?: string[]
  /** CONTRACT §12, for a pod made from `-- CMD`. */
  userns?: 'host' | 'private'
  memory?: string
  cpus?: string
  pidsLimit?: number
  /** The global --runtime, for the isolated pod this makes. */
  runtime?: string
  /** CONTRACT §13: a one-app pod from this image (the command after -- replaces its Cmd). */
  image?: string
  entrypoint?: string
  /** HOST:CTR[:OPTIONS], NAME:CTR[:OPTIONS] or CTR (podman's -v). */
  volume?: string[]
  /** The app's working directory (-w). */
  workdir?: string
  hostname?: string
  /** The pod is removed once it has exited. */
  rm?: boolean
  /** false: the caller's proxy variables do not pass to the apps. */
  httpProxy?: boolean
  /** The app reads podctl's standard input (-i), runs on its terminal (-t): in a foreground run. */
  interactive?: boolean
  tty?: boolean
  /** podman's --read-only: the app's root is read-only (readOnlyRootFilesystem). */
  readOnly?: boolean
  /** podman's --cap-add and --cap-drop: capability names, each flag repeatable and comma-separated. */
  capAdd?: string[]
  capDrop?: string[]
}

/**
 * A refused value of a flag of `command`: names the flag and what it
 * takes, and where the command's flags are described.
 */
export const flagError = (command: string, flag: string, value: string, takes: string): PodctlError =>
  new PodctlError('EUSAGE', `invalid ${flag} ${JSON.stringify(value)}: ${takes}`, flagHint(command))

/** Where a command's flags are described. */
export const flagHint = (command: string): string => `see podctl ${command} --help, or Documentation/subcommands/${command}.md`

/** The value parsers of the flags that say a pod's limits and image: each checks its value as the manifest would, and says what the flag takes. */
const podFlagParsers = (command: string) => ({
  memory: (v: string): string => {
    const bytes = sizeBytes(v)
    if (bytes === undefined) throw flagError(command, '--memory', v, 'expected a size such as 64m or 1g (k, m, g: 1024, 1024², 1024³ bytes)')
    if (bytes < MIN_MEMORY_BYTES) throw flagError(command, '--memory', v, 'the smallest memory limit is 6m')
    return v
  },
  cpus: (v: string): string => {
    const cores = cpuCores(v)
    if (cores === undefined) throw flagError(command, '--cpus', v, 'expected a number of cores such as 0.5 or 2')
    if (cores < MIN_CPU) throw flagError(command, '--cpus', v, `the smallest share is ${MIN_CPU} of a core`)
    return v
  },
  pidsLimit: (v: string): number => {
    if (!/^\d+$/.test(v) || (Number(v) !== 0 && Number(v) < MIN_PIDS)) {
      throw flagError(command, '--pids-limit', v, `expected a whole number of at least ${MIN_PIDS} (the runtime needs a few processes of its own to start an app), or 0 for no limit`)
    }
    return Number(v)
  },
  image: (v: string): string => {
    if (tryParseName(v) === undefined && digestPrefixOf(v) === undefined) {
      throw flagError(command, '--image', v, 'expected an image name, NAME[:TAG] in lower case (alpine, alpine:3.19, registry.example.com/team/app:v2), or a digest (sha256:…, or 12 or more of its hex digits)')
    }
    return v
  },
  name: (v: string): string => {
    if (!NAME_RE.test(v)) throw flagError(command, '--name', v, 'expected 1 to 63 characters of a-z, 0-9 and "-", starting with a letter or digit')
    return v
  },
  hostname: (v: string): string => {
    if (!HOSTNAME_RE.test(v)) throw flagError(command, '--hostname', v, 'expected a hostname: at most 64 characters, letters, digits and "-" in labels joined by "."')
    return v
  },
  network: (v: string, previous: string[] = []): string[] => {
    const names = [...previous, ...v.split(',')]
    for (const [i, n] of names.entries()) {
      if (!NETWORK_NAME_RE.test(n)) throw flagError(command, '--network', v, 'expected host, none, bridge or the name of a network (letters, digits, "_", "." and "-"), or networks to join, joined by ","')
      if (names.indexOf(n) !== i) throw flagError(command, '--network', v, `${n} is named twice`)
    }
    // podman's rule: several networks are joined on the bridge; host and none are modes of their own.
    const mode = names.find((n) => n === 'host' || n === 'none')
    if (mode !== undefined && names.length > 1) throw flagError(command, '--network', v, `${mode} is a mode of its own: give --network ${mode} alone, or only networks to join (bridge, NAME)`)
    return names
  },
  publish: (v: string, previous: PublishedPort[] = []): PublishedPort[] => [...previous, ...parsePublish(v, '--publish', flagHint(command))],
  dns: (v: string, previous: string[] = []): string[] => {
    if (!isIpAddress(v)) throw flagError(command, '--dns', v, 'expected the IP address of a name server (1.1.1.1, 2606:4700::1111)')
    return [...previous, v]
  },
  dnsSearch: (v: string, previous: string[] = []): string[] => {
    if (!isSearchDomain(v)) throw flagError(command, '--dns-search', v, 'expected a domain: letters, digits and "-" in labels joined by "." ("." for none)')
    return [...previous, v]
  },
  dnsOption: (v: string, previous: string[] = []): string[] => {
    if (!isDnsOption(v)) throw flagError(command, '--dns-option', v, 'expected one resolver option, such as ndots:2 or edns0')
    return [...previous, v]
  },
  addHost: (v: string, previous: string[] = []): string[] => {
    const e = parseAddHost(v)
    if ('problem' in e) throw flagError(command, '--add-host', v, e.problem === 'must be NAME:IP' ? 'expected NAME:IP (db:10.0.0.5, db:fd00::5)' : e.problem)
    return [...previous, v]
  },
  httpProxy: (v: string | undefined): boolean => {
    // podman's --http-proxy is a boolean flag: alone it is true, and it takes =true or =false.
    if (v === undefined || /^(true|1)$/i.test(v)) return true
    if (/^(false|0)$/i.test(v)) return false
    throw flagError(command, '--http-proxy', v, 'expected true or false (--http-proxy=false)')
  },
})

/** Adds the pod-input options to a command (prepare, run): a manifest, or a command after `--`, or an image. */
export const addPodInputOptions = (cmd: Command): Command => {
  const parse = podFlagParsers(cmd.name())
  return cmd
    .addOption(new Option('--manifest <file>', 'pod manifest (podctl/v1 JSON); "-" reads stdin'))
    .addOption(new Option('-n, --name <name>', 'pod name ([a-z0-9][a-z0-9-]{0,62})').argParser(parse.name))
    .option('-e, --env <KEY=VALUE>', 'set an environment variable in every app; KEY alone takes its value from podctl\'s environment (repeatable)', collect)
    .option('--env-file <file>', 'read environment variables from a file of KEY=VALUE lines (repeatable; --env overrides)', collect)
    .option('-v, --volume <HOST:CTR[:ro]>', 'mount a host path (or a persistent volume NAME) at CTR; CTR alone is an empty volume (repeatable)', collect)
    .option('-w, --workdir <dir>', 'with -- CMD or --image: the app\'s working directory')
    .addOption(new Option('--hostname <name>', 'the pod\'s hostname (isolated pods; default: its name)').argParser(parse.hostname))
    .option('--rm', 'remove the pod once it has exited')
    .addOption(new Option('--http-proxy [bool]', 'false: the caller\'s http_proxy, https_proxy, ftp_proxy and no_proxy do not pass to the apps').argParser(parse.httpProxy))
    .option('--uuid-file-save <file>', 'also write the pod UUID to this file')
    .option('-u, --user <user[:group]>', 'with -- CMD or --image: run the app as this user (and group), by name or number (root only)')
    .option('--read-only', 'with --image (or -- CMD and --isolation namespaces, whose root is read-only already): the app\'s root is read-only, its /tmp, /run and /var/tmp tmpfs')
    .option('--cap-add <cap>', 'with -- CMD and --isolation namespaces, or --image: add capabilities to the defaults (NET_ADMIN, or ALL; repeatable, comma-separated)', collectList)
    .option('--cap-drop <cap>', 'with -- CMD and --isolation namespaces, or --image: drop capabilities from the defaults (CHOWN, or ALL; repeatable, comma-separated)', collectList)
    .addOption(new Option('--isolation <isolation>', 'with -- CMD: "host" (host processes) or "namespaces" (the pod\'s own Linux namespaces)').choices(['host', 'namespaces']))
    .addOption(new Option('--network <network>', 'with -- CMD and --isolation namespaces, or --image: "bridge" (the default), a network\'s NAME, several joined by ",", "host" or "none" (loopback only)').argParser(parse.network))
    .addOption(new Option('-p, --publish <[ip:]hostPort:port[/proto]>', 'publish a port of the pod on the host (repeatable; tcp unless /udp; ranges 8000-8009:80-89)').argParser(parse.publish))
    .addOption(new Option('--dns <ip>', 'a name server of the pod\'s /etc/resolv.conf, in the place of the host\'s (repeatable)').argParser(parse.dns))
    .addOption(new Option('--dns-search <domain>', 'a search domain of the pod\'s /etc/resolv.conf ("." for none; repeatable)').argParser(parse.dnsSearch))
    .addOption(new Option('--dns-option <option>', 'a resolver option of the pod\'s /etc/resolv.conf, such as ndots:2 (repeatable)').argParser(parse.dnsOption))
    .addOption(new Option('--add-host <name:ip>', 'a line of the pod\'s /etc/hosts (repeatable)').argParser(parse.addHost))
    .addOption(new Option('--userns <mode>', 'with -- CMD and --isolation namespaces, or --image, as root: "host" or "private" (the pod\'s root is an unprivileged id range)').choices(['host', 'private']))
    .addOption(new Option('--memory <size>', 'with -- CMD and --isolation namespaces, or --image: memory limit of the pod (64m, 1g)').argParser(parse.memory))
    .addOption(new Option('--cpus <cores>', 'with -- CMD and --isolation namespaces, or --image: CPU limit, in cores (0.5, 2)').argParser(parse.cpus))
    .addOption(new Option('--pids-limit <n>', `with -- CMD and --isolation namespaces, or --image: most processes at once (at least ${MIN_PIDS}; default 2048, 0 for none)`).argParser(parse.pidsLimit))
    .option('-i, --interactive', 'with -- CMD or --image: the app reads podctl\'s standard input (a foreground run)')
    .option('-t, --tty', 'with -- CMD and --isolation namespaces, or --image: the app runs on podctl\'s terminal (a foreground run)')
    .addOption(new Option('--image <name>', 'a one-app pod from this image (NAME[:TAG] or a digest); after -- the arguments that replace its Cmd').argParser(parse.image))
    .option('--entrypoint <cmd>', "with --image: the program in the place of the image's Entrypoint (a JSON array for a program with arguments; '' for none)")
    .argument('[command...]', 'after --: the program and arguments of a one-app pod')
}
