/**
 * Stack traces for --debug that name lib/*.ts rather than the built
 * JavaScript. The bundles are compiled by bin/podctl's loader (vm.Script,
 * for the code cache), which Node's own source map support does not
 * cover, so the frames are translated here, through the source map beside
 * each file (`X.js.map`), only when a trace is printed.
 */
import fs from 'node:fs'
import { SourceMap } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const maps = new Map<string, SourceMap | undefined>()

const mapOf = (file: string): SourceMap | undefined => {
  if (!maps.has(file)) {
    let map: SourceMap | undefined
    try {
      map = new SourceMap(JSON.parse(fs.readFileSync(`${file}.map`, 'utf8')) as ConstructorParameters<typeof SourceMap>[0])
    } catch {
      map = undefined // no map beside it: left as it is
    }
    maps.set(file, map)
  }
  return maps.get(file)
}

/** One frame's location, translated if its file has a map. */
const translate = (location: string, where: string, line: string, column: string): string => {
  const file = where.startsWith('file://') ? fileURLToPath(where) : where
  const entry = mapOf(file)?.findEntry(Number(line) - 1, Number(column) - 1)
  if (!entry || !('originalSource' in entry) || entry.originalSource === undefined) return location
  const source = entry.originalSource.startsWith('file://') ? fileURLToPath(entry.originalSource) : path.resolve(path.dirname(file), entry.originalSource)
  return `${source}:${entry.originalLine + 1}:${entry.originalColumn + 1}`
}

/** `stack` with every frame in a file that has a source map pointing at its source instead. */
export const sourceMappedStack = (stack: string): string =>
  stack.replace(/((?:file:\/\/)?\/[^\s():]+\.[cm]?js):(\d+):(\d+)/g, (location, where: string, line: string, column: string) => translate(location, where, line, column))
