/**
 * What containers-registries.conf(5) says about short names, read as
 * podman 4 reads it: the aliases (`[aliases]`, which Debian's
 * containers-common ships in registries.conf.d/shortnames.conf) and the
 * `unqualified-search-registries`. The main file is
 * `$CONTAINERS_REGISTRIES_CONF`, else `~/.config/containers/registries.conf`
 * if it exists (then only the user's drop-in directory is read), else
 * `/etc/containers/registries.conf`; drop-ins (`registries.conf.d/*.conf`)
 * are read in name order after it, each overriding what it sets. A file
 * that is missing is nothing; one that is not TOML is an error, as for
 * podman.
 */
import fs from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { readUserFile } from '../fs/read.js'

export interface RegistriesConf {
  /** Short name (without a tag) -> the full name it stands for. */
  aliases: Map<string, string>
  /** unqualified-search-registries, in order. */
  search: string[]
  /** The main file, for messages. */
  file: string
}

const SYSTEM_FILE = '/etc/containers/registries.conf'
const SYSTEM_DIR = '/etc/containers/registries.conf.d'
const MAX_CONF_BYTES = 1024 * 1024

/** The conf files, main file first, then the drop-ins in order. */
const confFiles = (env: NodeJS.ProcessEnv): { main: string; files: string[] } => {
  const home = env.HOME || os.homedir()
  const userFile = path.join(home, '.config/containers/registries.conf')
  const userDir = path.join(home, '.config/containers/registries.conf.d')
  const explicit = env.CONTAINERS_REGISTRIES_CONF
  const useUser = explicit === undefined && fs.existsSync(userFile)
  const main = explicit ?? (useUser ? userFile : SYSTEM_FILE)
  const dropIns = (dir: string): string[] => {
    let names: string[]
    try {
      names = fs.readdirSync(dir)
    } catch {
      return []
    }
    return names.filter((n) => n.endsWith('.conf')).sort().map((n) => path.join(dir, n))
  }
  return { main, files: [main, ...(useUser ? [] : dropIns(SYSTEM_DIR)), ...dropIns(userDir)] }
}

type Toml = typeof import('smol-toml')
let toml: Toml | undefined
// Loaded on first use, as lib/fs/extra.ts loads fs-extra: most commands that find an image never read registries.conf.
const parse = (text: string): unknown => (toml ??= (typeof require === 'function' ? require('smol-toml') : createRequire(import.meta.url)('smol-toml')) as Toml).parse(text)

const readConf = (file: string): Record<string, unknown> | undefined => {
  if (!fs.existsSync(file)) return undefined
  const text = readUserFile(file, MAX_CONF_BYTES, 'registries configuration').toString('utf8')
  try {
    return parse(text) as Record<string, unknown>
  } catch (er) {
    throw new PodctlError('EFAILED', `cannot read ${file}: ${(er as Error).message.split('\n')[0]}`, 'fix it (containers-registries.conf(5)); podman reads it too')
  }
}

const strings = (v: unknown): string[] | undefined => (Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : undefined)

/** Reads the registries configuration (see the module's comment). */
export const readRegistriesConf = (env: NodeJS.ProcessEnv = process.env): RegistriesConf => {
  const { main, files } = confFiles(env)
  const conf: RegistriesConf = { aliases: new Map(), search: [], file: main }
  for (const f of files) {
    const c = readConf(f)
    if (c === undefined) continue
    // Version 1's [registries.search] is read too, as podman still does.
    const search = strings(c['unqualified-search-registries']) ?? strings((c.registries as { search?: { registries?: unknown } } | undefined)?.search?.registries)
    if (search !== undefined) conf.search = search
    const aliases = c.aliases
    if (aliases !== null && typeof aliases === 'object') {
      for (const [k, v] of Object.entries(aliases)) if (typeof v === 'string') conf.aliases.set(k, v)
    }
  }
  return conf
}
