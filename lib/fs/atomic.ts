/**
 * Writes that a crash cannot leave half done: a temporary file in the same
 * directory, optionally fsynced, renamed over the target; and the fsync of
 * a directory that makes a rename in it durable.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { describeFailure } from './errors.js'
import { FILE_MODE } from './modes.js'

let count = 0
/**
 * A name part no other process uses now or used before: unique among live
 * processes (pid) and across the pid's reuse (time), with no random bytes,
 * so that reading commands never load node:crypto.
 */
export const uniqueSuffix = (): string => `${process.pid}-${Date.now().toString(36)}-${(count++).toString(36)}`

/** The name of a temporary beside `name`: hidden, and recognizable (`.NAME.tmp-…`) for sweeps. */
export const tmpName = (name: string): string => `.${name}.tmp-${uniqueSuffix()}`

/**
 * Writes `data` to `dir/name` by atomic replace: a temporary file in the
 * same directory, optionally fsynced, renamed over the target.
 */
export const writeFileAtomic = (dir: string, name: string, data: string, opts: { sync?: boolean; mode?: number } = {}): void => {
  const tmp = path.join(dir, tmpName(name))
  const target = path.join(dir, name)
  let fd: number
  try {
    fd = fs.openSync(tmp, 'wx', opts.mode ?? FILE_MODE)
  } catch (er) {
    throw describeFailure(er, `cannot write ${target}`)
  }
  try {
    fs.writeSync(fd, data)
    if (opts.sync) fs.fsyncSync(fd)
  } catch (er) {
    fs.closeSync(fd)
    fs.rmSync(tmp, { force: true })
    throw describeFailure(er, `cannot write ${target}`)
  }
  fs.closeSync(fd)
  try {
    fs.renameSync(tmp, target)
  } catch (er) {
    fs.rmSync(tmp, { force: true })
    throw er
  }
}

/** fsyncs a directory so that a rename in it survives a crash. */
export const syncDir = (dir: string): void => {
  const fd = fs.openSync(dir, 'r')
  try {
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

/**
 * Checks that a file a user names may be written by atomic replace: it is
 * absent (its directory existing) or a regular file. A link, a fifo, a
 * device or a directory there is EUSAGE: podctl neither writes through
 * nor replaces what it did not expect (as root, `/dev/null` or a link to
 * `/etc/shadow`).
 */
export const checkReplaceable = (file: string, what: string): void => {
  let st: fs.Stats | undefined
  try {
    st = fs.lstatSync(file, { throwIfNoEntry: false })
    if (st === undefined && !fs.statSync(path.dirname(path.resolve(file))).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' })
  } catch (er) {
    const code = (er as NodeJS.ErrnoException).code
    const why = code === 'ENOENT' ? 'its directory does not exist' : code === 'ENOTDIR' ? 'its directory is not a directory' : code === 'EACCES' ? 'permission denied' : (er as Error).message
    throw new PodctlError('EUSAGE', `cannot write ${what} ${file}: ${why}`, undefined, { cause: er })
  }
  if (st !== undefined && !st.isFile()) {
    const kind = st.isSymbolicLink() ? 'a symlink' : st.isDirectory() ? 'a directory' : st.isFIFO() ? 'a fifo' : 'a device or socket'
    throw new PodctlError('EUSAGE', `cannot write ${what} ${file}: it is ${kind}, and podctl only creates a file or replaces a regular one`, 'give a path that does not exist, or a regular file')
  }
}

/** Writes a file a user names: checked as checkReplaceable says, then by atomic replace (never through what is there). */
export const writeUserFileAtomic = (file: string, data: string, what: string): void => {
  checkReplaceable(file, what)
  const abs = path.resolve(file)
  try {
    writeFileAtomic(path.dirname(abs), path.basename(abs), data, { mode: 0o644 })
  } catch (er) {
    throw new PodctlError('EFAILED', `cannot write ${what} ${file}: ${(er as Error).message}`, undefined, { cause: er })
  }
}

/** The pid in a temporary's name (tmpName), or undefined for any other name. */
const tmpWriter = (name: string): number | undefined => {
  const m = /^\..+\.tmp-(\d+)-[0-9a-z]+-[0-9a-z]+$/.exec(name)
  return m ? Number(m[1]) : undefined
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (er) {
    return (er as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * Removes the temporaries in `dir` whose writer is dead: what a write
 * killed between its temporary and its rename left. A live writer's (or a
 * live process that took a dead one's pid) is left alone. Returns the
 * names removed.
 */
export const sweepDeadTemporaries = (dir: string): string[] => {
  let names: string[]
  try {
    names = fs.readdirSync(dir)
  } catch {
    return []
  }
  const dead = names.filter((n) => {
    const pid = tmpWriter(n)
    return pid !== undefined && pid !== process.pid && !alive(pid)
  })
  for (const n of dead) fs.rmSync(path.join(dir, n), { force: true })
  return dead
}
