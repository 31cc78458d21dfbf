// Every command has --help with a description and an example (CONTRACT §4).
import t from 'tap'
import { podctl } from '../helpers/cli-util.js'

const COMMANDS = ['prepare', 'list', 'status', 'rm', 'gc', 'cat-manifest', 'image', 'version']

t.test('podctl --help lists the commands and shows examples', async (t) => {
  for (const args of [['--help'], ['help'], ['-h']]) {
    const r = podctl(undefined, args)
    t.equal(r.status, 0, args.join(' '))
    t.equal(r.stderr, '')
    t.match(r.stdout, /^Usage: podctl /)
    t.match(r.stdout, /Example/)
    for (const c of COMMANDS) t.match(r.stdout, new RegExp(`^ {2}${c}\\b.*\\S`, 'm'), `lists ${c} with a description`)
  }
})

t.test('every command has --help with a description and an example', async (t) => {
  for (const c of COMMANDS) {
    for (const args of [[c, '--help'], ['help', c]]) {
      const r = podctl(undefined, args)
      t.equal(r.status, 0, `${args.join(' ')}: exit 0`)
      t.equal(r.stderr, '')
      t.match(r.stdout, new RegExp(`^Usage: podctl ${c}\\b`), 'a usage line')
      t.match(r.stdout, /\n\n\S.*\n/, 'a description')
      t.match(r.stdout, /Example/, 'an example')
      t.match(r.stdout, new RegExp(`\\$ podctl ${c}\\b`), 'the example runs the command')
    }
  }
})

t.test('--help wins over everything else and writes nothing', async (t) => {
  const dir = `${t.testdir({})}/data`
  const r = podctl(dir, ['prepare', '--manifest', '/nonexistent', '--help'])
  t.equal(r.status, 0)
  t.match(r.stdout, /^Usage: podctl prepare/)
  t.equal((await import('node:fs')).existsSync(dir), false)
})
