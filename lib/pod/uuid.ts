/**
 * Pod UUIDs as users hand them in (rkt's pkg/pod/uuid.go): a full UUID or
 * an unambiguous prefix of one, and the UUID files that --uuid-file-save
 * writes and --uuid-file reads.
 */
import fs from 'node:fs'
import { PodctlError, unlessNotFound } from '../errors.js'
import { checkReplaceable, writeUserFileAtomic } from '../fs/atomic.js'
import { MAX_UUID_FILE_BYTES, readUserFile } from '../fs/read.js'
import { POD_DIRS, dataDirExists, isPodUUID, stateDirPath } from './layout.js'

const PREFIX_RE = /^[0-9a-f-]{1,36}$/

/** Checks a UUID or prefix given by a user; returns it in lower case. */
export const normalizeUUIDArg = (s: string): string => {
  const u = s.trim().toLowerCase()
  if (!PREFIX_RE.test(u) || u.replace(/-/g, '') === '') {
    throw new PodctlError('EUSAGE', `${JSON.stringify(s)} is not a pod UUID or a prefix of one`, 'UUIDs look like 8c3b1f0e-2a4d-4c4b-9a57-0d7c4b1e2f3a; see podctl list')
  }
  if (u.length === 36 && !isPodUUID(u)) {
    throw new PodctlError('EUSAGE', `${JSON.stringify(s)} is not a valid pod UUID`, 'see podctl list')
  }
  return u
}

/** The UUIDs in the state dirs that start with `prefix`. */
const matchPrefix = (dataDir: string, prefix: string): string[] => {
  const found = new Set<string>()
  for (const dir of POD_DIRS) {
    for (const n of unlessNotFound(() => fs.readdirSync(stateDirPath(dataDir, dir))) ?? []) if (n.startsWith(prefix) && isPodUUID(n)) found.add(n)
  }
  return [...found].sort()
}

/**
 * The one pod UUID that starts with `prefix` (normalized; `given` is what
 * the user typed, for messages), by a scan of the state dirs. Throws ENOPOD
 * for no match or an ambiguous prefix, listing the candidates.
 */
export const uuidOfPrefix = (dataDir: string, prefix: string, given: string): string => {
  const matches = matchPrefix(dataDir, prefix)
  if (matches.length === 0) {
    dataDirExists(dataDir) // a data dir that is a file says so, not "no pod"
    throw new PodctlError('ENOPOD', `no pod matches ${JSON.stringify(given)}`, 'see podctl list')
  }
  if (matches.length > 1) {
    throw new PodctlError('ENOPOD', `${JSON.stringify(given)} is ambiguous: it matches ${matches.length} pods: ${matches.join(', ')}`, 'give more characters of the UUID')
  }
  return matches[0]!
}

/** Reads a UUID from a file (as written by --uuid-file-save). */
export const readUUIDFromFile = (file: string): string => {
  const u = readUserFile(file, MAX_UUID_FILE_BYTES, 'UUID file').toString('utf8').trim()
  if (!isPodUUID(u)) throw new PodctlError('EUSAGE', `UUID file ${file} does not hold a pod UUID`)
  return u
}

/** Checks, before a pod is made, that --uuid-file-save can be written (lib/fs/atomic.ts checkReplaceable). */
export const checkUUIDFileSave = (file: string): void => checkReplaceable(file, 'UUID file')

/** Writes a UUID to a file, atomically, for scripts (--uuid-file-save). */
export const writeUUIDToFile = (uuid: string, file: string): void => writeUserFileAtomic(file, `${uuid}\n`, 'UUID file')
