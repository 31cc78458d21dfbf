/**
 * Provisioners (seed 004's Provisioner, ProvisionerExt and Qualifier) make
 * and delete the storage behind a claim's volume: `local` (a directory of
 * the data dir), or `exec:` (a program speaking JSON, CONTRACT §8).
 */
import { PodctlError, oneLine } from '../errors.js'
import { parseDuration } from '../duration.js'
import { parseBytes } from '../bytes.js'
import type { AccessMode } from '../pod/manifest.js'
import { runBounded } from '../proc/bounded-child.js'
import { answeredPathProblem } from './answer-path.js'
import type { VolumeClass } from './classes.js'
import { minSizeLimit } from './local/volumes.js'
import { isObject, unlessError } from './objects.js'
import { programOf, type ProgramOptions } from './provisioner-programs.js'
import { pvView, type PvView } from './local/pv-view.js'
import { newVolumeRecord, type PvRecord } from './volume-record.js'

/** The seed's ProvisioningState. */
export type ProvisioningState = 'Finished' | 'Background' | 'NoChange'

/** What provision is asked for (the seed's VolumeOptions). */
export interface ProvisionRequest {
  /** The volume's name, the same on every retry of one claim's provisioning. */
  volumeName: string
  claim: { name: string; size_bytes: number | null; access_mode: string }
  class: VolumeClass
  dataDir: string
}

/** A volume the provisioner made: where its data is, and how large it may grow. */
export interface ProvisionedVolume {
  /** Absolute path of the data, or undefined for the data dir's own volume directory (local). */
  path?: string
  capacityBytes: number | null
}

export type ProvisionResult = { state: 'Finished'; volume: ProvisionedVolume } | { state: 'Background' | 'NoChange'; message: string }

/** What delete is given: the volume as `volume inspect` shows it (its data at `path`), with what its class and provisioner said of it. */
export interface VolumeToDelete extends PvView {
  capacity_bytes: number | null
  class: string
  parameters: Record<string, string>
  /** The claim that released it. */
  claim: string
}

/** The seed's IgnoredError: not this provisioner's volume; no failure event. */
export class IgnoredError extends Error {
  readonly reason: string
  constructor(reason: string) {
    super(`ignored: ${reason}`)
    this.name = 'IgnoredError'
    this.reason = reason
  }
}

/** A call cut short because podctl stops, not because the provisioner failed: nothing recorded, and the next worker calls again. */
export class CallStopped extends PodctlError {
  constructor(message: string) {
    super('EFAILED', message)
    this.name = 'CallStopped'
  }
}

/** A provisioner may answer at once or later: the controller's workers wait for it without blocking each other. */
export type Awaitable<T> = T | Promise<T>

export interface Provisioner {
  /** `ctx.signal` aborts the call (the controller stops): a program run for it is killed. */
  provision(req: ProvisionRequest, ctx?: CallContext): Awaitable<ProvisionResult>
  /** Removes the storage (not the volume's record); throws IgnoredError when it is not its volume. */
  delete(v: VolumeToDelete, ctx?: CallContext): Awaitable<void>
  /** The seed's Qualifier: whether to provision this claim at all. */
  shouldProvision?(req: ProvisionRequest): boolean
  shouldDelete?(v: VolumeToDelete): boolean
}

/** `local`: the volume is a directory of the data dir's volumes (sizeLimit from the class or the claim). */
export const localProvisioner: Provisioner = {
  provision: (req) => {
    const limit = req.class.parameters.sizeLimit
    const classLimit = limit === undefined ? null : parseBytes(limit, 'sizeLimit')
    const sizes = [classLimit, req.claim.size_bytes].filter((x): x is number => x !== null)
    if (classLimit !== null && req.claim.size_bytes !== null && req.claim.size_bytes > classLimit) {
      throw new PodctlError('EFAILED', `claim ${req.claim.name} asks for ${req.claim.size_bytes} bytes, more than class ${req.class.name}'s sizeLimit (${limit})`)
    }
    // A claim asks for at least its size: one block is the least a volume can hold (its own directory).
    return { state: 'Finished', volume: { capacityBytes: sizes.length > 0 ? Math.max(Math.min(...sizes), minSizeLimit(req.dataDir)) : null } }
  },
  // The data directory goes with the volume's record: nothing else to delete.
  delete: () => {},
}

const DEFAULT_EXEC_TIMEOUT_MS = 5 * 60_000
const MAX_ANSWER_BYTES = 1024 * 1024

/** What a call may be given besides its input: aborting it kills the program (a controller that stops). */
export interface CallContext {
  signal?: AbortSignal | undefined
}

/** Runs `program verb` with `input` on stdin; its JSON answer, or EFAILED with its stderr (one line). */
const callExec = async (program: string, shown: string, verb: 'provision' | 'delete', input: unknown, timeoutMs: number, ctx: CallContext): Promise<Record<string, unknown>> => {
  const r = await runBounded(program, [verb], { input: JSON.stringify(input), timeoutMs, maxStdoutBytes: MAX_ANSWER_BYTES, ...(ctx.signal ? { signal: ctx.signal } : {}) })
  const stderr = oneLine(r.stderr.trim().slice(-2000))
  const said = stderr ? `: ${stderr}` : ''
  if (r.startError !== undefined) throw new PodctlError('EFAILED', `cannot run provisioner ${shown} (${program}): ${r.startError}`)
  if (r.killedFor !== undefined && ctx.signal?.aborted) throw new CallStopped(`provisioner ${shown} ${verb} ${r.killedFor}`)
  if (r.killedFor !== undefined) throw new PodctlError('EFAILED', `provisioner ${shown} ${verb} ${r.killedFor}${said}`)
  if (r.status !== 0) throw new PodctlError('EFAILED', `provisioner ${shown} ${verb} failed (${r.signal ? `killed by ${r.signal}` : `exit code ${r.status}`})${said}`)
  const answer: unknown = unlessError(() => JSON.parse(r.stdout.toString('utf8'))) // JSON has no undefined
  if (answer === undefined) throw new PodctlError('EFAILED', `provisioner ${shown} ${verb} printed no JSON object on stdout${said}`)
  if (!isObject(answer)) throw new PodctlError('EFAILED', `provisioner ${shown} ${verb} printed ${shortJson(answer)}, not a JSON object`)
  return answer
}

/** A value from outside in a message: JSON (so control characters are escaped), cut short. */
const shortJson = (v: unknown): string => {
  const text = JSON.stringify(v) ?? String(v)
  return text.length > 300 ? `${text.slice(0, 300)}…` : text
}

/** The class's per-call timeout (`--param timeout=DURATION`). */
const execTimeout = (cls: { parameters: Record<string, string> }): number =>
  cls.parameters.timeout === undefined ? DEFAULT_EXEC_TIMEOUT_MS : parseDuration(cls.parameters.timeout)

/**
 * An `exec` provisioner: the CONTRACT §8 protocol, its answers checked as
 * untrusted input. `program` is the program, or how to find it at each call
 * (a node's configuration may change); `shown` names it in messages.
 */
export const execProvisioner = (program: string | (() => string), shown = typeof program === 'string' ? `exec:${program}` : 'exec'): Provisioner => {
  const which = typeof program === 'string' ? () => program : program
  return {
    provision: async (req, ctx = {}) => {
      const input = {
        volume_name: req.volumeName,
        claim: req.claim,
        class: { name: req.class.name, parameters: req.class.parameters },
        data_dir: req.dataDir,
      }
      const a = await callExec(which(), shown, 'provision', input, execTimeout(req.class), ctx)
      if (a.state === 'background') return { state: 'Background', message: `provisioner ${shown} is still provisioning ${req.volumeName}` }
      const bad = answeredPathProblem(a.path, { root: req.class.parameters.root, dataDir: req.dataDir })
      if (bad) throw new PodctlError('EFAILED', `provisioner ${shown} answered path ${shortJson(a.path)}, which podctl refuses: ${bad}`)
      const cap = a.capacity_bytes
      if (cap !== undefined && cap !== null && !(Number.isSafeInteger(cap) && (cap as number) >= 0)) {
        throw new PodctlError('EFAILED', `provisioner ${shown} answered capacity_bytes ${shortJson(cap)}: it must be an integer of 0 or more, or null`)
      }
      return { state: 'Finished', volume: { path: a.path as string, capacityBytes: (cap as number | undefined) ?? null } }
    },
    delete: async (v, ctx = {}) => {
      const a = await callExec(which(), shown, 'delete', v, execTimeout(v), ctx)
      if (typeof a.ignored === 'string') throw new IgnoredError(oneLine(a.ignored))
    },
  }
}

/** The provisioner a class (or a provisioned volume's record) names. */
export const provisionerOf = (cls: Pick<VolumeClass, 'provisioner'>, opts: ProgramOptions = {}): Provisioner =>
  cls.provisioner === 'local' ? localProvisioner : execProvisioner(() => programOf(cls.provisioner, opts), oneLine(cls.provisioner))

/**
 * As the external-provisioner does, a volume smaller than asked for is a
 * failed provisioning, handed to delete at once: the failure to record, or
 * undefined when `volume` is large enough or says nothing of its size.
 */
export const tooSmall = async (provisioner: Provisioner, req: ProvisionRequest, volume: ProvisionedVolume, ctx: CallContext = {}): Promise<PodctlError | undefined> => {
  const asked = req.claim.size_bytes
  const got = volume.capacityBytes
  if (asked === null || got === null || got >= asked) return undefined
  const why = `created volume capacity ${got} is less than requested ${asked}`
  // As `volume inspect` would show it, had its record been written.
  const rec: PvRecord = { ...newVolumeRecord(req.volumeName, { reclaim: 'delete', accessMode: req.claim.access_mode as AccessMode }), phase: 'released' }
  const v: VolumeToDelete = { ...pvView(req.dataDir, rec), path: volume.path ?? '', claim: req.claim.name, capacity_bytes: got, class: req.class.name, parameters: req.class.parameters }
  try {
    await provisioner.delete(v, ctx)
  } catch (er) {
    if (!(er instanceof IgnoredError)) return new PodctlError('EFAILED', `${why}; deleting it failed, it may be left behind: ${oneLine((er as Error).message)}`)
  }
  return new PodctlError('EFAILED', `${why}; it was handed to the provisioner's delete`)
}
