/** podctl's version and the `version` command's output. */
import fs from 'node:fs'
import { FORMAT_VERSION } from '../pod/layout.js'

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
