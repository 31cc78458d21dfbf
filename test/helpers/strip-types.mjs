// Runs the tests' TypeScript on Node 20 as Node 22 and later can run it
// themselves (--experimental-strip-types): the types are stripped, nothing
// is checked (`npm test` type-checks first: tsc -p tsconfig.test.json).
// tap's own TypeScript plugin transpiles through ts-node, whose start and
// transpiling cost each test file about 3 s of CPU, most of npm test's time
// outside the tests themselves; esbuild (the bundler's) takes milliseconds.
// package.json's tap config loads this in every test process.
import { register } from 'node:module'

register('./strip-types-hooks.mjs', import.meta.url)
