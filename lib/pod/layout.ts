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
  if (flag !== undefined && flag !== '') return path.resolve(flag)
  if (env.PODCTL_DIR) return path.resolve(env.PODCTL_DIR)
  if (uid === 0) return '/var/lib/podctl'
  const xdg = env.XDG_DATA_HOME || path.join(env.HOME || os.homedir(), '.local', 'share')
  return path.resolve(xdg, 'podctl')
}

export const stateDirPath = (dataDir: string, dir: PodDir): string => path.join(dataDir, 'pods', dir)
export const podPath = (dataDir: string, dir: PodDir, uuid: string): string =>
  path.join(dataDir, 'pods', dir, uuid)
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
  try {
    const st = fs.statSync(dataDir, { throwIfNoEntry: false })
    if (st && !st.isDirectory()) throw notADirectory(dataDir)
    if (!st) fsExtra().mkdirsSync(dataDir, DIR_MODE)
    for (const sub of LAYOUT) {
      try {
        fs.mkdirSync(path.join(dataDir, sub), { mode: DIR_MODE })
      } catch (er) {
        if (errnoCode(er) !== 'EEXIST') throw er
        const sub_ = path.join(dataDir, sub)
        if (!fs.lstatSync(sub_).isDirectory()) {
          throw new PodctlError('EFAILED', `${sub_} is not a directory: data dir ${dataDir} is damaged`, 'move that entry away and run the command again')
        }
      }
    }
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
