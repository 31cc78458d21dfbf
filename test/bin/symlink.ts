// A pod directory replaced by a symlink pointing outside the data dir
// list, status, rm and gc never follow it and never delete
// anything through it. Spawns bin/podctl.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { listTree, STACK_RE, whereIs } from '../helpers/common.js'
import { exitedGarbagePod, exitedPod, garbagePod, podctl, preparedPod } from '../helpers/cli-util.js'

/** An outside directory that looks like a pod (so following it would show). */
const outsideTree = (name: string) => ({
  manifest: JSON.stringify({ apiVersion: 'podctl/v1', name, apps: [{ name: 'main', exec: ['true'] }] }),
  'pod.json': JSON.stringify({
    uuid: 'x',
    name,
    created_at: '2020-01-01T00:00:00.000Z',
    started_at: null,
    gc_marked_at: '2020-01-01T00:00:00.000Z',
    pid: null,
    mutable: false,
    exit_code: null,
    labels: {},
    annotations: {},
    apps: [],
  }),
  apps: { main: { 'precious.txt': 'keep me\n' } },
  'precious.txt': 'keep me too\n',
})

const makers = {
  prepared: preparedPod,
  run: exitedPod,
  'exited-garbage': exitedGarbagePod,
  garbage: garbagePod,
} as const

for (const [stateDir, make] of Object.entries(makers)) {
  t.test(`a symlink in ${stateDir}/ in place of a pod`, async (t) => {
    const root = t.testdir({ outside: outsideTree('outside'), data: {} })
    const outside = path.join(root, 'outside')
    const dir = path.join(root, 'data')
    const uuid = await make(dir)
    const normal = await exitedPod(dir) // a real pod beside it
    const podDir = path.join(dir, 'pods', stateDir, uuid)
    t.equal(whereIs(dir, uuid), stateDir)
    fs.rmSync(podDir, { recursive: true })
    fs.symlinkSync(outside, podDir)
    const outsideBefore = listTree(outside)

    const list = podctl(dir, ['list', '--format', 'json'])
    t.equal(list.status, 0, 'list: exit 0')
    t.notMatch(list.stderr, STACK_RE)
    const listed = JSON.parse(list.stdout) as { uuid: string; name: string | null }[]
    t.notOk(listed.some((p) => p.name === 'outside'), 'list: never shows what the link points to')
    t.ok(listed.some((p) => p.uuid === normal), 'list: the real pod is there')
    t.equal(podctl(dir, ['list']).status, 0, 'list (table): exit 0')

    const status = podctl(dir, ['status', uuid, '--format', 'json'])
    t.not(status.status, 0, 'status: fails')
    t.equal(status.stdout, '', 'status: prints nothing about the link target')
    t.match(status.stderr, /symlink|not a pod directory/, 'status: says why')
    t.notMatch(status.stderr, STACK_RE)
    t.not(podctl(dir, ['status', uuid.slice(0, 8)]).status, 0, 'status by prefix: fails')
    t.not(podctl(dir, ['cat-manifest', uuid]).status, 0, 'cat-manifest: fails')

    const rm = podctl(dir, ['rm', uuid, normal])
    t.not(rm.status, 0, 'rm: non-zero exit')
    t.match(rm.stderr, /symlink|not a pod directory/, 'rm: says why')
    t.notMatch(rm.stderr, STACK_RE)
    t.equal(rm.stdout, `${normal}\n`, 'rm: the real pod given with it is removed')
    t.strictSame(listTree(outside), outsideBefore, 'rm: the outside dir is intact')
    t.ok(fs.lstatSync(podDir).isSymbolicLink(), 'rm: the link itself is left for a human')

    const again = await exitedPod(dir)
    const gc = podctl(dir, ['gc', '--grace-period', '0s', '--expire-prepared', '0s', '--format', 'json'])
    t.equal(gc.status, 1, 'gc: exit 1')
    const v = JSON.parse(gc.stdout) as { marked: string[]; deleted: string[]; skipped: { uuid: string; reason: string }[] }
    t.strictSame(v.deleted, [again], 'gc: the real pod is deleted')
    t.ok(v.skipped.some((s) => s.uuid.includes(uuid) && /symlink/.test(s.reason)), 'gc: the link is reported in skipped')
    t.ok(v.skipped.some((s) => s.uuid === uuid), 'gc: skipped[].uuid is the UUID (CONTRACT §5)')
    t.match(gc.stderr, uuid, 'gc: the link is reported on stderr')
    t.notMatch(gc.stderr, STACK_RE)
    t.strictSame(listTree(outside), outsideBefore, 'gc: the outside dir is intact')
    t.ok(fs.lstatSync(podDir).isSymbolicLink(), 'gc: the link is still there')

    const text = podctl(dir, ['gc', '--grace-period', '0s'])
    t.equal(text.status, 1, 'gc (text): exit 1')
    t.match(text.stderr, /^podctl: gc: .*symlink/m)
    t.strictSame(listTree(outside), outsideBefore)
  })
}

t.test('a symlink inside a pod is removed, not followed', async (t) => {
  const root = t.testdir({ outside: outsideTree('inner'), data: {} })
  const outside = path.join(root, 'outside')
  const dir = path.join(root, 'data')
  const viaRm = await exitedPod(dir)
  const viaGc = await exitedPod(dir)
  const outsideBefore = listTree(outside)
  for (const uuid of [viaRm, viaGc]) {
    const app = path.join(dir, 'pods', 'run', uuid, 'apps', 'main')
    fs.rmSync(app, { recursive: true })
    fs.symlinkSync(outside, app)
    fs.symlinkSync(path.join(outside, 'precious.txt'), path.join(dir, 'pods', 'run', uuid, 'file-link'))
  }

  const rm = podctl(dir, ['rm', viaRm])
  t.equal(rm.status, 0)
  t.equal(rm.stdout, `${viaRm}\n`)
  t.equal(whereIs(dir, viaRm), undefined, 'the pod is gone')

  const gc = podctl(dir, ['gc', '--grace-period', '0s', '--format', 'json'])
  t.equal(gc.status, 0)
  t.strictSame((JSON.parse(gc.stdout) as { deleted: string[] }).deleted, [viaGc])
  t.equal(whereIs(dir, viaGc), undefined, 'the pod is gone')

  t.strictSame(listTree(outside), outsideBefore, 'everything the links pointed to is intact')
  t.equal(fs.readFileSync(path.join(outside, 'precious.txt'), 'utf8'), 'keep me too\n')
})
