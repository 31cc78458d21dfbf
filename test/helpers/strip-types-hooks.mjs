// The module hooks of strip-types.mjs: a .ts file is loaded with its types
// stripped by esbuild (an inline source map keeps stacks and coverage on
// the .ts lines), and `./x.js` from a .ts file finds `./x.ts`, as tsc's
// nodenext resolution does.
import fs from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { transform } from 'esbuild'

// What tsconfig.json says that changes emitted code: class fields are defined (ES2022).
const TSCONFIG = { compilerOptions: { useDefineForClassFields: true } }

export const resolve = async (specifier, context, next) => {
  try {
    return await next(specifier, context)
  } catch (er) {
    if (er?.code !== 'ERR_MODULE_NOT_FOUND' || !specifier.endsWith('.js') || !context.parentURL?.endsWith('.ts')) throw er
    return next(`${specifier.slice(0, -'.js'.length)}.ts`, context)
  }
}

export const load = async (url, context, next) => {
  if (!url.startsWith('file:') || !url.endsWith('.ts')) return next(url, context)
  const file = fileURLToPath(url)
  const { code } = await transform(await fs.readFile(file, 'utf8'), { loader: 'ts', format: 'esm', target: 'node20', sourcemap: 'inline', sourcefile: file, tsconfigRaw: TSCONFIG })
  return { format: 'module', source: code, shortCircuit: true }
}
