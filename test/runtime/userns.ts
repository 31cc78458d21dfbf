// The private id range of `"userns": "private"` pods (lib/runtime/userns.ts,
// CONTRACT §12): 65,536 ids of the user podctl from /etc/subuid and
// /etc/subgid, or the lines to add. Files of t.testdir() stand in for them.
import t from 'tap'
import path from 'node:path'
import { PRIVATE_RANGE, SUBID_USER, privateIdRange, subordinateRange } from '../../lib/runtime/userns.js'

t.test('subordinateRange: the first range of at least 65536 ids of the user, by name or uid', async (t) => {
  const text = ['alice:100000:65536', 'podctl:200000:1000', '', '  podctl:300000:65536  ', 'podctl:400000:65536', '# comment', 'podctlx:1:65536'].join('\n')
  t.equal(subordinateRange(text, ['podctl']), 300000, 'a range too small is passed over; spaces around a line are fine; the first that fits wins')
  t.equal(subordinateRange('999:700000:131072\n', ['podctl', '999']), 700000, 'an entry by uid')
  t.equal(subordinateRange(text, ['bob']), undefined, 'no entry: none')
  t.equal(subordinateRange('podctl:0:65536\n', ['podctl']), undefined, 'a range from 0 would map the host root: none')
  t.equal(subordinateRange('podctl:abc:65536\npodctl:5:x\n', ['podctl']), undefined, 'numbers that are not: none')
  t.equal(subordinateRange('', ['podctl']), undefined, 'an empty file: none')
  t.equal(PRIVATE_RANGE, 65536)
  t.equal(SUBID_USER, 'podctl')
})

t.test('privateIdRange: the range of both files as an id map', async (t) => {
  const dir = t.testdir({ subuid: 'podctl:500000000:65536\n', subgid: 'other:1:65536\npodctl:600000000:65536\n', none: 'alice:100000:65536\n' })
  t.strictSame(privateIdRange(path.join(dir, 'subuid'), path.join(dir, 'subgid')), {
    uid: [{ containerID: 0, hostID: 500000000, size: 65536 }],
    gid: [{ containerID: 0, hostID: 600000000, size: 65536 }],
  })
  t.throws(() => privateIdRange(path.join(dir, 'none'), path.join(dir, 'subgid')), {
    name: 'PodctlError',
    code: 'EFAILED',
    message: `a pod with "userns": "private" needs 65536 subordinate ids of the user podctl, and ${path.join(dir, 'none')} gives it none`,
    hint: `add a range no other user has, such as: echo podctl:500000000:65536 | tee -a ${path.join(dir, 'none')} ${path.join(dir, 'subgid')}`,
  }, 'no entry in subuid: EFAILED (exit 1) naming that file, with the line to add')
  t.throws(() => privateIdRange(path.join(dir, 'missing'), path.join(dir, 'none')), {
    code: 'EFAILED',
    message: new RegExp(`${path.join(dir, 'missing')} and ${path.join(dir, 'none')} gives? it none`),
  }, 'a missing file and one without the entry: both named')
})
