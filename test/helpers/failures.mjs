#!/usr/bin/env node
// Prints what failed in the last `tap` run, from the results tap keeps in
// .tap/test-results/, so that the end of a long CI log says which
// assertions failed (tap's TAP stream names them only where they happened,
// thousands of lines up). `npm test` runs it only when tap failed.
import fs from 'node:fs'
import path from 'node:path'

const RESULTS = '.tap/test-results'
const DIAG_LINES = 24

const resultFiles = (dir) =>
  fs.existsSync(dir)
    ? fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
        const p = path.join(dir, e.name)
        return e.isDirectory() ? resultFiles(p) : p.endsWith('.tap') ? [p] : []
      })
    : []

let failures = 0
for (const file of resultFiles(RESULTS).sort()) {
  const lines = fs.readFileSync(file, 'utf8').split('\n')
  lines.forEach((line, i) => {
    // A failed assertion; its subtest's own "not ok" (which has no diff of
    // its own) and TODO/SKIP lines are left out.
    if (!/^\s*not ok \d+/.test(line) || /# (TODO|SKIP)/i.test(line) || /# time=/.test(line)) return
    failures++
    console.log(`\n✖ ${path.relative(RESULTS, file).replace(/\.tap$/, '')}: ${line.trim()}`)
    const indent = line.match(/^\s*/)[0].length
    for (const d of lines.slice(i + 1, i + 1 + DIAG_LINES)) {
      if (d.trim() !== '' && d.match(/^\s*/)[0].length <= indent && !d.trim().startsWith('---')) break
      console.log(d)
    }
  })
}
console.log(failures === 0 ? '\nNo failed assertion recorded in .tap/test-results (a test file may have crashed or timed out: look for "not ok" above).' : `\n${failures} failed assertion(s), listed above.`)
