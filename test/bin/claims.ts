// Classes, claims and inline provisioning through the real CLI (CONTRACT §8):
// bad input writes nothing; a manifest's class and size make a claim that the
// run provisions; 8 racing run-prepareds of pods sharing a new claim make one
// volume; an exec provisioner is called with the protocol's JSON, once.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { STACK_RE, listTree } from '../helpers/common.js'
import { podctl, podctlAsync } from '../helpers/cli-util.js'

/** An exec provisioner that logs each call (verb and volume name) and answers as `mode` says. */
const provisionerScript = (dir: string, mode: 'ok' | 'fail' | 'ignore-delete' | 'fail-delete', sleep = 0): string => {
  const script = path.join(dir, 'prov.sh')
  const log = path.join(dir, 'calls.log')
  const store = path.join(dir, 'store')
  fs.mkdirSync(store, { recursive: true })
  fs.writeFileSync(
    script,
    `#!/bin/sh
input=$(cat)
name=$(printf '%s' "$input" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("volume_name") or d.get("name"))')
echo "$1 $name" >> ${JSON.stringify(log)}
[ "$1" = delete ] && printf '%s' "$input" > ${JSON.stringify(path.join(dir, 'delete-input.json'))}
sleep ${sleep}
case "$1:${mode}" in
  provision:fail) echo "no capacity left in the pool" >&2; exit 3 ;;
  provision:*) mkdir -p ${JSON.stringify(store)}/"$name"; printf '{"path": "%s/%s", "capacity_bytes": 1048576}' ${JSON.stringify(store)} "$name" ;;
  delete:ignore-delete) printf '{"ignored": "not mine"}' ;;
  delete:fail-delete) echo "the array is offline" >&2; exit 4 ;;
  delete:*) rm -rf ${JSON.stringify(store)}/"$name"; printf '{}' ;;
esac
`,
    { mode: 0o755 },
  )
  return script
}
const calls = (dir: string): string[] => {
  try {
    return fs.readFileSync(path.join(dir, 'calls.log'), 'utf8').trim().split('\n').filter(Boolean)
  } catch {
    return []
  }
}

const claimManifest = (claim: string, extra: Record<string, unknown> = {}, cmd = 'echo hi > $PODCTL_APP_ROOT/data/f') => ({
  apiVersion: 'podctl/v1',
  apps: [{ name: 'a', exec: ['/bin/sh', '-c', cmd], mounts: [{ volume: 'data', path: '/data' }] }],
  volumes: [{ name: 'data', kind: 'persistent', claim, ...extra }],
})

const json = (s: string): any => JSON.parse(s)

t.test('bad class and claim input: exit 2, a message, no stack, nothing written', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const cases: [string[], RegExp][] = [
    [['volume', 'class', 'create', 'Bad_Name', '--provisioner', 'local'], /invalid class name/],
    [['volume', 'class', 'create', 'c', '--provisioner', 'nfs'], /unknown provisioner "nfs"/],
    [['volume', 'class', 'create', 'c', '--provisioner', 'exec:relative/prog'], /names no program/],
    [['volume', 'class', 'create', 'c', '--provisioner', 'local', '--param', 'color=blue'], /local provisioner has no parameter "color"/],
    [['volume', 'class', 'create', 'c', '--provisioner', 'local', '--param', 'sizeLimit=lots'], /invalid parameter sizeLimit/],
    [['volume', 'class', 'create', 'c', '--provisioner', 'local', '--param', 'novalue'], /expected KEY=VALUE/],
    [['volume', 'claim', 'create', 'db', '--class', 'nope'], /unknown volume class "nope"/],
    [['volume', 'claim', 'create', 'db', '--size', 'big'], /invalid --size/],
    [['volume', 'claim', 'create', 'db', '--size', '0'], /more than 0 bytes/],
    [['volume', 'claim', 'create', '-db'], /.+/],
  ]
  for (const [args, msg] of cases) {
    const r = podctl(dir, args)
    t.equal(r.status, 2, `${args.join(' ')}: exit 2`)
    t.match(r.stderr, msg, `${args.join(' ')}: says what`)
    t.notMatch(r.stderr, STACK_RE)
  }
  t.notOk(fs.existsSync(path.join(dir, 'classes')), 'no class written')
  t.notOk(fs.existsSync(path.join(dir, 'claims')), 'no claim written')
})

t.test('a class or claim name never becomes a path outside the data dir (found by the fuzz test)', async (t) => {
  const base = t.testdir({})
  const dir = path.join(base, 'data')
  t.equal(podctl(dir, ['volume', 'class', 'create', 'std', '--provisioner', 'local']).status, 0)
  const before = listTree(base)
  for (const args of [
    ['volume', 'claim', 'create', 'db', '--class', 'a/b'],
    ['volume', 'claim', 'create', 'db', '--class', '../../escaped'],
    ['volume', 'claim', 'inspect', '../../escaped'],
    ['volume', 'class', 'inspect', '../escaped'],
    ['volume', 'class', 'rm', '../../escaped'],
    ['volume', 'claim', 'rm', 'a/b'],
  ]) {
    const r = podctl(dir, args)
    t.equal(r.status, 2, `${args.join(' ')}: exit 2`)
    t.match(r.stderr, /invalid (class|claim|volume class|volume claim) name/, `${args.join(' ')}: says the name is invalid`)
  }
  t.same(listTree(base), before, 'nothing made, in the data dir or beside it')
})

t.test('classes: create, list, inspect; one default; rm refused while a claim uses it (exit 4)', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  t.equal(podctl(dir, ['volume', 'class', 'create', 'standard', '--provisioner', 'local', '--default', '--param', 'sizeLimit=1Gi']).stdout, 'standard\n')
  const dup = podctl(dir, ['volume', 'class', 'create', 'standard', '--provisioner', 'local'])
  t.equal(dup.status, 4, 'an existing class: exit 4')
  const second = podctl(dir, ['volume', 'class', 'create', 'other', '--provisioner', 'local', '--default'])
  t.equal(second.status, 4, 'a second default: exit 4')
  t.match(second.stderr, /standard is already the default/)
  const c = json(podctl(dir, ['volume', 'class', 'inspect', 'standard', '--format', 'json']).stdout)
  t.match(c, { name: 'standard', provisioner: 'local', parameters: { sizeLimit: '1Gi' }, reclaim: 'delete', default: true })
  t.same(json(podctl(dir, ['volume', 'class', 'list', '--format', 'json']).stdout).map((x: { name: string }) => x.name), ['standard'])
  t.equal(podctl(dir, ['volume', 'claim', 'create', 'db']).status, 0)
  t.equal(json(podctl(dir, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout).class, 'standard', 'a claim without --class gets the default class')
  const rm = podctl(dir, ['volume', 'class', 'rm', 'standard'])
  t.equal(rm.status, 4)
  t.match(rm.stderr, /used by claim db/)
  t.equal(podctl(dir, ['volume', 'claim', 'rm', 'db']).status, 0)
  t.equal(podctl(dir, ['volume', 'class', 'rm', 'standard']).status, 0)
  t.equal(podctl(dir, ['volume', 'class', 'inspect', 'standard']).status, 3, 'gone')
})

t.test('a manifest with class and size: the claim is made at prepare and provisioned by run (local); released by claim rm', async (t) => {
  const base = t.testdir({})
  const dir = path.join(base, 'data')
  podctl(dir, ['volume', 'class', 'create', 'standard', '--provisioner', 'local'])
  fs.writeFileSync(path.join(base, 'm.json'), JSON.stringify(claimManifest('db', { class: 'standard', size: '1Gi' })))
  const prep = podctl(dir, ['prepare', '--manifest', path.join(base, 'm.json')])
  t.equal(prep.status, 0, prep.stderr)
  const uuid = prep.stdout.trim()
  t.match(json(podctl(dir, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout), { phase: 'pending', size_bytes: 1024 ** 3, volume: null })
  const run = podctl(dir, ['run-prepared', uuid])
  t.equal(run.status, 0, run.stderr)
  const claim = json(podctl(dir, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout)
  t.match(claim, { name: 'db', class: 'standard', phase: 'bound', volume: /^pvc-/, provisioned_by: /\/\d+$/ })
  t.same(claim.events.map((e: { reason: string }) => e.reason), ['Provisioning', 'ProvisioningSucceeded'])
  const vol = json(podctl(dir, ['volume', 'inspect', claim.volume, '--format', 'json']).stdout)
  t.equal(vol.reclaim, 'delete')
  t.equal(fs.readFileSync(path.join(dir, 'volumes', claim.volume, 'data', 'f'), 'utf8'), 'hi\n', 'the app wrote into the provisioned volume')
  const busy = podctl(dir, ['volume', 'claim', 'rm', 'db'])
  t.equal(busy.status, 4, 'a claim used by a pod that is not removed: exit 4')
  t.match(busy.stderr, new RegExp(`used by pod ${uuid}`))
  t.equal(podctl(dir, ['rm', uuid]).status, 0)
  t.ok(fs.existsSync(path.join(dir, 'volumes', claim.volume)), 'removing the pod keeps the claim\'s volume')
  t.equal(podctl(dir, ['volume', 'claim', 'rm', 'db']).stdout, 'db\n')
  t.notOk(fs.existsSync(path.join(dir, 'volumes', claim.volume)), 'reclaim "delete": the volume is gone with its claim')
})

t.test('a claim binds to a fitting available static volume before provisioning', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  podctl(dir, ['volume', 'class', 'create', 'standard', '--provisioner', 'local'])
  podctl(dir, ['volume', 'create', 'small', '--size-limit', '1M'])
  podctl(dir, ['volume', 'create', 'big', '--size-limit', '10G'])
  podctl(dir, ['volume', 'claim', 'create', 'db', '--class', 'standard', '--size', '1Gi'])
  const base = path.dirname(dir)
  fs.writeFileSync(path.join(base, 'm.json'), JSON.stringify(claimManifest('db')))
  t.equal(podctl(dir, ['run', '--manifest', path.join(base, 'm.json')]).status, 0)
  t.equal(json(podctl(dir, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout).volume, 'big', 'the volume that fits, not the first')
})

t.test('exec provisioner: the protocol, once per claim; delete on claim rm; an ignored delete keeps the volume released', async (t) => {
  const base = t.testdir({})
  const dir = path.join(base, 'data')
  const prog = provisionerScript(base, 'ok')
  t.equal(podctl(dir, ['volume', 'class', 'create', 'ext', '--provisioner', `exec:${prog}`]).status, 0)
  fs.writeFileSync(path.join(base, 'm.json'), JSON.stringify(claimManifest('db', { class: 'ext', size: '1M' })))
  const run = podctl(dir, ['run', '--manifest', path.join(base, 'm.json')])
  t.equal(run.status, 0, run.stderr)
  const claim = json(podctl(dir, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout)
  t.same(calls(base), [`provision ${claim.volume}`], 'one provision call, with the volume name')
  t.equal(fs.readFileSync(path.join(base, 'store', claim.volume, 'f'), 'utf8'), 'hi\n', 'the app wrote where the provisioner said')
  const uuid = json(podctl(dir, ['list', '--format', 'json']).stdout)[0].uuid
  podctl(dir, ['rm', uuid])
  t.equal(podctl(dir, ['volume', 'claim', 'rm', 'db']).status, 0)
  t.same(calls(base), [`provision ${claim.volume}`, `delete ${claim.volume}`], 'one delete call')
  t.notOk(fs.existsSync(path.join(base, 'store', claim.volume)), 'the provisioner deleted its storage')
  t.notOk(fs.existsSync(path.join(dir, 'volumes', claim.volume)), 'and the volume is gone')

  const base2 = t.testdir({})
  const dir2 = path.join(base2, 'data')
  const ignoring = provisionerScript(base2, 'ignore-delete')
  podctl(dir2, ['volume', 'class', 'create', 'ext', '--provisioner', `exec:${ignoring}`])
  fs.writeFileSync(path.join(base2, 'm.json'), JSON.stringify(claimManifest('db', { class: 'ext' })))
  podctl(dir2, ['run', '--manifest', path.join(base2, 'm.json')])
  const v2 = json(podctl(dir2, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout).volume
  podctl(dir2, ['rm', json(podctl(dir2, ['list', '--format', 'json']).stdout)[0].uuid])
  t.equal(podctl(dir2, ['volume', 'claim', 'rm', 'db']).status, 0, 'an ignored delete is not a failure')
  const kept = json(fs.readFileSync(path.join(dir2, 'volumes', v2, 'volume.json'), 'utf8'))
  t.equal(kept.phase, 'released', 'the volume stays, released')
  t.same(kept.events ?? [], [], 'an ignored delete is no failure event')
})

t.test('an exec volume: inspect shows the provisioner\'s path; delete gets the volume\'s JSON; a failed delete is said, kept as an event, and retried', async (t) => {
  const base = t.testdir({})
  const dir = path.join(base, 'data')
  const prog = provisionerScript(base, 'fail-delete')
  t.equal(podctl(dir, ['volume', 'class', 'create', 'ext', '--provisioner', `exec:${prog}`, '--param', 'tier=gold']).status, 0)
  t.equal(podctl(dir, ['volume', 'claim', 'create', 'db', '--class', 'ext', '--size', '1M']).status, 0)
  t.equal(podctl(dir, ['controller', '--once']).status, 0)
  const volume = json(podctl(dir, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout).volume
  const v = json(podctl(dir, ['volume', 'inspect', volume, '--format', 'json']).stdout)
  t.equal(v.path, path.join(base, 'store', volume), 'the data is where the provisioner said')
  t.equal(v.claim, 'db')
  t.notOk(fs.existsSync(path.join(dir, 'volumes', volume, 'data')), 'no empty data/ of its own')

  const rm = podctl(dir, ['volume', 'claim', 'rm', 'db'])
  t.equal(rm.status, 1, 'a failed delete is a failure')
  t.match(rm.stderr, /volume claim db is removed, but deleting its volume pvc-\S+ failed: .*the array is offline/)
  t.match(rm.stderr, /podctl controller --once/, 'says what retries it')
  t.notMatch(rm.stderr, STACK_RE)
  t.equal(podctl(dir, ['volume', 'claim', 'inspect', 'db']).status, 3, 'the claim is gone')
  const input = json(fs.readFileSync(path.join(base, 'delete-input.json'), 'utf8'))
  t.match(input, { name: volume, kind: 'persistent', path: v.path, phase: 'released', class: 'ext', parameters: { tier: 'gold' }, claim: 'db', capacity_bytes: 1048576 }, 'delete got the volume\'s JSON')
  const after = json(podctl(dir, ['volume', 'inspect', volume, '--format', 'json']).stdout)
  t.equal(after.phase, 'released', 'the volume stays released')
  t.match(after.events.at(-1), { type: 'Warning', reason: 'VolumeFailedDelete', message: /the array is offline/ })
  t.equal(podctl(dir, ['controller', '--once']).status, 0, 'a controller pass tries again')
  t.equal(calls(base).filter((l) => l.startsWith('delete ')).length, 2, 'and calls delete again')
  t.match(json(podctl(dir, ['volume', 'inspect', volume, '--format', 'json']).stdout).events.at(-1), { reason: 'VolumeFailedDelete', count: 2 }, 'the same failure is counted')
})

t.test('names of the form pvc-<uuid> are kept for provisioned volumes', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  const r = podctl(dir, ['volume', 'create', 'pvc-3f2a0e4c-1d2b-4c5d-8e9f-0a1b2c3d4e5f'])
  t.equal(r.status, 2)
  t.match(r.stderr, /kept for provisioned volumes/)
  t.notOk(fs.existsSync(dir), 'nothing made, not even the data dir')
  t.equal(podctl(dir, ['volume', 'create', 'pvc-data']).status, 0, 'other pvc- names are fine')
})

t.test('a damaged record where a claim\'s volume is to be provisioned: the run fails saying so (125), and does not wait', async (t) => {
  const base = t.testdir({})
  const dir = path.join(base, 'data')
  t.equal(podctl(dir, ['volume', 'class', 'create', 'c', '--provisioner', 'local', '--default']).status, 0)
  t.equal(podctl(dir, ['volume', 'claim', 'create', 'db', '--size', '1M']).status, 0)
  const uid = json(fs.readFileSync(path.join(dir, 'claims', 'db.json'), 'utf8')).uid as string
  const record = path.join(dir, 'volumes', `pvc-${uid}`, 'volume.json')
  fs.mkdirSync(path.dirname(record), { recursive: true })
  fs.writeFileSync(record, '{')
  fs.writeFileSync(path.join(base, 'm.json'), JSON.stringify(claimManifest('db')))
  // Without --timeout 5s a wait for the record would take the default 5 minutes.
  const r = podctl(dir, ['run', '--timeout', '5s', '--manifest', path.join(base, 'm.json')])
  t.equal(r.status, 125, r.stderr)
  t.match(r.stderr, `persistent volume pvc-${uid} has a damaged record: ${record} is not valid JSON`)
  t.notMatch(r.stderr, /timed out|another process/, 'not a wait that ran out')
  t.notMatch(r.stderr, STACK_RE)
  t.equal(fs.readFileSync(record, 'utf8'), '{', 'the damaged record is left for the user to look at')
})

t.test('a failing exec provisioner: the run fails with its stderr; a Warning ProvisioningFailed event; the retry waits', async (t) => {
  const base = t.testdir({})
  const dir = path.join(base, 'data')
  const prog = provisionerScript(base, 'fail')
  podctl(dir, ['volume', 'class', 'create', 'ext', '--provisioner', `exec:${prog}`])
  fs.writeFileSync(path.join(base, 'm.json'), JSON.stringify(claimManifest('db', { class: 'ext' })))
  const r = podctl(dir, ['run', '--manifest', path.join(base, 'm.json')])
  t.equal(r.status, 125, 'podctl\'s own failure in a foreground run')
  t.match(r.stderr, /cannot provision a volume for claim db: .*no capacity left in the pool/)
  t.notMatch(r.stderr, STACK_RE)
  const c = json(podctl(dir, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout)
  t.equal(c.phase, 'pending')
  t.match(c.events.at(-1), { type: 'Warning', reason: 'ProvisioningFailed', message: /no capacity left/ })
  t.equal(calls(base).length, 1)
  t.same((fs.existsSync(path.join(dir, 'volumes')) ? fs.readdirSync(path.join(dir, 'volumes')) : []).filter((n) => !n.startsWith('.')), [], 'no volume without its storage')
})

t.test('8 racing run-prepareds of pods sharing a new claim: one provision call, one volume', async (t) => {
  const base = t.testdir({})
  const dir = path.join(base, 'data')
  const prog = provisionerScript(base, 'ok', 0.3)
  podctl(dir, ['volume', 'class', 'create', 'ext', '--provisioner', `exec:${prog}`])
  fs.writeFileSync(path.join(base, 'm.json'), JSON.stringify(claimManifest('shared', { class: 'ext', accessMode: 'ReadWriteMany' }, 'true')))
  const uuids = Array.from({ length: 8 }, () => podctl(dir, ['prepare', '--manifest', path.join(base, 'm.json')]).stdout.trim())
  const results = await Promise.all(uuids.map((u) => podctlAsync(t, dir, ['run-prepared', u])))
  t.same(results.map((r) => r.status), Array(8).fill(0), results.map((r) => r.stderr).join(''))
  t.equal(calls(base).filter((l) => l.startsWith('provision ')).length, 1, 'the provisioner was called once')
  t.equal(fs.readdirSync(path.join(dir, 'volumes')).filter((n) => n.startsWith('pvc-')).length, 1, 'one volume')
})

t.test('volume rm of a volume a claim owns is refused (4): the claim decides, through the provisioner', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  t.equal(podctl(dir, ['volume', 'class', 'create', 'std', '--provisioner', 'local', '--default']).status, 0)
  t.equal(podctl(dir, ['volume', 'claim', 'create', 'db', '--size', '1M']).status, 0)
  const m = path.join(path.dirname(dir), 'm.json')
  fs.writeFileSync(m, JSON.stringify(claimManifest('db')))
  const run = podctl(dir, ['run', '--manifest', m])
  t.equal(run.status, 0, run.stderr)
  const volume = json(podctl(dir, ['volume', 'claim', 'inspect', 'db', '--format', 'json']).stdout).volume as string
  const rm = podctl(dir, ['volume', 'rm', volume])
  t.equal(rm.status, 4, 'refused')
  t.match(rm.stderr, new RegExp(`^podctl: persistent volume ${volume} is bound to volume claim db\\nremove the claim instead: podctl volume claim rm db\\n`))
  t.ok(json(podctl(dir, ['volume', 'list', '--format', 'json']).stdout).some((v: { name: string }) => v.name === volume), 'the volume is still there')
})

t.test('class list and claim list: --no-legend drops the header, as every list of podctl (and --no-legacy, its old spelling)', async (t) => {
  const dir = path.join(t.testdir({}), 'data')
  t.equal(podctl(dir, ['volume', 'class', 'create', 'std', '--provisioner', 'local', '--default']).status, 0)
  t.equal(podctl(dir, ['volume', 'claim', 'create', 'db', '--size', '1M']).status, 0)
  for (const what of ['class', 'claim']) {
    const full = podctl(dir, ['volume', what, 'list'])
    t.equal(full.status, 0, full.stderr)
    t.match(full.stdout, /^NAME\s/, `${what} list: a header`)
    for (const flag of ['--no-legend', '--no-legacy']) {
      const bare = podctl(dir, ['volume', what, 'list', flag])
      t.equal(bare.status, 0, `${what} list ${flag}: exit 0 ${bare.stderr}`)
      // Columns follow their contents, the header's too: the rows are compared word by word.
      const words = (text: string) => text.trim().split('\n').map((l) => l.split(/ +/).slice(0, 6)) // CREATED ages between the two runs
      t.same(words(bare.stdout), words(full.stdout).slice(1), `${what} list ${flag}: the rows alone`)
    }
  }
})
