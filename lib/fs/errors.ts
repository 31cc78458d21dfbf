/**
 * What a system error means to a user, and what to do about it: the
 * errors of a machine that ran out of something (disk, file descriptors,
 * processes, memory) or that refuses (a read-only file system, a
 * permission). podctl says these in one line naming what it was doing and
 * where, and a second saying what to do, never with a stack trace
 * (CONTRACT §10).
 */
import { PodctlError, errnoCode, isPodctlError } from '../errors.js'

const REASONS: Record<string, [what: string, fix: string]> = {
  ENOSPC: ['no space left on the device', 'free some space there (podctl gc removes exited pods), then try again'],
  EDQUOT: ['the disk quota is exceeded', 'free some space or raise the quota, then try again'],
  EMFILE: ['too many open files for this process', 'raise the limit (ulimit -n), or run fewer apps in one pod'],
  ENFILE: ['too many open files on this machine', 'close some programs or raise fs.file-max, then try again'],
  EAGAIN: ['too many processes, or a resource is busy', 'raise the limit (ulimit -u) or wait, then try again'],
  ENOMEM: ['out of memory', 'free some memory, or run fewer apps at once'],
  EROFS: ['the file system is read-only', 'use a data dir on a writable file system'],
  EACCES: ['permission denied', 'run podctl as the owner of the data dir, or fix its permissions'],
  EPERM: ['operation not permitted', 'run podctl as the owner of the data dir (or root)'],
  ENAMETOOLONG: ['a name or path is too long', 'use a shorter data dir, pod, app, volume or file name'],
  E2BIG: ['the arguments and environment are too large', 'pass less in the environment, or use a files volume for large values'],
  EIO: ['an I/O error on the device', 'check the disk (dmesg), then try again'],
}

/** Whether `er` is one of the system errors above (a machine out of something, or refusing). */
export const isResourceError = (er: unknown): boolean => {
  const code = errnoCode(er)
  return code !== undefined && code in REASONS
}

/** The one line that says what `code` means, and what to do. */
export const resourceReason = (code: string): { what: string; fix: string } | undefined => {
  const r = REASONS[code]
  return r && { what: r[0], fix: r[1] }
}

/**
 * `er` as a PodctlError saying what podctl was doing (`doing`, e.g.
 * "cannot write /data/pods/run/X/pod.json") and what the error means; a
 * PodctlError passes through; an error that is not a known system error
 * too (it is a bug, and keeps its stack).
 */
export const describeFailure = (er: unknown, doing: string): unknown => {
  if (isPodctlError(er)) return er
  const code = errnoCode(er)
  const r = code === undefined ? undefined : REASONS[code]
  if (r === undefined) return er
  return new PodctlError('EFAILED', `${doing}: ${r[0]} (${code})`, r[1], { cause: er })
}
