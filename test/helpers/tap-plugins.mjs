// Builds tap's Test class for the plugins package.json names ("tap.plugin")
// before the run, when the one installed was built for others. tap rebuilds
// it itself when they differ, but only after its runner has taken the test
// processes' loaders from the old build: on a fresh `npm ci`, every test
// process of that first run loaded @tapjs/typescript's ts-node, which the
// tests do not use (test/helpers/strip-types.mjs strips their types), for
// about 0.75 s of CPU each (Documentation/performance.md, "npm test").
// `pretest` runs this before the type check: the tests' types are checked
// against the class built for these plugins (a test calling a method of a
// plugin package.json leaves out fails there, not in its run).
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import { createRequire } from 'node:module'

const mismatch = async () => {
  try {
    // The built class's module is read, not imported: alone, it cannot be (it and @tapjs/core import each other).
    const built = createRequire(import.meta.url).resolve('@tapjs/test/package.json').replace(/package\.json$/, 'test-built/dist/esm/index.js')
    const signature = /^export const signature = `([^`]*)`/m.exec(fs.readFileSync(built, 'utf8'))?.[1]
    const { TapConfig } = await import('@tapjs/config')
    const wanted = (await TapConfig.load()).pluginSignature
    return signature?.trim() !== wanted && `it was built for other plugins than package.json names`
  } catch (er) {
    // tap's own modules moved (another tap): the build is what makes sure.
    return `cannot compare (${er.message.split('\n')[0]})`
  }
}

const why = await mismatch()
if (why) {
  console.error(`tap: building its Test class: ${why}`)
  const r = spawnSync('tap', ['build'], { stdio: 'inherit' })
  process.exit(r.status ?? 1)
}
