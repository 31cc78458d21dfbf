/**
 * Kubernetes' AtomicWriter: a reader of the directory sees the old set of files or the new one, never a
 * mix, as an update swaps the `..data` link with one rename(2) (steps 1 to 11 of Documentation/devel/volumes.md).
 * Names starting with ".." are the writer's own; callers serialize writes (the operation executor does).
 * Nothing it reads or removes is reached through a link it did not make.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError } from '../errors.js'
import { mkdirsInside } from '../fs/inside.js'
import { removeTree } from '../fs/remove-tree.js'
import { unlessError } from '../storage/objects.js'
import { projectedPathProblem } from './manifest.js'

export const DATA_DIR_NAME = '..data'
export const NEW_DATA_DIR_NAME = '..data_tmp'
/** Default mode of a projected file. */
export const DEFAULT_FILE_MODE = 0o644
/** Directories of a projected volume, as the kubelet's: each file's mode says which apps read it, the pod dir who reaches it. */
export const PROJECTED_DIR_MODE = 0o755

/** One file of a payload. */
export interface FileProjection {
  data: Buffer
  mode: number
}

export type Payload = Map<string, FileProjection>

/** A timestamped directory name as `..data` may point at: "..<stamp>", one component. */
const isTsDirName = (s: string): boolean => /^\.\.\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_\d{2}\.[^/]+$/.test(s)

const pad = (n: number, w = 2): string => String(n).padStart(w, '0')
const stamp = (d = new Date()): string =>
  `${d.getUTCFullYear()}_${pad(d.getUTCMonth() + 1)}_${pad(d.getUTCDate())}_${pad(d.getUTCHours())}_${pad(d.getUTCMinutes())}_${pad(d.getUTCSeconds())}`

/** How long a timestamped directory's name is: "..<stamp>." and mkdtemp's six characters. */
export const TS_DIR_NAME_BYTES = `..${stamp()}.XXXXXX`.length

/** "a/b/c" → "a", "a/b": the directories a payload path needs. */
const dirsOf = (p: string): string[] => p.split('/').slice(0, -1).map((_, i, segs) => segs.slice(0, i + 1).join('/'))

/** Problems of a payload: each path as the manifest's files allow, no file that is also a directory. */
export const payloadProblems = (paths: Iterable<string>): { path: string; problem: string }[] => {
  const all = new Set(paths)
  return [...all].flatMap((p) => {
    const bad = projectedPathProblem(p)
    if (bad) return [{ path: p, problem: bad }]
    return dirsOf(p).flatMap((dir) => (all.has(dir) ? [{ path: p, problem: `conflicts with ${JSON.stringify(dir)}: a path cannot be both a file and a directory` }] : []))
  })
}

/** Throws EUSAGE naming every bad path of a payload (payloadProblems). */
export const checkPayloadPaths = (paths: Iterable<string>, hint?: string): void => {
  const problems = payloadProblems(paths)
  if (problems.length > 0) throw new PodctlError('EUSAGE', `invalid file paths: ${problems.map((p) => `${JSON.stringify(p.path)}: ${p.problem}`).join('; ')}`, hint)
}

export class AtomicWriter {
  readonly targetDir: string

  /** The target directory must exist. */
  constructor(targetDir: string) {
    const st = fs.lstatSync(targetDir, { throwIfNoEntry: false })
    if (!st?.isDirectory()) throw new PodctlError('EFAILED', `cannot project files into ${targetDir}: it is not a directory`)
    this.targetDir = targetDir
  }

  /** The current timestamped directory's name, if `..data` points at a real one. */
  currentTsDir(): string | undefined {
    // Missing, or not a link (then step 8 replaces it): none.
    const target = unlessError(() => fs.readlinkSync(path.join(this.targetDir, DATA_DIR_NAME)))
    if (target === undefined || !isTsDirName(target)) return undefined
    const st = fs.lstatSync(path.join(this.targetDir, target), { throwIfNoEntry: false })
    return st?.isDirectory() ? target : undefined
  }

  /** Writes `payload` atomically; false when nothing needed writing. */
  write(payload: Payload): boolean {
    // (1) Validate the payload; refuse it whole if any path is bad.
    checkPayloadPaths(payload.keys())
    for (const [p, f] of payload) {
      if (!Number.isInteger(f.mode) || f.mode < 0 || f.mode > 0o777) throw new PodctlError('EUSAGE', `invalid mode ${f.mode} for ${JSON.stringify(p)}`)
    }

    // (2) The current version: what ..data points at.
    const oldTsDir = this.currentTsDir()
    const oldTsPath = oldTsDir === undefined ? undefined : path.join(this.targetDir, oldTsDir)
    // (3) Paths of the old version that are neither a payload file nor a directory of one.
    const oldPaths = oldTsPath === undefined ? new Map<string, fs.Dirent>() : walkNoFollow(oldTsPath)
    const keep = new Set([...payload.keys()].flatMap((p) => [p, ...dirsOf(p)]))
    const pathsToRemove = new Set([...oldPaths.keys()].filter((p) => !keep.has(p)))
    // (4) Skip the write when the payload is what is on disk already. (Also write when
    // a path went away: kubelet skips that and leaves a removed nested file readable.)
    const shouldWrite = oldTsPath === undefined || pathsToRemove.size > 0 || payloadDiffers(payload, oldTsPath, oldPaths)

    if (shouldWrite) {
      // (5) A new timestamped directory.
      const tsPath = fs.mkdtempSync(path.join(this.targetDir, `..${stamp()}.`))
      const tsName = path.basename(tsPath)
      try {
        fs.chmodSync(tsPath, PROJECTED_DIR_MODE)
        // (6) The payload, into it.
        writePayload(tsPath, payload)
        // (7) ..data_tmp -> the new directory ...
        const tmpLink = path.join(this.targetDir, NEW_DATA_DIR_NAME)
        fs.rmSync(tmpLink, { force: true }) // left by a writer that died between (7) and (8)
        fs.symlinkSync(tsName, tmpLink)
        // (8) ... renamed over ..data: the one atomic step readers see.
        fs.renameSync(tmpLink, path.join(this.targetDir, DATA_DIR_NAME))
      } catch (er) {
        if (this.currentTsDir() !== tsName) removeTree(tsPath)
        throw er
      }
    }

    // (9) User-visible links for new top-level names (the kubelet's createUserVisibleFiles).
    const tops = new Set([...payload.keys()].map((k) => k.split('/')[0]!))
    for (const top of tops) {
      const at = path.join(this.targetDir, top)
      const want = `${DATA_DIR_NAME}/${top}`
      const st = fs.lstatSync(at, { throwIfNoEntry: false })
      if (st?.isSymbolicLink() && fs.readlinkSync(at) === want) continue
      if (st?.isDirectory()) throw new PodctlError('EFAILED', `${at} is a directory, not podctl's link to ${want}; remove it and update again`)
      // Put in place by rename: a file or a foreign link in the way is replaced, never written through.
      const tmp = path.join(this.targetDir, `..link_tmp`)
      fs.rmSync(tmp, { force: true })
      fs.symlinkSync(want, tmp)
      fs.renameSync(tmp, at)
    }
    // (10) Old user-visible names the payload no longer has. Also any
    // other link of ours ("name -> ..data/name") to a name not in the
    // payload: left when the old version could not be read.
    for (const name of fs.readdirSync(this.targetDir)) {
      if (name.startsWith('..') || tops.has(name)) continue
      const at = path.join(this.targetDir, name)
      const st = fs.lstatSync(at, { throwIfNoEntry: false })
      if (st?.isSymbolicLink() && (pathsToRemove.has(name) || fs.readlinkSync(at) === `${DATA_DIR_NAME}/${name}`)) fs.unlinkSync(at)
    }
    // (11) The old version's directory, and any other left by a writer
    // that died before its rename (removed without following links).
    if (shouldWrite) {
      const current = this.currentTsDir()
      for (const name of fs.readdirSync(this.targetDir)) {
        if (isTsDirName(name) && name !== current) removeTree(path.join(this.targetDir, name))
      }
    }
    return shouldWrite
  }
}

/** Every entry below `root` (files, links, directories) by relative path, never following a link. */
const walkNoFollow = (root: string, rel = '', out = new Map<string, fs.Dirent>()): Map<string, fs.Dirent> => {
  for (const e of unlessError(() => fs.readdirSync(path.join(root, rel), { withFileTypes: true })) ?? []) {
    const r = rel ? `${rel}/${e.name}` : e.name
    out.set(r, e)
    if (e.isDirectory()) walkNoFollow(root, r, out)
  }
  return out
}

/** Whether any payload file is missing from the old version or differs in content or mode. */
const payloadDiffers = (payload: Payload, oldTsPath: string, oldPaths: Map<string, fs.Dirent>): boolean =>
  [...payload].some(([p, f]) => !oldPaths.get(p)?.isFile() || !sameFile(path.join(oldTsPath, p), f))

const sameFile = (file: string, f: FileProjection): boolean =>
  unlessError(() => (fs.lstatSync(file).mode & 0o777) === f.mode && fs.readFileSync(file).equals(f.data)) ?? false

/** Writes every file into a fresh directory; O_EXCL, so nothing planted there is written through. */
const writePayload = (dir: string, payload: Payload): void => {
  for (const [p, f] of payload) {
    const parent = path.posix.dirname(p)
    if (parent !== '.') mkdirsInside(dir, parent, PROJECTED_DIR_MODE)
    const file = path.join(dir, p)
    const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, f.mode)
    try {
      fs.writeSync(fd, f.data)
      fs.fchmodSync(fd, f.mode) // the umask must not change the mode the manifest asks for
    } finally {
      fs.closeSync(fd)
    }
  }
}

/** A payload from a manifest's `files`. */
export const payloadFromFiles = (files: Record<string, { content: string; mode?: number }>): Payload =>
  new Map(Object.entries(files).map(([p, f]) => [p, { data: Buffer.from(f.content, 'utf8'), mode: f.mode ?? DEFAULT_FILE_MODE }]))
