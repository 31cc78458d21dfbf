/**
 * The data dir (CONTRACT §1): where it is, what is under it, and creating
 * it on first use. Pure path arithmetic except ensureDataDir.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { validate as validateUUID, version as uuidVersion } from 'uuid'
import { PodctlError, errnoCode } from '../errors.js'
import { fsExtra } from '../fs/extra.js'
import { DIR_MODE } from '../fs/modes.js'
import { untrustedOnPath, type Untrusted } from '../fs/trust.js'

/** The six state directories, in lifecycle order. */
export const POD_DIRS = ['embryo', 'prepare', 'prepared', 'run', 'exited-garbage', 'garbage'] as const
export type PodDir = (typeof POD_DIRS)[number]

/** Version of the on-disk layout; bumped when an old podctl could misread it. */
export const FORMAT_VERSION = 1

/** Resolves the data dir: --dir > PODCTL_DIR > /var/lib/podctl for root > XDG. */
export const resolveDataDir = (
  flag?: string,
  env: NodeJS.ProcessEnv = process.env,
  uid: number = process.getuid?.() ?? -1,
): string => {
  // An empty value is a mistake in a script (an unset variable), not a
  // wish for the default: falling back silently would act on another data dir.
  if (flag === '') throw new PodctlError('EUSAGE', '--dir is empty', 'give a data dir, or leave --dir out for the default')
  if (flag !== undefined) return path.resolve(flag)
  if (env.PODCTL_DIR === '') throw new PodctlError('EUSAGE', 'PODCTL_DIR is set but empty', 'unset it for the default data dir, or give one')
  if (env.PODCTL_DIR !== undefined) return path.resolve(env.PODCTL_DIR)
  if (uid === 0) return '/var/lib/podctl'
  const xdg = env.XDG_DATA_HOME || path.join(env.HOME || os.homedir(), '.local', 'share')
  return path.resolve(xdg, 'podctl')
}

export const stateDirPath = (dataDir: string, dir: PodDir): string => path.join(dataDir, 'pods', dir)
// A pod UUID is one plain path component, so joining it by hand gives
// path.join's result without its normalization, which list and gc pay per pod.
export const podPath = (dataDir: string, dir: PodDir, uuid: string): string => `${stateDirPath(dataDir, dir)}/${uuid}`
export const locksDir = (dataDir: string): string => path.join(dataDir, 'locks')
const LAYOUT = ['pods', ...POD_DIRS.map((d) => `pods/${d}`), 'locks']

const checked = new Set<string>()

/**
 * Creates the data dir layout if it is missing (dirs 0750) and checks that
 * it is a writable directory. Idempotent and safe to race: mkdir's EEXIST
 * is success. Cached per process so hot paths pay for it once.
 */
export const ensureDataDir = (dataDir: string): void => {
  if (checked.has(dataDir)) return
  checkDataDirTrust(dataDir)
  try {
    const st = fs.statSync(dataDir, { throwIfNoEntry: false })
    if (st && !st.isDirectory()) throw notADirectory(dataDir)
    if (!st) fsExtra().mkdirsSync(dataDir, DIR_MODE)
    for (const sub of LAYOUT) {
      try {
        fs.mkdirSync(path.join(dataDir, sub), { mode: DIR_MODE })
      } catch (er) {
        if (errnoCode(er) !== 'EEXIST') throw er
      }
    }
    checkLayout(dataDir)
    fs.accessSync(path.join(dataDir, 'pods'), fs.constants.W_OK)
    fs.accessSync(locksDir(dataDir), fs.constants.W_OK)
  } catch (er) {
    if (er instanceof PodctlError) throw er
    if (isWriteRefused(er)) throw notWritable(dataDir, er)
    if (errnoCode(er) === 'ENOTDIR') throw notADirectory(dataDir, er)
    throw new PodctlError('EFAILED', `cannot create data dir ${dataDir}: ${(er as Error).message}`, undefined, { cause: er })
  }
  checked.add(dataDir)
}

/**
 * Checks a data dir for reading without creating it. Returns false when it
 * does not exist yet: a reader then sees no pods.
 */
export const dataDirExists = (dataDir: string): boolean => {
  let st: fs.Stats | undefined
  try {
    st = fs.statSync(dataDir, { throwIfNoEntry: false })
  } catch (er) {
    // A data dir below a regular file.
    if (errnoCode(er) === 'ENOTDIR') throw notADirectory(dataDir, er)
    throw er
  }
  if (!st) return false
  if (!st.isDirectory()) throw notADirectory(dataDir)
  return true
}

const notADirectory = (dataDir: string, cause?: unknown): PodctlError =>
  new PodctlError('EFAILED', `data dir ${dataDir} is not a directory`, 'point --dir or PODCTL_DIR at a directory', { cause })

/** The error for a data dir podctl may not write to. */
export const notWritable = (dataDir: string, cause: unknown): PodctlError =>
  new PodctlError('EFAILED', `data dir ${dataDir} is not writable (${errnoCode(cause)})`, 'choose another with --dir or PODCTL_DIR, or fix its permissions', {
    cause,
  })

/** Whether an error is the file system refusing a write. */
export const isWriteRefused = (er: unknown): boolean => {
  const code = errnoCode(er)
  return code === 'EACCES' || code === 'EPERM' || code === 'EROFS'
}

/** Whether `s` is a pod UUID (RFC 4122 version 4, lower case): the only names a state dir may hold. */
export const isPodUUID = (s: string): boolean => s.length === 36 && validateUUID(s) && uuidVersion(s) === 4 && !/[A-F]/.test(s)

/**
 * Every directory of a data dir that podctl walks or writes through: each
 * must be a real directory. The pod room's own, then those that the rooms
 * above it registered (registerDataDirFolders).
 */
const CHECKED: string[] = [...LAYOUT]

/**
 * Adds directories of the data dir that a room above this one walks or
 * writes through (volumes/, images/, …) to what checkLayout checks. Each
 * room registers its own when its layout module is loaded, so a process
 * that can walk them checks them; this room knows none of them.
 */
export const registerDataDirFolders = (...folders: string[]): void => {
  for (const f of folders) if (!CHECKED.includes(f)) CHECKED.push(f)
}

/**
 * Checks that what the data dir holds is what podctl made: each of its
 * directories (the state dirs, locks/, and those registered) is a real
 * directory, not a symlink or a file, or absent. O(1): one lstat each.
 * EFAILED names the first that is not (CONTRACT §10).
 */
export const checkLayout = (dataDir: string): void => {
  for (const sub of CHECKED) {
    const p = path.join(dataDir, sub)
    let st: fs.Stats | undefined
    try {
      st = fs.lstatSync(p, { throwIfNoEntry: false })
    } catch (er) {
      if (errnoCode(er) === 'ENOTDIR') throw notADirectory(dataDir, er)
      throw er
    }
    if (st !== undefined && !st.isDirectory()) {
      throw new PodctlError('EFAILED', `${p} is ${st.isSymbolicLink() ? 'a symlink' : 'not a directory'}: data dir ${dataDir} is damaged, and podctl never follows or deletes through it`, 'move that entry away (after checking what put it there) and run the command again')
    }
    if (st === undefined && sub === 'pods') return // a data dir not made yet, or made by hand: nothing below to check
  }
}

const trusted = new Map<string, Untrusted | undefined>()

/** What makes `dataDir` untrustworthy for this process's user, if anything (cached). */
const untrusted = (dataDir: string): Untrusted | undefined => {
  if (!trusted.has(dataDir)) trusted.set(dataDir, untrustedOnPath(dataDir, process.geteuid?.() ?? 0))
  return trusted.get(dataDir)
}

/**
 * Checks, before a command writes or deletes, that nobody but this user
 * and root can change the data dir or the way to it (lib/fs/trust.ts).
 * EFAILED names the path and the fix.
 */
export const checkDataDirTrust = (dataDir: string): void => {
  const u = untrusted(dataDir)
  if (u === undefined) return
  throw new PodctlError('EFAILED', `data dir ${dataDir} is not safe to write: ${u.path} can be changed by someone else (${u.why})`, `fix it: ${u.fix}, or choose another data dir with --dir or PODCTL_DIR`)
}

/**
 * Whether podctl may act on what the data dir says (kill the processes its
 * records name): only when nobody else could have written it.
 */
export const dataDirTrusted = (dataDir: string): boolean => untrusted(dataDir) === undefined
