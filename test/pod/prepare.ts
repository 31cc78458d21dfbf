// Preparing a pod (lib/pod/prepare.ts): program lookup, and nothing left
// behind when creation fails.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { appRoot, checkExecs, createPod, execProblems, preparePod } from '../../lib/pod/prepare.js'
import type { PodManifest } from '../../lib/pod/manifest.js'
import { POD_DIRS } from '../../lib/pod/layout.js'
import { manifest } from '../helpers/common.js'
import { dataDir } from '../helpers/run-util.js'

const m = (exec: string[]): PodManifest => manifest({ apps: [{ name: 'a', exec }] }) as PodManifest

t.test("a program is looked up on the PATH of the app's environment, as it will be started", async (t) => {
  const dir = t.testdir({ bin: { tool: '#!/bin/sh\n', 'not-exec': 'x', sub: {} } })
  fs.chmodSync(path.join(dir, 'bin', 'tool'), 0o755)
  const bin = path.join(dir, 'bin')
  const app = (exec: string, env?: Record<string, string>): PodManifest => manifest({ apps: [{ name: 'a', exec: [exec], ...(env ? { env } : {}) }] }) as PodManifest
  t.strictSame(execProblems(app('tool'), { PATH: `${path.join(dir, 'nope')}:${bin}` }), [], 'found in a later PATH entry')
  t.strictSame(execProblems(app('tool'), { PATH: '/usr/bin' }), [{ path: 'apps[0].exec[0]', problem: '"tool" was not found on PATH' }])
  t.strictSame(execProblems(app('tool', { PATH: bin }), { PATH: '/usr/bin' }), [], "the app's own env.PATH decides, not podctl's")
  t.strictSame(execProblems(app('sub'), { PATH: bin }), [{ path: 'apps[0].exec[0]', problem: '"sub" was found on PATH but is not executable' }], 'a directory is not a program')
  t.strictSame(execProblems(app('not-exec'), { PATH: bin }), [{ path: 'apps[0].exec[0]', problem: '"not-exec" was found on PATH but is not executable' }])
  // An empty entry is the app's working directory (execvp's rule, which the
  // supervisor applies); it does not exist yet, so it finds nothing, even
  // where podctl's own working directory has the program.
  const cwd = process.cwd()
  process.chdir(bin)
  t.teardown(() => process.chdir(cwd))
  t.strictSame(execProblems(app('tool'), { PATH: ':/usr/bin' }), [{ path: 'apps[0].exec[0]', problem: '"tool" was not found on PATH' }], "an empty entry is not podctl's working directory")
})

t.test('execProblems and checkExecs name the app and say what is wrong', async (t) => {
  t.strictSame(execProblems(m(['/bin/sh'])), [])
  t.strictSame(execProblems(m(['sh']), { PATH: '/bin:/usr/bin' }), [])
  t.strictSame(execProblems(m(['/no/such/prog'])), [{ path: 'apps[0].exec[0]', problem: '"/no/such/prog" is not an executable file' }])
  t.strictSame(execProblems(m(['/etc'])), [{ path: 'apps[0].exec[0]', problem: '"/etc" is not an executable file' }])
  t.strictSame(execProblems(m(['no-such-program-here']), { PATH: '/bin' }), [{ path: 'apps[0].exec[0]', problem: '"no-such-program-here" was not found on PATH' }])
  t.throws(() => checkExecs(m(['no-such-program-here']), { PATH: '/bin' }), {
    code: 'EUSAGE',
    message: 'invalid manifest: apps[0].exec[0]: "no-such-program-here" was not found on PATH',
    hint: /absolute path or a program on PATH/,
  })
  t.doesNotThrow(() => checkExecs(m(['/bin/sh'])))
})

t.test('a creation that fails midway leaves nothing behind', async (t) => {
  const dir = dataDir(t)
  // Two apps with the same name (an unvalidated manifest): the second app
  // root cannot be created.
  const bad = { apiVersion: 'podctl/v1', apps: [{ name: 'a', exec: ['x'] }, { name: 'a', exec: ['x'] }] } as PodManifest
  await t.rejects(createPod(dir, bad), { code: 'EEXIST' })
  for (const d of POD_DIRS) t.strictSame(fs.readdirSync(path.join(dir, 'pods', d)), [], `pods/${d} is empty`)
  t.strictSame(fs.readdirSync(path.join(dir, 'locks')), [], 'no lock left')
})

t.test('preparePod leaves a prepared pod with its app roots', async (t) => {
  const dir = dataDir(t)
  const pod = await preparePod(dir, manifest({ apps: [{ name: 'x', exec: ['true'] }, { name: 'y', exec: ['true'] }] }) as PodManifest)
  t.equal(pod.state, 'prepared')
  t.equal(appRoot(pod.path, 'x'), path.join(pod.path, 'apps', 'x'))
  t.ok(fs.statSync(appRoot(pod.path, 'x')).isDirectory())
  t.ok(fs.statSync(appRoot(pod.path, 'y')).isDirectory())
  t.strictSame(fs.readdirSync(pod.path).sort(), ['apps', 'manifest', 'pod.json'], 'no temporaries')
})
