/**
 * The pod: a directory under `<data>/pods/<state dir>/<uuid>` plus a lock.
 * This is the TypeScript counterpart of rkt's pkg/pod. Methods
 * do not refresh the pod's state unless they say so: a Pod reflects the
 * file system as it was when it was created or last refreshed.
 *
 * Every transition is one rename(2) made while this process holds the
 * pod's lock; the loser of a race gets a PodChangedStateError.
 */
import fs from 'node:fs'
import path from 'node:path'
import { v4 as uuidv4 } from 'uuid'
import { PodChangedStateError, PodctlError, bug, errnoCode, isNotFound, shortId, unlessNotFound } from '../errors.js'
import { syncDir } from '../fs/atomic.js'
import { DIR_MODE } from '../fs/modes.js'
import type { RemovePool } from '../fs/remove-pool.js'
import { removeTree } from '../fs/remove-tree.js'
import type { HeldLock } from '../lock/lock.js'
import { POD_DIRS, checkLayout, dataDirExists, ensureDataDir, isPodUUID, podPath, stateDirPath, type PodDir } from './layout.js'
import { isLocked, tryLock } from './locks.js'
import { parseManifest, type PodManifest } from './manifest.js'
import { MAX_MANIFEST_BYTES, readOwnFile } from '../fs/read.js'
import { MANIFEST_FILE, emptyRecord, parseRecord, readRecordFile, type PodRecord, type RecordFile } from './record.js'
import { deriveState, isAfterRunState, isFinishedState, type PodState } from './state.js'
import { normalizeUUIDArg, uuidOfPrefix } from './uuid.js'

/** Options of transitions that bulk callers (gc) batch. */
export interface TransitionOptions {
  /** fsync the state dirs after the rename (default true); gc syncs once per batch instead. */
  sync?: boolean
}

/**
 * What must happen to a pod, under its lock, just before its directory is
 * deleted: how the layers above undo what they set up for it (volumes:
 * lib/volume's tearDownPodVolumes). rm, gc and a creator's discard pass it.
 */
export type BeforeDelete = (pod: Pod) => void

export class Pod {
  readonly dataDir: string
  readonly uuid: string
  #dir: PodDir
  #lockedByOther: boolean
  #held: HeldLock | undefined
  #creator = false
  #runner = false
  #record: PodRecord | undefined
  /** pod.json as read by recordBytes(), until record() parses it. */
  #recordFile: RecordFile | undefined
  /** Why pod.json cannot be used, once record() has looked. */
  #damaged: string | undefined
  #removed = false

  /** @internal Use newPod, podFromUUIDString or walkPods. */
  constructor(dataDir: string, uuid: string, dir: PodDir, locked: boolean) {
    this.dataDir = dataDir
    this.uuid = uuid
    this.#dir = dir
    this.#lockedByOther = locked
  }

  /** The state directory the pod was in when last looked at. */
  get dir(): PodDir {
    return this.#dir
  }

  /** The pod's state as of the last refresh (CONTRACT §2). */
  get state(): PodState {
    return deriveState(this.#dir, this.#held !== undefined || this.#lockedByOther)
  }

  /** The pod's directory, according to the cached state. */
  get path(): string {
    return podPath(this.dataDir, this.#dir, this.uuid)
  }

  /** Whether a live process (this one included) holds the pod's lock, as of the last refresh. */
  get locked(): boolean {
    return this.#held !== undefined || this.#lockedByOther
  }

  /** Whether this process holds the pod's lock. */
  get holdsLock(): boolean {
    return this.#held !== undefined
  }

  /**
   * Looks at the file system again: where the pod's directory is and
   * whether its lock is held. Throws ENOPOD when the pod is gone.
   */
  refresh(): void {
    const dir = locate(this.dataDir, this.uuid, this.#dir)
    if (!dir) {
      throw new PodctlError('ENOPOD', `pod ${this.uuid} no longer exists`)
    }
    this.#dir = dir
    this.#lockedByOther = this.#held === undefined && isLocked(this.dataDir, this.uuid)
    this.#record = undefined
    this.#recordFile = undefined
    this.#damaged = undefined
  }

  /**
   * Takes the pod's exclusive lock if no live process holds it. Returns
   * false when another process holds it; throws PodChangedStateError when
   * the pod left its directory meanwhile. Does not refresh the state.
   *
   * `renameFollows`: the caller's next step is a transition, whose rename
   * fails with the same PodChangedStateError if the pod moved; the check
   * is left to it (one lstat per pod fewer for gc).
   */
  tryExclusiveLock(opts: { renameFollows?: boolean } = {}): boolean {
    if (this.#held) return true
    const held = tryLock(this.dataDir, this.uuid)
    if (!held) {
      this.#lockedByOther = true
      return false
    }
    this.#held = held
    this.#lockedByOther = false
    // The lock lives outside the pod dir, so it can be taken for a pod that
    // another process deleted (or moved) between our look and our lock.
    // Now that we hold it the pod cannot move: check it is still here.
    if (!opts.renameFollows && !existsNoFollow(this.path)) {
      this.unlock()
      throw new PodChangedStateError(this.uuid, `pod ${this.uuid} changed state: it is no longer in ${this.#dir}`)
    }
    return true
  }

  /** Releases the pod's lock if this process holds it. */
  unlock(): void {
    const held = this.#held
    this.#held = undefined
    this.#runner = false
    held?.release()
  }

  /** Releases the pod's lock, if held (rkt's Close; a manifest lock is released by its holder, lib/pod/sandbox.ts). */
  close(): void {
    this.unlock()
  }

  #assertHeld(what: string): void {
    if (!this.#held) throw bug(`${what} on pod ${this.uuid} without its lock`)
    const lost = this.#held.compromised
    if (lost) {
      throw new PodctlError('EFAILED', `lost the lock of pod ${this.uuid}: ${lost.message}`, undefined, { cause: lost })
    }
  }

  #rename(to: PodDir, opts: TransitionOptions): void {
    const from = this.#dir
    try {
      fs.renameSync(this.path, podPath(this.dataDir, to, this.uuid))
    } catch (er) {
      if (isNotFound(er)) {
        throw new PodChangedStateError(this.uuid, `pod ${this.uuid} changed state: it is no longer in ${from}`)
      }
      const code = errnoCode(er)
      if (code === 'ENOTEMPTY' || code === 'EEXIST') {
        throw bug(`pod ${this.uuid} is in both ${from} and ${to}`)
      }
      throw er
    }
    this.#dir = to
    if (opts.sync !== false) {
      syncDir(stateDirPath(this.dataDir, to))
      syncDir(stateDirPath(this.dataDir, from))
    }
  }

  /** Takes the lock for a transition of a pod that must be unlocked now. */
  #lockForTransition(): void {
    if (this.#held) return
    if (this.tryExclusiveLock()) return
    throw new PodChangedStateError(
      this.uuid,
      `pod ${this.uuid} changed state: another process holds its lock (${this.state})`,
      `try again when it is done: podctl status ${shortId(this.uuid)}`,
    )
  }

  /**
   * embryo → prepare. Only the creator (newPod) may do this; leaves the
   * pod locked in prepare/.
   */
  toPreparing(opts: TransitionOptions = {}): void {
    if (!this.#creator || this.#dir !== 'embryo') {
      throw new PodctlError('EBADSTATE', `pod ${this.uuid} is ${this.state}; only its creator moves an embryo to preparing`)
    }
    this.#assertHeld('toPreparing')
    this.#rename('prepare', opts)
  }

  /**
   * prepare → prepared. Only the creator may do this; leaves the pod
   * unlocked in prepared/.
   */
  toPrepared(opts: TransitionOptions = {}): void {
    if (!this.#creator || this.#dir !== 'prepare') {
      throw new PodctlError('EBADSTATE', `pod ${this.uuid} is ${this.state}; only its creator finishes preparing it`)
    }
    this.#assertHeld('toPrepared')
    this.#rename('prepared', opts)
    this.#creator = false
    this.unlock()
  }

  /**
   * prepared → run, or prepare → run for the creator. Leaves the pod
   * locked in run/: the caller is the pod's supervisor and holds the lock
   * for the pod's whole life.
   */
  toRun(opts: TransitionOptions = {}): void {
    if (this.#dir === 'prepare' && this.#creator) {
      this.#assertHeld('toRun')
    } else if (this.#dir === 'prepared') {
      this.#lockForTransition()
    } else {
      throw new PodctlError('EBADSTATE', `pod ${this.uuid} is ${this.state}; only a prepared pod can run`)
    }
    this.#rename('run', opts)
    this.#creator = false
    this.#runner = true
  }

  /**
   * run → exited-garbage, for an exited pod (run/, unlocked). Takes the
   * lock if not held and leaves the pod locked in exited-garbage/; the
   * caller removes it or calls unlock().
   */
  toExitedGarbage(opts: TransitionOptions = {}): void {
    if (this.#dir !== 'run' || this.#runner || (this.#held === undefined && this.#lockedByOther)) {
      throw new PodctlError(
        'EBADSTATE',
        `pod ${this.uuid} is ${this.state}; only an exited pod can be marked garbage`,
        this.state === 'running' ? `stop it first: podctl stop ${shortId(this.uuid)}` : undefined,
      )
    }
    this.#lockForTransition()
    this.#rename('exited-garbage', opts)
  }

  /**
   * prepared → garbage, aborted prepare → garbage, or (for gc's cleanup of
   * a creator that died before preparing) an unlocked embryo → garbage.
   * Takes the lock if not held and leaves the pod locked in garbage/.
   */
  toGarbage(opts: TransitionOptions = {}): void {
    const ok =
      this.#dir === 'prepared' ||
      ((this.#dir === 'prepare' || this.#dir === 'embryo') && (this.#creator || !this.#lockedByOther))
    if (!ok) {
      throw new PodctlError('EBADSTATE', `pod ${this.uuid} is ${this.state}; only a prepared pod or an aborted prepare can be marked garbage`)
    }
    this.#lockForTransition()
    this.#rename('garbage', opts)
    this.#creator = false
  }

  /**
   * Deletes a pod in exited-garbage/ or garbage/: takes the lock if not
   * held, runs `beforeDelete` (volumes are torn down there), removes the
   * directory (never following a symlink), then releases the lock. The Pod
   * is unusable afterwards.
   */
  remove(beforeDelete?: BeforeDelete): void {
    this.#beforeRemove(beforeDelete)
    removeTree(this.path)
    this.#removed = true
    this.close()
  }

  /**
   * remove(), with the tree removed by one of `pool`'s threads (gc:
   * lib/fs/remove-pool.ts), which run the same safe removeTree. The lock
   * is held until the tree is gone.
   */
  async removeIn(pool: RemovePool, beforeDelete?: BeforeDelete): Promise<void> {
    this.#beforeRemove(beforeDelete)
    await pool.remove(this.path)
    this.#removed = true
    this.close()
  }

  #beforeRemove(beforeDelete: BeforeDelete | undefined): void {
    if (this.#dir !== 'exited-garbage' && this.#dir !== 'garbage') {
      throw new PodctlError('EBADSTATE', `pod ${this.uuid} is ${this.state}; only garbage can be deleted`)
    }
    this.#lockForTransition()
    this.#assertHeld('remove')
    beforeDelete?.(this)
  }

  /** Whether remove() has deleted this pod. */
  get removed(): boolean {
    return this.#removed
  }

  // ---- queries --------------------------------------------------------

  /**
   * The pod record (pod.json), read once and cached until refresh(). A
   * pod whose record is missing where it must exist, unreadable or
   * invalid reads as an empty record; damaged() says why.
   */
  record(): PodRecord {
    if (this.#record === undefined) {
      const file = this.#recordFile ?? readRecordFile(this.path)
      this.#recordFile = undefined
      const parsed = 'bytes' in file ? parseRecord(file.bytes.toString('utf8'), this.uuid) : file
      if ('record' in parsed) {
        this.#record = parsed.record
      } else {
        this.#record = emptyRecord(this.uuid)
        // A pod that never finished preparing has no record yet: that is its state, not damage.
        this.#damaged = 'damaged' in parsed ? parsed.damaged : RECORD_REQUIRED.has(this.#dir) ? 'pod.json is missing' : undefined
      }
    }
    return this.#record
  }

  /** Why the pod's record cannot be used (one line), or undefined for a healthy pod (CONTRACT §10). */
  damaged(): string | undefined {
    this.record()
    return this.#damaged
  }

  /**
   * The record as stored (for list's copy without parsing), or undefined
   * if it cannot be read or record() has already parsed it. record()
   * parses these bytes later if needed, without a second read.
   */
  recordBytes(): Buffer | undefined {
    if (this.#record !== undefined) return undefined
    this.#recordFile ??= readRecordFile(this.path)
    return 'bytes' in this.#recordFile ? this.#recordFile.bytes : undefined
  }

  /** @internal Replaces the cached record after the lock holder wrote it. */
  setCachedRecord(r: PodRecord): void {
    this.#record = r
    this.#damaged = undefined
  }

  /** When the pod was created (at prepare time), or null if unknown. */
  creationTime(): Date | null {
    const t = this.record().created_at
    return t ? new Date(t) : null
  }

  /** When the pod started running, or null if it never did. */
  startTime(): Date | null {
    const t = this.record().started_at
    return t ? new Date(t) : null
  }

  /** When gc marked the pod as garbage, or null. */
  gcMarkedTime(): Date | null {
    const t = this.record().gc_marked_at
    return t ? new Date(t) : null
  }

  /** The supervisor's pid (while it lives, else the last one), or null. */
  pid(): number | null {
    return this.record().pid
  }

  /** True in the states after running (exited, exited garbage, exited deleting). */
  isAfterRun(): boolean {
    return isAfterRunState(this.state)
  }

  /** True in states the pod never leaves by itself. */
  isFinished(): boolean {
    return isFinishedState(this.state)
  }

  /** Whether the pod was created mutable (apps may be added while it runs). */
  isMutable(): boolean {
    return this.record().mutable
  }

  /** Whether the supervisor has declared the pod ready (all regular apps started). */
  isSupervisorReady(): boolean {
    return this.state === 'running' && Boolean(this.record().ready_at)
  }

  /**
   * Whether podManifest() can be expected to work: in preparing, aborted
   * prepare, embryo and deleting the manifest may not be there.
   */
  podManifestAvailable(): boolean {
    const s = this.state
    return !(s === 'embryo' || s === 'preparing' || s === 'aborted prepare' || s === 'deleting' || s === 'exited deleting')
  }

  /** The manifest as stored (raw text) and parsed; EFAILED if it is missing or damaged. */
  podManifest(): { raw: string; manifest: PodManifest } {
    const file = readOwnFile(path.join(this.path, MANIFEST_FILE), MAX_MANIFEST_BYTES)
    if ('missing' in file) throw new PodctlError('EFAILED', `pod ${this.uuid} has no manifest (it is ${this.state})`)
    if ('damaged' in file) throw new PodctlError('EFAILED', `pod ${this.uuid} has a damaged manifest: ${file.damaged}`)
    const raw = file.bytes.toString('utf8')
    try {
      return { raw, manifest: parseManifest(raw, { allowEphemeral: true }) }
    } catch (er) {
      throw new PodctlError('EFAILED', `pod ${this.uuid} has a damaged manifest: ${(er as Error).message}`, undefined, { cause: er })
    }
  }

  /** The exit code of an app, or throws if it has not exited. */
  appExitCode(appName: string): number {
    const app = this.record().apps.find((a) => a.name === appName)
    if (!app) throw new PodctlError('ENOPOD', `pod ${this.uuid} has no app named ${JSON.stringify(appName)}`)
    if (app.exit_code === null) {
      throw new PodctlError('EBADSTATE', `app ${appName} of pod ${this.uuid} has no exit code yet (it is ${app.state})`)
    }
    return app.exit_code
  }

  /** fsyncs the pod directory, its files and its state directory. */
  sync(): void {
    for (const e of fs.readdirSync(this.path, { withFileTypes: true })) {
      if (!e.isFile()) continue
      const fd = fs.openSync(path.join(this.path, e.name), 'r')
      try {
        fs.fsyncSync(fd)
      } finally {
        fs.closeSync(fd)
      }
    }
    syncDir(this.path)
    syncDir(stateDirPath(this.dataDir, this.#dir))
  }

  /** @internal Marks this Pod as created by this process (newPod). */
  markCreator(held: HeldLock): void {
    this.#creator = true
    this.#held = held
  }
}

/** The state dirs of a pod that has been prepared: its record exists there. */
const RECORD_REQUIRED: ReadonlySet<PodDir> = new Set(['prepared', 'run', 'exited-garbage'])

/**
 * Finds which state dir holds `uuid` with at most one lstat per state dir
 * (twice over, for a pod that moved on while we looked). `hint` is tried
 * first. Throws for an entry that is not a real directory.
 */
const locate = (dataDir: string, uuid: string, hint?: PodDir): PodDir | undefined => {
  const order = hint ? [hint, ...POD_DIRS.filter((d) => d !== hint)] : POD_DIRS
  for (let pass = 0; pass < 2; pass++) {
    for (const dir of order) {
      const st = fs.lstatSync(podPath(dataDir, dir, uuid), { throwIfNoEntry: false })
      if (!st) continue
      if (!st.isDirectory()) {
        throw new PodctlError(
          'EFAILED',
          `${podPath(dataDir, dir, uuid)} is not a pod directory (${st.isSymbolicLink() ? 'a symlink' : 'not a directory'}); podctl never follows or deletes through it`,
          'remove it by hand after checking what put it there',
        )
      }
      return dir
    }
  }
  return undefined
}

/**
 * 16 random bytes from the kernel's CSPRNG for a pod UUID. uuid's own
 * source is Web Crypto, whose first use loads seven internal modules on
 * every `podctl run` (Documentation/performance.md).
 */
const randomBytes16 = (): Uint8Array => {
  const b = Buffer.alloc(16)
  const fd = fs.openSync('/dev/urandom', 'r')
  try {
    if (fs.readSync(fd, b, 0, 16, null) !== 16) throw new Error('short read from /dev/urandom')
  } finally {
    fs.closeSync(fd)
  }
  return b
}

/** A new random (v4) UUID, as pods and claims get. */
export const randomUUID = (): string => uuidv4({ random: randomBytes16() })

/**
 * Creates a new pod: allocates a UUID, takes its lock, creates the
 * directory in embryo/ and moves it to prepare/. Returns the pod locked in
 * prepare/ ("preparing"); the caller writes its files and calls
 * toPrepared() or toRun(), or toGarbage() and remove() on failure.
 */
export const newPod = async (dataDir: string, opts: TransitionOptions = {}): Promise<Pod> => {
  ensureDataDir(dataDir)
  for (let attempt = 0; attempt < 5; attempt++) {
    const uuid = randomUUID()
    const held = tryLock(dataDir, uuid)
    if (!held) continue // a lock with this uuid exists: draw again
    try {
      fs.mkdirSync(podPath(dataDir, 'embryo', uuid), { mode: DIR_MODE })
    } catch (er) {
      held.release()
      if (errnoCode(er) === 'EEXIST') continue
      throw er
    }
    const pod = new Pod(dataDir, uuid, 'embryo', false)
    pod.markCreator(held)
    try {
      pod.toPreparing(opts)
    } catch (er) {
      pod.close()
      throw er
    }
    return pod
  }
  throw bug('could not allocate a unique pod uuid')
}

/**
 * Resolves a full UUID (O(1): one lstat per state dir) or an unambiguous
 * prefix (a scan of the state dirs) to a Pod. Throws ENOPOD for no match
 * or an ambiguous prefix, listing the candidates.
 */
export const podFromUUIDString = (dataDir: string, s: string): Pod => {
  const arg = normalizeUUIDArg(s)
  checkLayout(dataDir) // a state dir that is a link is never looked through
  const uuid = isPodUUID(arg) ? arg : uuidOfPrefix(dataDir, arg, s)
  let dir: PodDir | undefined
  try {
    dir = locate(dataDir, uuid)
  } catch (er) {
    // ENOTDIR: the data dir (or one of its state dirs) is a file.
    if (errnoCode(er) === 'ENOTDIR') dataDirExists(dataDir)
    throw er
  }
  if (!dir) throw new PodctlError('ENOPOD', `no such pod: ${uuid}`, 'see podctl list')
  return new Pod(dataDir, uuid, dir, isLocked(dataDir, uuid))
}

const existsNoFollow = (p: string): boolean => unlessNotFound(() => fs.lstatSync(p)) !== undefined
