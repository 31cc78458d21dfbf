/**
 * Provisioners (seed 004's Provisioner, ProvisionerExt and Qualifier): what
 * makes and deletes the storage behind a claim's volume. Two are built in:
 * `local` (a directory under the data dir) and `exec:/abs/path` (an
 * external program speaking JSON on stdin and stdout, CONTRACT §8).
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import { PodctlError } from '../errors.js'
import { parseDuration } from '../duration.js'
import { parseBytes } from './bytes.js'
import type { VolumeClass } from './classes.js'

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

/** What delete is given: the volume as stored. */
export interface VolumeToDelete {
  name: string
  path: string | null
  capacity_bytes: number | null
  class: string
  parameters: Record<string, string>
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

export interface Provisioner {
  provision(req: ProvisionRequest): ProvisionResult
  /** Removes the storage (not the volume's record); throws IgnoredError when it is not its volume. */
  delete(v: VolumeToDelete): void
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
    return { state: 'Finished', volume: { capacityBytes: sizes.length > 0 ? Math.min(...sizes) : null } }
  },
  // The data directory goes with the volume's record: nothing else to delete.
  delete: () => {},
}

const DEFAULT_EXEC_TIMEOUT_MS = 5 * 60_000
const MAX_ANSWER_BYTES = 1024 * 1024

/** Runs `program verb` with `input` on stdin; its JSON answer, or EFAILED with its stderr. */
const callExec = (program: string, verb: 'provision' | 'delete', input: unknown, timeoutMs: number): Record<string, unknown> => {
  const r = spawnSync(program, [verb], {
    input: JSON.stringify(input),
    encoding: 'utf8',
    timeout: timeoutMs,
    killSignal: 'SIGKILL',
    maxBuffer: MAX_ANSWER_BYTES,
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  const stderr = (r.stderr ?? '').trim().slice(-2000)
  const said = stderr ? `: ${stderr}` : ''
  if (r.error) {
    const code = (r.error as NodeJS.ErrnoException).code
    if (code === 'ETIMEDOUT') throw new PodctlError('EFAILED', `provisioner ${program} ${verb} took longer than ${timeoutMs / 1000}s and was killed${said}`)
    throw new PodctlError('EFAILED', `cannot run provisioner ${program}: ${code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'not executable' : r.error.message}`)
  }
  if (r.status !== 0) throw new PodctlError('EFAILED', `provisioner ${program} ${verb} failed (${r.signal ? `killed by ${r.signal}` : `exit code ${r.status}`})${said}`)
  let answer: unknown
  try {
    answer = JSON.parse(r.stdout)
  } catch {
    throw new PodctlError('EFAILED', `provisioner ${program} ${verb} printed no JSON object on stdout${said}`)
  }
  if (answer === null || typeof answer !== 'object' || Array.isArray(answer)) throw new PodctlError('EFAILED', `provisioner ${program} ${verb} printed ${JSON.stringify(answer)}, not a JSON object`)
  return answer as Record<string, unknown>
}

/** The class's per-call timeout (`--param timeout=DURATION`). */
const execTimeout = (cls: { parameters: Record<string, string> }): number =>
  cls.parameters.timeout === undefined ? DEFAULT_EXEC_TIMEOUT_MS : parseDuration(cls.parameters.timeout)

/** `exec:/abs/path`: the CONTRACT §8 protocol. */
export const execProvisioner = (program: string): Provisioner => ({
  provision: (req) => {
    const input = {
      volume_name: req.volumeName,
      claim: req.claim,
      class: { name: req.class.name, parameters: req.class.parameters },
      data_dir: req.dataDir,
    }
    const a = callExec(program, 'provision', input, execTimeout(req.class))
    if (a.state === 'background') return { state: 'Background', message: `provisioner ${program} is still provisioning ${req.volumeName}` }
    if (typeof a.path !== 'string' || !a.path.startsWith('/')) throw new PodctlError('EFAILED', `provisioner ${program} answered ${JSON.stringify(a)}: "path" must be an absolute path`)
    if (a.capacity_bytes !== undefined && a.capacity_bytes !== null && !Number.isSafeInteger(a.capacity_bytes)) {
      throw new PodctlError('EFAILED', `provisioner ${program} answered ${JSON.stringify(a)}: "capacity_bytes" must be an integer`)
    }
    if (!fs.statSync(a.path, { throwIfNoEntry: false })?.isDirectory()) throw new PodctlError('EFAILED', `provisioner ${program} answered path ${a.path}, which is not a directory`)
    return { state: 'Finished', volume: { path: a.path, capacityBytes: (a.capacity_bytes as number | undefined) ?? null } }
  },
  delete: (v) => {
    const a = callExec(program, 'delete', v, execTimeout(v))
    if (typeof a.ignored === 'string') throw new IgnoredError(a.ignored)
  },
})

/** The provisioner a class names. */
export const provisionerOf = (cls: Pick<VolumeClass, 'provisioner'>): Provisioner =>
  cls.provisioner === 'local' ? localProvisioner : execProvisioner(cls.provisioner.slice('exec:'.length))
