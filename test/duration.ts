// Go's duration syntax (lib/duration.ts), which rkt users type.
import t from 'tap'
import { formatDuration, parseDuration, parseNonNegativeDuration } from '../lib/duration.js'
import { PodctlError } from '../lib/errors.js'

t.test('parses Go durations to milliseconds', async (t) => {
  const cases: Array<[string, number]> = [
    ['0', 0],
    ['0s', 0],
    ['90s', 90_000],
    ['30m', 1_800_000],
    ['24h', 86_400_000],
    ['1h30m', 5_400_000],
    ['1.5h', 5_400_000],
    ['.5s', 500],
    ['1.s', 1000],
    ['300ms', 300],
    ['2h45m10s', 9_910_000],
    ['1m0s', 60_000],
    ['1h1h', 7_200_000],
    ['-1s', -1000],
    ['+5s', 5000],
    ['-1.5h', -5_400_000],
    ['1500us', 2],
    ['1500µs', 2],
    ['1500μs', 2],
    ['2000000ns', 2],
    ['400us', 0],
  ]
  for (const [s, ms] of cases) t.equal(parseDuration(s), ms, JSON.stringify(s))
})

t.test('a signed zero, as Go accepts it', async (t) => {
  // Go: "Special case: if all that is left is "0", this is zero", after the sign.
  for (const s of ['+0', '-0']) {
    let ms: number | undefined
    let err: unknown
    try {
      ms = parseDuration(s)
    } catch (er) {
      err = er
    }
    t.equal(err, undefined, `${s} is accepted`)
    t.ok(Object.is(ms, 0), `${s} is zero`)
  }
})

t.test('refuses what Go refuses, with EUSAGE', async (t) => {
  for (const s of ['', ' ', '5', '1.5', '5x', 'h', 's', '1h-', '1h-1m', '-', '+', '--1s', '1 h', '1h 30m', 'one', '1e3s', '1H', '1S', '.s', '1h.', '0x10s', 's1', '∞s', 'NaNs']) {
    const er = t.throws(() => parseDuration(s), JSON.stringify(s)) as PodctlError
    t.type(er, PodctlError, `${JSON.stringify(s)}: a PodctlError`)
    t.equal(er.code, 'EUSAGE', `${JSON.stringify(s)}: EUSAGE`)
    t.equal(er.exitCode, 2)
    t.match(er.message, `invalid duration ${JSON.stringify(s)}: `, `${JSON.stringify(s)}: the message quotes the input`)
    t.match(er.hint, /90s, 30m, 1h30m or 0s/)
  }
})

t.test('messages say what is wrong and name the option', async (t) => {
  t.throws(() => parseDuration('', '--grace-period'), { message: 'invalid --grace-period "": it is empty' })
  t.throws(() => parseDuration('5'), { message: 'invalid duration "5": a unit is missing (ns, us, ms, s, m, h)' })
  t.throws(() => parseDuration('1h5'), { message: 'invalid duration "1h5": a unit is missing (ns, us, ms, s, m, h)' })
  t.throws(() => parseDuration('5x'), { message: 'invalid duration "5x": not a duration' })
  t.throws(() => parseDuration(`${'9'.repeat(400)}h`), { code: 'EUSAGE', message: /too large/ })
})

t.test('parseNonNegativeDuration', async (t) => {
  t.equal(parseNonNegativeDuration('0s'), 0)
  t.equal(parseNonNegativeDuration('1m'), 60_000)
  t.throws(() => parseNonNegativeDuration('-1s', '--timeout'), { code: 'EUSAGE', message: 'invalid --timeout "-1s": must not be negative' })
  t.throws(() => parseNonNegativeDuration('x'), { code: 'EUSAGE' })
})

t.test('formatDuration writes Go style, and parses back', async (t) => {
  const cases: Array<[number, string]> = [
    [0, '0s'],
    [90, '90ms'],
    [999, '999ms'],
    [1000, '1s'],
    [90_000, '1m30s'],
    [3_600_000, '1h0m0s'],
    [5_400_000, '1h30m0s'],
    [9_910_000, '2h45m10s'],
  ]
  for (const [ms, s] of cases) {
    t.equal(formatDuration(ms), s, `${ms} ms`)
    t.equal(parseDuration(s), ms, `${s} parses back`)
  }
})
