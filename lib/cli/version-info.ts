/**
 * podctl's version and the `version` command's output. Kept free of
 * commander and of the pod core so that `podctl version` can answer
 * before either is loaded (see lib/cli/entry.ts).
 */
import fs from 'node:fs'

/** Version of the on-disk layout; bumped when an old podctl could misread it. */
export const FORMAT_VERSION = 1

let version: string | undefined
export const podctlVersion = (): string => {
  if (version !== undefined) return version
  // Built: dist/lib/cli/ (three levels below the root); from source: lib/cli/ (two).
  for (const rel of ['../../../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(fs.readFileSync(new URL(rel, import.meta.url), 'utf8')) as { name?: string; version?: string }
      if (pkg.name === 'podctl' && pkg.version) return (version = pkg.version)
    } catch {
      // try the next level
    }
  }
  return (version = 'unknown')
}

/** What `podctl version [--format F]` prints. */
export const versionText = (format: string): string => {
  const v = { podctl: podctlVersion(), node: process.version, format: FORMAT_VERSION }
  if (format === 'json') return `${JSON.stringify(v)}\n`
  if (format === 'json-pretty') return `${JSON.stringify(v, null, 2)}\n`
  return `podctl version ${v.podctl}\nnode version ${v.node}\non-disk format ${v.format}\n`
}

const FORMATS = new Set(['table', 'json', 'json-pretty'])

/**
 * The output for the plain forms of `podctl version` (no global flags), or
 * undefined when the command line needs the full parser.
 */
export const plainVersionRequest = (argv: string[]): string | undefined => {
  if (argv.length === 1 && argv[0] === '--version') return `${podctlVersion()}\n`
  if (argv[0] !== 'version') return undefined
  if (argv.length === 1) return versionText('table')
  if (argv.length === 3 && argv[1] === '--format' && FORMATS.has(argv[2]!)) return versionText(argv[2]!)
  if (argv.length === 2 && argv[1]!.startsWith('--format=') && FORMATS.has(argv[1]!.slice(9))) return versionText(argv[1]!.slice(9))
  return undefined
}
