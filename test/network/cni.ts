// The CNI invoker (lib/network/cni.ts), with plugins that are real
// programs: shell scripts that write down what they were given (the
// CNI_* environment, the config on stdin) and answer as a plugin would,
// and Debian's own plugins where they are installed.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { addList, checkList, delList, execPlugin, findPlugin, pluginConfig, type Conflist } from '../../lib/network/cni.js'
import { DEFAULT_PLUGIN_DIRS, type NetworkEnv } from '../../lib/network/layout.js'
import { alive } from '../helpers/run-util.js'

/** A plugin `type` in `dir`: it appends "COMMAND IFNAME CONTAINERID NETNS ARGS" and its stdin to log, then runs `body`. */
const plugin = (dir: string, type: string, body: string): void => {
  const log = path.join(dir, 'log')
  fs.writeFileSync(
    path.join(dir, type),
    `#!/bin/sh\nin=$(cat)\necho "${type} $CNI_COMMAND $CNI_IFNAME $CNI_CONTAINERID $CNI_NETNS $CNI_ARGS $CNI_PATH" >> ${log}\nprintf '%s\\n' "$in" >> ${log}\n${body}\n`,
    { mode: 0o755 },
  )
}
const logOf = (dir: string): string[] => fs.readFileSync(path.join(dir, 'log'), 'utf8').trim().split('\n')
const envOf = (dir: string, timeoutMs = 30_000): NetworkEnv => ({ pluginDirs: [path.join(dir, 'none'), dir], configDir: dir, timeoutMs })

const list = (types: string[]): Conflist => ({
  cniVersion: '1.0.0',
  name: 'net1',
  plugins: types.map((type) => ({ type, ...(type === 'second' ? { capabilities: { portMappings: true, other: false } } : {}) })),
})
const target = { containerId: 'c0ffee00-0000-4000-8000-000000000000', netns: '/run/netns/x', ifname: 'eth0', args: [['IgnoreUnknown', '1'], ['IP', '10.0.0.9']] as [string, string][] }

t.test('ADD runs the list in order, each plugin given the result so far; DEL in reverse, given the cached result', async (t) => {
  const dir = t.testdir({})
  plugin(dir, 'first', `echo '{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.9/24"}]}'`)
  plugin(dir, 'second', `echo "$in" | sed 's/.*"prevResult":\\({[^}]*}]}\\).*/\\1/'`)
  const caps = { portMappings: [{ hostPort: 80, containerPort: 80, protocol: 'tcp' }], other: 1 }
  const result = await addList(list(['first', 'second']), target, caps, envOf(dir))
  t.same(result, { cniVersion: '1.0.0', ips: [{ address: '10.0.0.9/24' }] }, "the last plugin's answer")
  const log = logOf(dir)
  t.equal(log[0], `first ADD eth0 ${target.containerId} /run/netns/x IgnoreUnknown=1;IP=10.0.0.9 ${dir}/none:${dir}`)
  t.same(JSON.parse(log[1]!), { type: 'first', name: 'net1', cniVersion: '1.0.0' }, 'no prevResult for the first; no runtimeConfig for a plugin without the capability')
  const second = JSON.parse(log[3]!)
  t.same(second.prevResult, { cniVersion: '1.0.0', ips: [{ address: '10.0.0.9/24' }] })
  t.same(second.runtimeConfig, { portMappings: caps.portMappings }, 'only the capabilities it declares, and turned on')
  fs.rmSync(path.join(dir, 'log'))
  await delList(list(['first', 'second']), { ...target, netns: '' }, caps, result, envOf(dir))
  const del = logOf(dir)
  t.match(del[0], /^second DEL eth0 \S+ {2}IgnoreUnknown/, 'second first, with no namespace')
  t.match(del[2], /^first DEL/)
  t.same(JSON.parse(del[1]!).prevResult, result, 'DEL is given the result of ADD')
})

t.test('an old list gets no prevResult on DEL, and CHECK only from 0.4.0', async (t) => {
  const dir = t.testdir({})
  plugin(dir, 'first', 'exit 0')
  const old = { ...list(['first']), cniVersion: '0.3.1' }
  await delList(old, target, {}, { ips: [] }, envOf(dir))
  t.notOk('prevResult' in JSON.parse(logOf(dir)[1]!))
  await checkList(old, target, {}, { ips: [] }, envOf(dir))
  t.equal(logOf(dir).length, 2, 'no CHECK for 0.3.1')
  await checkList(list(['first']), target, {}, { ips: [] }, envOf(dir))
  t.match(logOf(dir)[2], /^first CHECK/)
})

t.test("a plugin's error object becomes the message; DEL goes past a failing plugin", async (t) => {
  const dir = t.testdir({})
  plugin(dir, 'first', 'exit 0')
  plugin(dir, 'bad', `echo '{"cniVersion":"1.0.0","code":11,"msg":"failed to allocate","details":"no addresses left"}'; exit 1`)
  await t.rejects(addList(list(['bad']), target, {}, envOf(dir)), {
    code: 'EFAILED',
    cniCode: 11,
    message: 'network net1: the "bad" plugin could not add pod c0ffee00: failed to allocate (no addresses left) [CNI error 11]',
  })
  fs.rmSync(path.join(dir, 'log'))
  await t.rejects(delList(list(['first', 'bad']), target, {}, undefined, envOf(dir)), { message: /"bad" plugin could not delete pod c0ffee00/ })
  t.match(logOf(dir)[2], /^first DEL/, 'the plugin before the failing one still ran')
  plugin(dir, 'quiet', 'echo "something broke" >&2; exit 2')
  await t.rejects(execPlugin('net1', { type: 'quiet' }, 'ADD', target, envOf(dir)), { message: /could not add pod c0ffee00: something broke$/ }, 'no error object: its stderr')
  plugin(dir, 'garbled', 'echo "not json"')
  await t.rejects(execPlugin('net1', { type: 'garbled' }, 'ADD', target, envOf(dir)), { message: /its answer is not a CNI result/ })
})

t.test('a plugin that hangs is killed with its children; a missing one is named', async (t) => {
  const dir = t.testdir({})
  plugin(dir, 'slow', `sleep 30 & echo $! > ${dir}/child; wait`)
  await t.rejects(execPlugin('net1', { type: 'slow' }, 'ADD', target, envOf(dir, 300)), { message: /took longer than 0\.3s and was killed/ })
  const child = Number(fs.readFileSync(path.join(dir, 'child'), 'utf8'))
  await new Promise((r) => setTimeout(r, 100))
  t.notOk(alive(child), "the plugin's child is gone too")
  await t.rejects(execPlugin('net1', { type: 'nosuch' }, 'ADD', target, envOf(dir)), { message: /no plugin "nosuch" in .*\/none, /, hint: /containernetworking-plugins/ })
  await t.rejects(execPlugin('net1', { type: '../first' }, 'ADD', target, envOf(dir)), { message: /no plugin "\.\.\/first"/, hint: /not a file name/ }, 'a type is never a path')
  t.equal(findPlugin('../first', [dir]), undefined)
})

t.test('pluginConfig keeps what the plugin has and adds what libcni adds', async (t) => {
  const c = pluginConfig(list(['second']), { type: 'second', capabilities: { portMappings: true }, snat: true }, undefined, {})
  t.same(c, { type: 'second', capabilities: { portMappings: true }, snat: true, name: 'net1', cniVersion: '1.0.0' }, 'no empty runtimeConfig')
})

t.test("Debian's plugins speak 1.0.0", { skip: findPlugin('bridge', DEFAULT_PLUGIN_DIRS) === undefined ? 'no CNI plugins here (Debian: containernetworking-plugins)' : false }, async (t) => {
  const r = await execPlugin('bridge', { type: 'bridge', cniVersion: '0.1.0', name: 'x' }, 'VERSION', { containerId: '', netns: '', ifname: '' }, { pluginDirs: DEFAULT_PLUGIN_DIRS, configDir: '/nonexistent', timeoutMs: 30_000 })
  t.ok((r?.supportedVersions as string[]).includes('1.0.0'))
})
