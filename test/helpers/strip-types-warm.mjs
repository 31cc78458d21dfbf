// Fills the cache of the tests' stripped TypeScript (strip-types-hooks.mjs)
// for every .ts file of lib/ and test/ at once, in one esbuild, before tap
// starts: on a fresh clone the cache is empty, and each test process that
// found a file missing started an esbuild of its own, about half a second
// of CPU each (Documentation/performance.md, "npm test"). `pretest` runs it
// beside the build.
import fs from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { stripped } from './strip-types-hooks.mjs'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

const tsFiles = async (dir) => {
  const entries = await fs.readdir(dir, { withFileTypes: true, recursive: true })
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')).map((e) => path.join(e.parentPath ?? e.path, e.name))
}

const files = [...(await tsFiles(path.join(ROOT, 'lib'))), ...(await tsFiles(path.join(ROOT, 'test')))]
await Promise.all(files.map(async (f) => stripped(f, await fs.readFile(f, 'utf8'))))
