// The lock's owner record (lib/lock/owner.ts): format, and how a same-host
// reader decides at once whether the holder lives (pid + start time +
// boot id), with real processes.
import t from 'tap'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { REMOTE_STALE_MS, formatOwner, hostHash, ownOwner, ownerAlive, parseOwner, type Owner } from '../../lib/lock/owner.js'
import { pollUntil } from '../helpers/common.js'
import { procStat } from '../helpers/run-util.js'

/** Field 22 of /proc/<pid>/stat, read independently of the code under test. */
const startOf = (pid: number): string => {
  const s = fs.readFileSync(`/proc/${pid}/stat`, 'latin1')
  const fields = s.slice(s.lastIndexOf(')') + 2).split(' ')
  return fields[19]!
}

/** Starts a long sleep under `name` (its comm) and kills it at teardown. */
const sleeper = (t: Tap, name = 'sleep') => {
  const dir = t.testdir({})
  const exe = path.join(dir, name)
  fs.symlinkSync('/bin/sleep', exe)
  const p = spawn(exe, ['600'], { stdio: 'ignore' })
  const exited = new Promise((r) => p.on('exit', r))
  t.teardown(async () => {
    if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL')
    await exited
  })
  return { proc: p, pid: p.pid!, exited }
}
type Tap = Parameters<Parameters<typeof t.test>[0]>[0]

const never = (): number | undefined => {
  throw new Error('the lock mtime must not be consulted for a same-host record')
}

t.test('format and parse', async (t) => {
  const o: Owner = { pid: 42, start: '12345', boot: '0a1b2c3d', host: 'e5f6a7b8' }
  const s = formatOwner(o)
  t.equal(s, 'podctl2 42 12345 0a1b2c3d e5f6a7b8')
  t.strictSame(parseOwner(s), o)
  t.strictSame(parseOwner(formatOwner({ ...o, start: '' })), { ...o, start: '' }, 'no start time (no /proc) round-trips')
  for (const bad of ['', 'podctl3 1 1 x y', 'podctl2 x 1 x y', 'podctl2 1 1 x y extra', 'podctl-owner/1 pid=x start=1 boot=x host=y', 'junk']) {
    t.equal(parseOwner(bad), undefined, JSON.stringify(bad))
  }
})

t.test('the record fits in an inode (a fast symlink: under 60 bytes)', async (t) => {
  const worst: Owner = { pid: 4194304, start: '999999999999', boot: 'ffffffff', host: 'ffffffff' }
  t.ok(formatOwner(worst).length < 60, `${formatOwner(worst).length} bytes`)
  t.ok(formatOwner(ownOwner()).length < 60)
})

t.test('ownOwner describes this process', async (t) => {
  const me = ownOwner()
  t.equal(me.pid, process.pid)
  t.equal(me.start, startOf(process.pid), 'start time from /proc/self/stat')
  t.equal(me.boot, fs.readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim().replace(/-/g, '').slice(0, 8), 'the first 8 hex digits of the boot id')
  t.match(me.boot, /^[0-9a-f]{8}$/)
  t.equal(me.host, hostHash(os.hostname()))
  t.notMatch(formatOwner(me), /\s.*\s.*\s.*\s.*\s/, 'the record has exactly five fields')
  t.strictSame(parseOwner(formatOwner(me)), me, 'round trip')
  t.equal(ownOwner(), me, 'cached')
})

t.test('hostHash tells host names apart and is stable', async (t) => {
  t.equal(hostHash('a'), hostHash('a'))
  t.not(hostHash('a'), hostHash('b'))
  t.match(hostHash(''), /^[0-9a-f]{8}$/)
})

t.test('a same-host record: alive exactly while that process runs', async (t) => {
  const me = ownOwner()
  t.equal(ownerAlive(me, never), true, 'this process')
  const s = sleeper(t)
  const o: Owner = { ...me, pid: s.pid, start: startOf(s.pid) }
  t.equal(ownerAlive(o, never), true, 'a live child')
  t.equal(ownerAlive({ ...o, start: String(Number(o.start) + 1) }, never), false, 'same pid, other start time: a reused pid')
  t.equal(ownerAlive({ ...o, boot: 'another-boot' }, never), false, 'another boot: the machine rebooted')
  s.proc.kill('SIGKILL')
  await s.exited
  t.equal(ownerAlive(o, never), false, 'dead right after its exit event')
})

t.test('a stopped process is alive; a zombie is dead', async (t) => {
  const s = sleeper(t)
  const o: Owner = { ...ownOwner(), pid: s.pid, start: startOf(s.pid) }
  s.proc.kill('SIGSTOP')
  await pollUntil('the holder to stop', () => procStat(s.pid)?.state === 'T')
  t.equal(ownerAlive(o, never), true, 'stopped: alive')
  s.proc.kill('SIGCONT')
  // A zombie: a child of a shell that execs sleep and never reaps it.
  const sh = spawn('/bin/sh', ['-c', 'sleep 600 & echo $!; exec sleep 600'], { stdio: ['ignore', 'pipe', 'ignore'] })
  const shExited = new Promise((r) => sh.on('exit', r))
  t.teardown(async () => {
    if (sh.exitCode === null && sh.signalCode === null) sh.kill('SIGKILL')
    await shExited
  })
  const pid = Number(await new Promise<string>((r) => sh.stdout!.setEncoding('utf8').once('data', (d: string) => r(d.trim()))))
  t.teardown(() => {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // already gone
    }
  })
  const z: Owner = { ...ownOwner(), pid, start: startOf(pid) }
  t.equal(ownerAlive(z, never), true, 'the grandchild lives')
  process.kill(pid, 'SIGKILL')
  await pollUntil('the holder to be a zombie', () => procStat(pid)?.state === 'Z')
  t.equal(ownerAlive(z, never), false, 'a zombie holds nothing')
})

t.test('a process whose name has spaces and parentheses', async (t) => {
  const s = sleeper(t, 'a) b (c')
  const comm = fs.readFileSync(`/proc/${s.pid}/comm`, 'latin1').trim()
  t.equal(comm, 'a) b (c', 'the command name really has them')
  const o: Owner = { ...ownOwner(), pid: s.pid, start: startOf(s.pid) }
  t.equal(ownerAlive(o, never), true, 'its start time is parsed from after the last ")"')
  t.equal(ownerAlive({ ...o, start: String(Number(o.start) + 1) }, never), false)
})

t.test('a record from another host is judged by the lock mtime', async (t) => {
  const remote: Owner = { pid: 1, start: '1', boot: 'x', host: 'some-other-host' }
  const now = Date.now()
  t.equal(ownerAlive(remote, () => now - 1000, now), true, 'fresh mtime: alive')
  t.equal(ownerAlive(remote, () => now - REMOTE_STALE_MS + 1, now), true, 'just inside the stale time')
  t.equal(ownerAlive(remote, () => now - REMOTE_STALE_MS, now), false, 'at the stale time: dead')
  t.equal(ownerAlive(remote, () => now - 3600_000, now), false, 'an hour old: dead')
  t.equal(ownerAlive(remote, () => undefined, now), false, 'no lock dir: dead')
})
