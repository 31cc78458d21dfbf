/**
 * AtomicWriter (seed 000): projects a set of files into a directory so that
 * a reader sees either the old set or the new one, never a mix.
 *
 * The real files live in a hidden timestamped directory; `..data` is a
 * symlink to it, and every user-visible top-level name is a symlink through
 * `..data`:
 *
 * ```
 * <dir>/..2026_11_22_04_00_00.Ab3dEf/   the files of one version
 * <dir>/..data -> ..2026_11_22_04_00_00.Ab3dEf
 * <dir>/app.conf -> ..data/app.conf
 * <dir>/certs -> ..data/certs
 * ```
 *
 * An update writes a new timestamped directory and swaps `..data` with one
 * rename(2). A reader that resolves `..data` once (readlink, then reads
 * below that directory) gets one version; if the old directory vanishes
 * under it (step 11) it gets ENOENT and starts over.
 *
 * Names starting with ".." are the writer's own. It offers no concurrency
 * guarantee: callers serialize writes (the operation executor does).
 * Nothing it reads or removes is reached through a link it did not make.
 */
import fs from 'node:fs'
import path from 'node:path'
import { PodctlError, errnoCode } from '../errors.js'
import { mkdirsInside } from '../fs/inside.js'
import { DIR_MODE } from '../fs/modes.js'
import { removeTree } from '../fs/remove-tree.js'
import { projectedPathProblem } from './manifest.js'

export const DATA_DIR_NAME = '..data'
export const NEW_DATA_DIR_NAME = '..data_tmp'
/** Default mode of a projected file. */
export const DEFAULT_FILE_MODE = 0o644
/**
 * Mode of a projected volume's directories, as the kubelet's: the files are
 * for the pod's apps, whoever they run as (another user, a pod's own id
 * range), and each file's own mode says who reads it. Who reaches the
 * volume at all is the pod directory's business.
 */
export const PROJECTED_DIR_MODE = 0o755

/** One file of a payload (FileProjection in seed 000). */
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

/** Problems of a payload: each path as the manifest's files allow, no file that is also a directory. */
export const payloadProblems = (paths: Iterable<string>): { path: string; problem: string }[] => {
  const out: { path: string; problem: string }[] = []
  const all = [...paths]
  const set = new Set(all)
  for (const p of all) {
    const bad = projectedPathProblem(p)
    if (bad) {
      out.push({ path: p, problem: bad })
      continue
    }
    const segs = p.split('/')
    for (let i = 1; i < segs.length; i++) {
      const dir = segs.slice(0, i).join('/')
      if (set.has(dir)) out.push({ path: p, problem: `conflicts with ${JSON.stringify(dir)}: a path cannot be both a file and a directory` })
    }
  }
  return out
}

export class AtomicWriter {
  readonly targetDir: string

  /** The target directory must exist (NewAtomicWriter). */
  constructor(targetDir: string) {
    const st = fs.lstatSync(targetDir, { throwIfNoEntry: false })
    if (!st?.isDirectory()) throw new PodctlError('EFAILED', `cannot project files into ${targetDir}: it is not a directory`)
    this.targetDir = targetDir
  }

  /** The current timestamped directory's name, if `..data` points at a real one. */
  currentTsDir(): string | undefined {
    let target: string
    try {
      target = fs.readlinkSync(path.join(this.targetDir, DATA_DIR_NAME))
    } catch {
      return undefined // missing, or not a link (then step 8 replaces it)
    }
    if (!isTsDirName(target)) return undefined
    const st = fs.lstatSync(path.join(this.targetDir, target), { throwIfNoEntry: false })
    return st?.isDirectory() ? target : undefined
  }

  /**
   * Writes `payload` atomically (the seed's algorithm, steps 1 to 11).
   * Returns false when nothing needed writing.
   */
  write(payload: Payload): boolean {
    // (1) Validate the payload; refuse it whole if any path is bad.
    const problems = payloadProblems(payload.keys())
    if (problems.length > 0) {
      throw new PodctlError('EUSAGE', `invalid file paths: ${problems.map((p) => `${JSON.stringify(p.path)}: ${p.problem}`).join('; ')}`)
    }
    for (const [p, f] of payload) {
      if (!Number.isInteger(f.mode) || f.mode < 0 || f.mode > 0o777) throw new PodctlError('EUSAGE', `invalid mode ${f.mode} for ${JSON.stringify(p)}`)
    }

    // (2) The current version: what ..data points at.
    const oldTsDir = this.currentTsDir()
    const oldTsPath = oldTsDir !== undefined ? path.join(this.targetDir, oldTsDir) : undefined

    // (3) Paths of the old version that the payload no longer has.
    let pathsToRemove = new Set<string>()
    let shouldWrite = true
    if (oldTsPath !== undefined) {
      const oldPaths = walkNoFollow(oldTsPath)
      pathsToRemove = removedPaths(payload, oldPaths)
      // (4) Skip the write when the payload is what is on disk already.
      // (Also write when a path went away: kubelet skips that case and
      // leaves a removed nested file readable through ..data.)
      shouldWrite = pathsToRemove.size > 0 || payloadDiffers(payload, oldTsPath, oldPaths)
    }

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
        try {
          fs.unlinkSync(tmpLink) // left by a writer that died between (7) and (8)
        } catch (er) {
          if (errnoCode(er) !== 'ENOENT') throw er
        }
        fs.symlinkSync(tsName, tmpLink)
        // (8) ... renamed over ..data: the one atomic step readers see.
        fs.renameSync(tmpLink, path.join(this.targetDir, DATA_DIR_NAME))
      } catch (er) {
        if (this.currentTsDir() !== tsName) removeTree(tsPath)
        throw er
      }
    }

    // (9) User-visible links for new top-level names.
    this.#createUserVisibleFiles(payload)
    // (10) Old user-visible names the payload no longer has. Also any
    // other link of ours ("name -> ..data/name") to a name not in the
    // payload: left when the old version could not be read.
    const tops = new Set([...payload.keys()].map((k) => k.split('/')[0]!))
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

  #createUserVisibleFiles(payload: Payload): void {
    const tops = new Set([...payload.keys()].map((p) => p.split('/')[0]!))
    for (const top of tops) {
      const at = path.join(this.targetDir, top)
      const want = `${DATA_DIR_NAME}/${top}`
      const st = fs.lstatSync(at, { throwIfNoEntry: false })
      if (st?.isSymbolicLink() && fs.readlinkSync(at) === want) continue
      if (!st) {
        fs.symlinkSync(want, at)
        continue
      }
      if (st.isDirectory()) {
        throw new PodctlError('EFAILED', `${at} is a directory, not podctl's link to ${want}; remove it and update again`)
      }
      // A file or a foreign link in the way: replace it by rename, never write through it.
      const tmp = path.join(this.targetDir, `..link_tmp`)
      fs.rmSync(tmp, { force: true })
      fs.symlinkSync(want, tmp)
      fs.renameSync(tmp, at)
    }
  }
}

/** Relative paths of every entry below `root` (files, links, directories), never following a link. */
const walkNoFollow = (root: string): Map<string, fs.Dirent> => {
  const out = new Map<string, fs.Dirent>()
  const walk = (dir: string, rel: string): void => {
    let entries: fs.Dirent[]
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true })
    } catch {
      return
    }
    for (const e of entries) {
      const r = rel ? `${rel}/${e.name}` : e.name
      out.set(r, e)
      if (e.isDirectory()) walk(path.join(dir, e.name), r)
    }
  }
  walk(root, '')
  return out
}

/** Old paths that are neither a payload file nor a directory of one. */
const removedPaths = (payload: Payload, oldPaths: Map<string, fs.Dirent>): Set<string> => {
  const keep = new Set<string>()
  for (const p of payload.keys()) {
    const segs = p.split('/')
    for (let i = 1; i <= segs.length; i++) keep.add(segs.slice(0, i).join('/'))
  }
  return new Set([...oldPaths.keys()].filter((p) => !keep.has(p)))
}

/** Whether any payload file is missing from the old version or differs in content or mode. */
const payloadDiffers = (payload: Payload, oldTsPath: string, oldPaths: Map<string, fs.Dirent>): boolean => {
  for (const [p, f] of payload) {
    const e = oldPaths.get(p)
    if (!e?.isFile()) return true
    const file = path.join(oldTsPath, p)
    try {
      if ((fs.lstatSync(file).mode & 0o777) !== f.mode) return true
      if (!fs.readFileSync(file).equals(f.data)) return true
    } catch {
      return true
    }
  }
  return false
}

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
