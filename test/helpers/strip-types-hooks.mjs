// The module hooks of strip-types.mjs: a .ts file is loaded with its types
// stripped by esbuild (an inline source map keeps stacks and coverage on
// the .ts lines), and `./x.js` from a .ts file finds `./x.ts`, as tsc's
// nodenext resolution does. What esbuild made is kept under
// node_modules/.cache/, by the hash of the file's path and text: a test
// process whose files are all there starts no esbuild (its service costs
// each test process about half a second of CPU; README.md, `npm test`).
import { createHash } from 'node:crypto'
import fs from 'node:fs/promises'
import { fileURLToPath } from 'node:url'

// What tsconfig.json says that changes emitted code: class fields are defined (ES2022).
const TSCONFIG = { compilerOptions: { useDefineForClassFields: true } }
const OPTIONS = { loader: 'ts', format: 'esm', target: 'node20', sourcemap: 'inline', tsconfigRaw: TSCONFIG }
const CACHE = fileURLToPath(new URL('../../node_modules/.cache/podctl-strip-types/', import.meta.url))
// The esbuild that made a cached file, and the options it was given, are part of its key.
const ESBUILD_PACKAGE = new URL('../../node_modules/esbuild/package.json', import.meta.url)
const salt = fs.readFile(ESBUILD_PACKAGE, 'utf8').then((p) => `${JSON.parse(p).version}\0${JSON.stringify(OPTIONS)}`, () => 'no esbuild version')

export const resolve = async (specifier, context, next) => {
  try {
    return await next(specifier, context)
  } catch (er) {
    if (er?.code !== 'ERR_MODULE_NOT_FOUND' || !specifier.endsWith('.js') || !context.parentURL?.endsWith('.ts')) throw er
    return next(`${specifier.slice(0, -'.js'.length)}.ts`, context)
  }
}

/** `file`'s text (`source`) as JavaScript: from the cache, else made by esbuild and kept there. */
export const stripped = async (file, source) => {
  const key = createHash('sha256').update(`${await salt}\0${file}\0${source}`).digest('hex')
  const cached = `${CACHE}${key}.js`
  try {
    return await fs.readFile(cached, 'utf8')
  } catch {
    // not made yet
  }
  const { transform } = await import('esbuild')
  const { code } = await transform(source, { ...OPTIONS, sourcefile: file })
  // Written whole under another name, then renamed: test processes running at once never read half a file.
  const tmp = `${cached}.${process.pid}.tmp`
  try {
    await fs.mkdir(CACHE, { recursive: true })
    await fs.writeFile(tmp, code)
    await fs.rename(tmp, cached)
  } catch {
    await fs.rm(tmp, { force: true })
  }
  return code
}

export const load = async (url, context, next) => {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context)
  const file = fileURLToPath(url)
  return { format: 'module', source: await stripped(file, await fs.readFile(file, 'utf8')), shortCircuit: true }
}
