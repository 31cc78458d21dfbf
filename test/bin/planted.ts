// Links planted inside a pod (by an app, or by hand) are never followed
// by the supervisor or by readers: a log that is a link, a working
// directory that is a link, a record or manifest that is a link.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { STACK_RE } from '../helpers/common.js'
import { podctl, preparedPod } from '../helpers/cli-util.js'

const OUTSIDE = { 'secret.txt': 'keep\n', dir: { 'f.txt': 'keep\n' } }

t.test("the supervisor never appends to a log through a link", async (t) => {
  const base = t.testdir({ outside: OUTSIDE })
  const dir = path.join(base, 'data')
  const uuid = await preparedPod(dir, { apiVersion: 'podctl/v1', apps: [{ name: 'a', exec: ['sh', '-c', 'echo leaked'] }] })
  const logs = path.join(dir, 'pods', 'prepared', uuid, 'logs')
  fs.mkdirSync(logs)
  fs.symlinkSync(path.join(base, 'outside', 'secret.txt'), path.join(logs, 'a.log'))
  const r = podctl(dir, ['run-prepared', uuid])
  t.equal(r.status, 126, 'the app cannot start: its log is not a file podctl made')
  t.match(r.stderr, /^podctl: app a could not start: .*ELOOP/m)
  t.notMatch(r.stderr, STACK_RE)
  t.equal(fs.readFileSync(path.join(base, 'outside', 'secret.txt'), 'utf8'), 'keep\n', 'nothing was written through the link')
})

t.test('a working directory replaced by a link is refused, not followed', async (t) => {
  const base = t.testdir({ outside: OUTSIDE })
  const dir = path.join(base, 'data')
  const uuid = await preparedPod(dir, { apiVersion: 'podctl/v1', apps: [{ name: 'a', exec: ['sh', '-c', 'touch created-here'], workingDirectory: '/w/deeper' }] })
  const root = path.join(dir, 'pods', 'prepared', uuid, 'apps', 'a')
  fs.symlinkSync(path.join(base, 'outside', 'dir'), path.join(root, 'w'))
  const r = podctl(dir, ['run-prepared', uuid])
  t.equal(r.status, 126)
  t.match(r.stderr, /could not start: .*\/w is a symlink; podctl does not follow or replace it/)
  t.strictSame(fs.readdirSync(path.join(base, 'outside', 'dir')), ['f.txt'], 'nothing was made through the link')
})

t.test('a record or manifest that is a link is damage, never read through', async (t) => {
  const base = t.testdir({ outside: { 'pod.json': '{"not":"read"}' } })
  const dir = path.join(base, 'data')
  const uuid = await preparedPod(dir)
  const pod = path.join(dir, 'pods', 'prepared', uuid)
  for (const f of ['pod.json', 'manifest']) {
    fs.rmSync(path.join(pod, f))
    fs.symlinkSync(path.join(base, 'outside', 'pod.json'), path.join(pod, f))
  }
  const r = podctl(dir, ['status', uuid, '--format', 'json'])
  t.equal(r.status, 0)
  t.match(JSON.parse(r.stdout), { state: 'prepared', damaged: /pod\.json is a symlink/ })
  const cat = podctl(dir, ['cat-manifest', uuid])
  t.equal(cat.status, 1)
  t.match(cat.stderr, /damaged manifest: .*manifest is a symlink/)
  t.equal(podctl(dir, ['rm', uuid]).status, 0, 'and rm removes the pod, not what the links point to')
  t.equal(fs.readFileSync(path.join(base, 'outside', 'pod.json'), 'utf8'), '{"not":"read"}')
})
