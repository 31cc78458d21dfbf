// Pod UUIDs as users give them (lib/pod/uuid.ts): prefixes checked and
// resolved, UUID files read and written. podFromUUIDString, which uses
// them, is tested with the Pod (test/pod/pod.ts).
import t from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import { normalizeUUIDArg, readUUIDFromFile, uuidOfPrefix, writeUUIDToFile } from '../../lib/pod/uuid.js'
import { mkPod } from '../helpers/common.js'
import { dataDir } from '../helpers/run-util.js'

t.test('normalizeUUIDArg', async (t) => {
  t.equal(normalizeUUIDArg(' 3F2A '), '3f2a')
  t.throws(() => normalizeUUIDArg('zz'), { code: 'EUSAGE', hint: /podctl list/ })
})

t.test('uuidOfPrefix: the one pod a prefix names, in any state dir', async (t) => {
  const dir = dataDir(t)
  mkPod(dir, 'prepared', {}, '3f2a1c0e-0000-4000-8000-000000000001')
  mkPod(dir, 'run', {}, '3f2a1c0e-0000-4000-8000-000000000002')
  const c = mkPod(dir, 'garbage', {}, '7777aaaa-0000-4000-8000-000000000003')
  t.equal(uuidOfPrefix(dir, '7777', '7777'), c)
  t.equal(uuidOfPrefix(dir, '3f2a1c0e-0000-4000-8000-000000000002', 'x'), '3f2a1c0e-0000-4000-8000-000000000002', 'a whole UUID is a prefix of itself')
  t.throws(() => uuidOfPrefix(dir, '3f2a', '3F2A'), { code: 'ENOPOD', message: '"3F2A" is ambiguous: it matches 2 pods: 3f2a1c0e-0000-4000-8000-000000000001, 3f2a1c0e-0000-4000-8000-000000000002' })
  t.throws(() => uuidOfPrefix(dir, 'ab', 'ab'), { code: 'ENOPOD', message: 'no pod matches "ab"' })
})

t.test('UUID files', async (t) => {
  const d = t.testdir({ bad: 'not a uuid\n' })
  const uuid = '8c3b1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'
  writeUUIDToFile(uuid, path.join(d, 'u'))
  t.equal(fs.readFileSync(path.join(d, 'u'), 'utf8'), `${uuid}\n`)
  t.equal(readUUIDFromFile(path.join(d, 'u')), uuid)
  t.throws(() => readUUIDFromFile(path.join(d, 'bad')), { code: 'EUSAGE' })
  t.throws(() => readUUIDFromFile(path.join(d, 'missing')), { code: 'EUSAGE' })
  t.throws(() => writeUUIDToFile(uuid, path.join(d, 'no', 'such', 'dir', 'u')), { code: 'EUSAGE', message: /its directory does not exist/ })
})
