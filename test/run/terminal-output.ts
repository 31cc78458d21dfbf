// Foreground output (lib/run/terminal-output.ts): prefixes and partial lines.
import t from 'tap'
import { terminalOutput } from '../../lib/run/terminal-output.js'

/** A stand-in for podctl's stdout or stderr that keeps what is written. */
const fake = () => {
  const out: string[] = []
  return { out, write: (s: string | Uint8Array) => void out.push(typeof s === 'string' ? s : Buffer.from(s).toString()) }
}

t.test('one app: chunks pass through untouched', async (t) => {
  const o = fake()
  const e = fake()
  const sink = terminalOutput(false, { stdout: o.write, stderr: e.write })
  sink.write('a', 'stdout', Buffer.from('par'))
  sink.write('a', 'stdout', Buffer.from('tial\nx'))
  sink.write('a', 'stderr', Buffer.from('err\n'))
  sink.flush?.()
  t.equal(o.out.join(''), 'partial\nx')
  t.equal(e.out.join(''), 'err\n')
})

t.test('several apps: whole lines with "[name] ", partial lines held until complete', async (t) => {
  const o = fake()
  const e = fake()
  const sink = terminalOutput(true, { stdout: o.write, stderr: e.write })
  sink.write('web', 'stdout', Buffer.from('hel'))
  sink.write('db', 'stdout', Buffer.from('db line\n'))
  sink.write('web', 'stdout', Buffer.from('lo\nwor'))
  sink.write('web', 'stderr', Buffer.from('oops\n'))
  t.same(o.out.join(''), '[db] db line\n[web] hello\n', 'lines of two apps never mix')
  sink.write('web', 'stdout', Buffer.from('ld'))
  sink.flush?.()
  t.equal(o.out.join(''), '[db] db line\n[web] hello\n[web] world\n', 'flush completes the held partial line')
  t.equal(e.out.join(''), '[web] oops\n')
  sink.flush?.()
  t.equal(o.out.join(''), '[db] db line\n[web] hello\n[web] world\n', 'a second flush writes nothing')
})

t.test('notices go to stderr as podctl messages', async (t) => {
  const o = fake()
  const e = fake()
  terminalOutput(true, { stdout: o.write, stderr: e.write }).notice('app x could not start: ENOENT')
  t.equal(e.out.join(''), 'podctl: app x could not start: ENOENT\n')
  t.same(o.out, [])
})
