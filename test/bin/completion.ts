// Shell completion: the script `podctl completion bash` prints,
// sourced in a real bash, driven as bash's completion machinery drives it
// (COMP_WORDS, COMP_CWORD, the function `complete -p` names), offers
// subcommands, options, option values and the data dir's pods and apps.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { BIN } from '../helpers/common.js'
import { podctl, runDetached } from '../helpers/cli-util.js'
import { dataDir } from '../helpers/run-util.js'

const hasBash = spawnSync('bash', ['-c', 'true']).status === 0

/** A `podctl` on PATH for bash (the completion script calls it by name), as tests run podctl: without tap's NODE_OPTIONS. */
const wrapperDir = (base: string): string => {
  const bin = path.join(base, 'bin')
  fs.mkdirSync(bin, { recursive: true })
  fs.writeFileSync(path.join(bin, 'podctl'), `#!/bin/sh\nexec /usr/bin/env -u NODE_OPTIONS ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"\n`, { mode: 0o755 })
  return bin
}

/** What bash's completion offers for `words` (the last one being completed). */
const bashComplete = (bin: string, dataDirPath: string, words: string[]): { candidates: string[]; registered: string } => {
  const quoted = words.map((w) => `'${w.replace(/'/g, `'\\''`)}'`).join(' ')
  const script = `set -e
source <(podctl completion bash)
registered=$(complete -p podctl)
COMP_WORDS=(podctl ${quoted})
COMP_CWORD=${words.length}
_podctl
echo "$registered"
printf '%s\\n' "\${COMPREPLY[@]}"
`
  const r = spawnSync('bash', ['-c', script], { encoding: 'utf8', env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, PODCTL_DIR: dataDirPath } })
  if (r.status !== 0) throw new Error(`bash: ${r.stderr}`)
  const [registered, ...rest] = r.stdout.split('\n')
  return { registered: registered!, candidates: rest.filter(Boolean).sort() }
}

t.test('bash: subcommands, options, values, pods and apps', { skip: hasBash ? false : 'no bash on this machine' }, async (t) => {
  const dir = dataDir(t)
  const bin = wrapperDir(t.testdir({}))
  const uuid = await runDetached(t, dir, ['-n', 'web', '--', 'sleep', '300'])
  const ask = (...words: string[]) => bashComplete(bin, dir, words).candidates

  t.match(bashComplete(bin, dir, ['']).registered, /complete .*-F _podctl podctl/, 'complete -p names the function')
  t.same(ask('l'), ['list', 'logs', 'ls'], 'subcommands and aliases')
  t.same(ask('volume', 'c'), ['claim', 'class', 'create'], 'nested subcommands')
  t.same(ask('list', '--f'), ['--filter', '--format', '--full'], 'options')
  t.same(ask('list', '--format', ''), ['json', 'json-pretty', 'table'], 'an option\'s choices')
  t.same(ask('list', '--format', '=', 'j'), ['json', 'json-pretty'], '--format=j, as bash splits it')
  t.ok(ask('list', '--state', '').includes('exited-garbage'), 'states')
  t.same(ask('status', ''), [uuid], 'pods from the data dir')
  t.same(ask('logs', uuid.slice(0, 8), '--app', ''), ['sleep'], 'the apps of the pod named before')
  t.same(ask('run', '--', 'sl'), [], 'nothing after --: the shell completes files')
  fs.mkdirSync(path.join(dir, 'networks'))
  fs.writeFileSync(path.join(dir, 'networks', 'front.conflist'), '{}')
  const conf = path.join(path.dirname(dir), 'net.d')
  fs.mkdirSync(conf)
  fs.writeFileSync(path.join(conf, '10-lab.conflist'), '{"cniVersion": "1.0.0", "name": "lab", "plugins": [{"type": "bridge"}]}')
  process.env.PODCTL_CNI_CONFIG_DIR = conf
  t.teardown(() => void delete process.env.PODCTL_CNI_CONFIG_DIR)
  t.same(ask('network', 'inspect', ''), ['bridge', 'front', 'lab'], "networks: the default, the data dir's, the operator's")
  t.same(ask('network', 'rm', 'front', 'f'), ['front'], 'rm takes several')
  t.same(ask('run', '--network', ''), ['bridge', 'front', 'host', 'lab', 'none'], "run --network: the modes and the networks")
  t.same(ask('prepare', '--network', '=', 'f'), ['front'], 'prepare --network=f')
})

t.test('zsh and fish scripts; an unknown shell is exit 2', async (t) => {
  t.match(podctl(undefined, ['completion', 'zsh']).stdout, /bashcompinit[\s\S]*podctl __complete --/)
  t.match(podctl(undefined, ['completion', 'fish']).stdout, /complete -c podctl .*podctl __complete --/)
  const r = podctl(undefined, ['completion', 'tcsh'])
  t.equal(r.status, 2)
  t.match(r.stderr, /tcsh.*invalid|Allowed choices/)
  t.notMatch(podctl(undefined, ['--help']).stdout, /__complete/, 'the helper command is not listed')
})
