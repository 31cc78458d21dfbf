// Paths podctl did not choose (lib/volume/answer-path.ts): a provisioner's
// answer and a record's path, judged on their text, then on disk (a
// directory reached from / without a link), against real directories.
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { answeredPathProblem, rootParamProblem, volumePathProblem } from '../../lib/storage/answer-path.js'

t.test('the text: absolute, normalized, one printable line, not / nor a directory of the host', async (t) => {
  const cases: [unknown, RegExp | undefined][] = [
    ['/srv/volumes/v1', undefined],
    ['/var/lib/volumes/v1', undefined],
    ['/tmp/x', undefined],
    [7, /not a string/],
    ['srv/v', /not an absolute path/],
    ['/', /\/ itself/],
    ['/etc', /the host's own \/etc/],
    ['/usr', /the host's own \/usr/],
    ['/lib64', /the host's own \/lib64/],
    ['/tmp', /the host's own \/tmp/],
    ['/proc/self/root', /in \/proc/],
    ['/sys/fs/cgroup', /in \/sys/],
    ['/srv/./v', /not a normalized path/],
    ['/srv/../etc', /not a normalized path/],
    ['/srv//v', /not a normalized path/],
    ['/srv/v/', /not a normalized path/],
    ['/srv/v\nphase=bound', /control character/],
    ['/srv/v\x1b[2J', /control character/],
    [`/${'a'.repeat(5000)}`, /longer than 4096/],
  ]
  for (const [p, want] of cases) {
    const got = volumePathProblem(p)
    if (want === undefined) t.equal(got, undefined, `${JSON.stringify(p)}: fine`)
    else t.match(got, want, `${JSON.stringify(p).slice(0, 40)}: ${want}`)
  }
})

t.test('a pinned root, and the data dir', async (t) => {
  t.equal(volumePathProblem('/srv/volumes/v1', { root: '/srv/volumes' }), undefined)
  t.match(volumePathProblem('/srv/volumes', { root: '/srv/volumes' }), /not below the class's root/, 'the root itself is no volume')
  t.match(volumePathProblem('/srv/volumes-evil/v1', { root: '/srv/volumes' }), /not below the class's root/, 'a prefix of a name is not below it')
  t.match(volumePathProblem('/var/lib/podctl/volumes/x', { dataDir: '/var/lib/podctl' }), /podctl's data dir \/var\/lib\/podctl or inside it/)
  t.match(volumePathProblem('/var/lib', { dataDir: '/var/lib/podctl' }), /it holds podctl's data dir/)
  t.equal(volumePathProblem('/var/lib/podctl-volumes/x', { dataDir: '/var/lib/podctl' }), undefined)
  for (const bad of ['rel', '/', '/a/../b', '/proc/x']) t.ok(rootParamProblem(bad), `root=${bad} is refused`)
  t.equal(rootParamProblem('/srv'), undefined, 'a top-level directory may be a root: answers are below it')
})

t.test('on disk: a directory reached without a link', async (t) => {
  const dir = fs.realpathSync(t.testdir({ real: { v: {} }, file: 'x' }))
  fs.symlinkSync(path.join(dir, 'real'), path.join(dir, 'link'))
  fs.symlinkSync(path.join(dir, 'real', 'v'), path.join(dir, 'real', 'leaflink'))
  t.equal(answeredPathProblem(path.join(dir, 'real', 'v')), undefined)
  t.match(answeredPathProblem(path.join(dir, 'link', 'v')), new RegExp(`${dir}/link is a symlink`), 'a link on the way')
  t.match(answeredPathProblem(path.join(dir, 'real', 'leaflink')), /leaflink is a symlink/, 'a link at the end')
  t.match(answeredPathProblem(path.join(dir, 'file')), /file is not a directory/)
  t.match(answeredPathProblem(path.join(dir, 'nope')), /nope does not exist/)
})
