// The command lines that skip commander (lib/cli/entry.ts): exactly the
// plain forms are recognized; anything else goes to the full program.
import t from 'tap'
import { plainListRequest, plainRunRequest } from '../../lib/cli/fast-paths.js'

t.test('plainListRequest', async (t) => {
  t.strictSame(plainListRequest(['list']), { opts: { format: 'table', legacy: true } })
  t.strictSame(plainListRequest(['--dir', '/d', 'list', '--format', 'json']), { dir: '/d', opts: { format: 'json', legacy: true } })
  t.strictSame(plainListRequest(['--dir=/d', 'list', '--format=json-pretty', '--full', '--no-legacy']), {
    dir: '/d',
    opts: { format: 'json-pretty', legacy: false, full: true },
  })
  for (const argv of [
    [],
    ['status'],
    ['list', '--help'],
    ['list', '--state', 'running'],
    ['list', '--format', 'yaml'],
    ['--debug', 'list'],
    ['list', 'list'],
    ['--dir', '', 'list'],
    ['--format', 'json', 'list'],
  ]) {
    t.equal(plainListRequest(argv), undefined, JSON.stringify(argv))
  }
})

t.test('plainRunRequest', async (t) => {
  t.strictSame(plainRunRequest(['run', '--', 'true']), { opts: {}, command: ['true'] })
  t.strictSame(plainRunRequest(['--dir', '/d', 'run', '--detach', '--', 'sleep', '1', '--', 'x']), {
    dir: '/d',
    opts: { detach: true },
    command: ['sleep', '1', '--', 'x'],
  })
  for (const argv of [
    ['run'],
    ['run', '--'],
    ['run', '--name', 'x', '--', 'true'],
    ['run', '--help', '--', 'true'],
    ['--debug', 'run', '--', 'true'],
    ['prepare', '--', 'true'],
    ['run', '--dir', '/d', '--', 'true'],
    ['--detach', 'run', '--', 'true'],
    ['list', '--', 'run'],
  ]) {
    t.equal(plainRunRequest(argv), undefined, JSON.stringify(argv))
  }
})
