// Black-box tests of `podctl version` and `--version` (CONTRACT §4): spawns bin/podctl.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { ROOT } from '../helpers/common.js'
import { podctl } from '../helpers/cli-util.js'

const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }

t.test('version: text', async (t) => {
  const r = podctl(undefined, ['version'])
  t.equal(r.status, 0)
  t.equal(r.stderr, '')
  t.match(r.stdout, new RegExp(`^podctl version ${pkg.version.replace(/\./g, '\\.')}\n`))
  t.match(r.stdout, `node version ${process.version}\n`)
  t.match(r.stdout, /on-disk format \d+\n$/)
})

t.test('version --format json: {podctl, node, format}', async (t) => {
  for (const args of [['version', '--format', 'json'], ['version', '--format=json']]) {
    const r = podctl(undefined, args)
    t.equal(r.status, 0)
    t.equal(r.stderr, '')
    t.match(r.stdout, /^\{.*\}\n$/, 'one line')
    const v = JSON.parse(r.stdout) as Record<string, unknown>
    t.strictSame(Object.keys(v).sort(), ['format', 'node', 'podctl'])
    t.equal(v.podctl, pkg.version)
    t.equal(v.node, process.version)
    t.ok(Number.isInteger(v.format) && (v.format as number) >= 1, 'format is a positive integer')
  }
  const pretty = podctl(undefined, ['version', '--format', 'json-pretty'])
  t.equal(pretty.status, 0)
  t.strictSame(JSON.parse(pretty.stdout), JSON.parse(podctl(undefined, ['version', '--format', 'json']).stdout))
  t.match(pretty.stdout, /^\{\n {2}"podctl"/)
})

t.test('the same answer with global flags (the full parser)', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const fast = podctl(undefined, ['version', '--format', 'json'])
  const full = podctl(dir, ['version', '--format', 'json'])
  t.equal(full.status, 0)
  t.equal(full.stdout, fast.stdout)
  t.equal(podctl(dir, ['version']).stdout, podctl(undefined, ['version']).stdout)
  t.equal(fs.existsSync(dir), false, 'version creates no data dir')
})

t.test('--version', async (t) => {
  const r = podctl(undefined, ['--version'])
  t.equal(r.status, 0)
  t.equal(r.stdout, `${pkg.version}\n`)
  t.equal(r.stderr, '')
  const withDir = podctl(path.join(t.testdir({}), 'd'), ['--version'])
  t.equal(withDir.status, 0)
  t.equal(withDir.stdout, `${pkg.version}\n`)
})

t.test('a bad --format is a usage error', async (t) => {
  for (const args of [['version', '--format', 'yaml'], ['version', '--format=xml'], ['version', 'extra']]) {
    const r = podctl(undefined, args)
    t.equal(r.status, 2, args.join(' '))
    t.equal(r.stdout, '')
    t.match(r.stderr, /^podctl: /)
  }
})
