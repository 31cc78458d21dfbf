/**
 * Writes that a crash cannot leave half done: a temporary file in the same
 * directory, optionally fsynced, renamed over the target; and the fsync of
 * a directory that makes a rename in it durable.
 */
import fs from 'node:fs'
import path from 'node:path'
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
  const fd = fs.openSync(tmp, 'wx', opts.mode ?? FILE_MODE)
  try {
    fs.writeSync(fd, data)
    if (opts.sync) fs.fsyncSync(fd)
  } catch (er) {
    fs.closeSync(fd)
    fs.rmSync(tmp, { force: true })
    throw er
  }
  fs.closeSync(fd)
  try {
    fs.renameSync(tmp, path.join(dir, name))
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
