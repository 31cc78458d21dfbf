// PodctlError and the exit codes of CONTRACT §4 (lib/errors.ts).
import t from 'tap'
import { ErrImmutable, IMMUTABLE_MESSAGE, PodChangedStateError, PodctlError, bug, errnoCode } from '../lib/errors.js'

t.test('exit codes', async (t) => {
  const want = { EUSAGE: 2, ENOPOD: 3, EBADSTATE: 4, ECHANGED: 4, EIMMUTABLE: 4, ETIMEOUT: 5, EFAILED: 1 } as const
  for (const [code, exit] of Object.entries(want)) {
    t.equal(new PodctlError(code as keyof typeof want, 'm').exitCode, exit, code)
  }
})

t.test('PodctlError carries code, message, hint and cause', async (t) => {
  const cause = new Error('inner')
  const e = new PodctlError('EFAILED', 'what happened', 'what to do', { cause })
  t.type(e, Error)
  t.equal(e.name, 'PodctlError')
  t.equal(e.message, 'what happened')
  t.equal(e.hint, 'what to do')
  t.equal(e.cause, cause)
  t.equal(new PodctlError('EFAILED', 'x').hint, undefined, 'no hint when there is none')
})

t.test('PodChangedStateError', async (t) => {
  const u = '8c3b1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a'
  const e = new PodChangedStateError(u)
  t.type(e, PodctlError)
  t.equal(e.code, 'ECHANGED')
  t.equal(e.exitCode, 4)
  t.equal(e.uuid, u)
  t.equal(e.message, `pod ${u} changed state`)
})

t.test('ErrImmutable keeps rkt\'s message', async (t) => {
  const e = new ErrImmutable('u')
  t.equal(IMMUTABLE_MESSAGE, 'immutable pod')
  t.match(e.message, /^immutable pod: /)
  t.equal(e.code, 'EIMMUTABLE')
  t.equal(e.exitCode, 4)
  t.ok(e.hint)
})

t.test('bug and errnoCode', async (t) => {
  t.equal(bug('x').message, 'bug: x')
  t.equal(errnoCode(Object.assign(new Error(), { code: 'ENOENT' })), 'ENOENT')
  t.equal(errnoCode(new Error()), undefined)
  t.equal(errnoCode(null), undefined)
  t.equal(errnoCode({ code: 1 }), undefined)
})
