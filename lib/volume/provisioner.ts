/**
 * Provisioners (seed 004's Provisioner, ProvisionerExt and Qualifier): what
 * makes and deletes the storage behind a claim's volume. Two are built in:
 * `local` (a directory under the data dir) and `exec:/abs/path` (an
 * external program speaking JSON on stdin and stdout, CONTRACT §8).
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import { PodctlError } from '../errors.js'
import { parseDuration } from '../duration.js'
import { parseBytes } from '../bytes.js'
import type { VolumeClass } from './classes.js'
import { minSizeLimit } from './persistent.js'
import type { PvView } from './pv-view.js'

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

/**
 * What delete is given: the volume's JSON as `volume inspect` shows it
 * (its data at `path`), with what its class and provisioner said of it.
 */
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

/** A provisioner may answer at once or later: the controller's workers wait for it without blocking each other. */
export type Awaitable<T> = T | Promise<T>

export interface Provisioner {
  provision(req: ProvisionRequest): Awaitable<ProvisionResult>
  /** Removes the storage (not the volume's record); throws IgnoredError when it is not its volume. */
  delete(v: VolumeToDelete): Awaitable<void>
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

interface ProgramOutput {
  status: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
  /** Why it could not start (no such file, not executable). */
  startError?: string
  /** Why it was killed: it timed out or said too much. */
  killedFor?: string
}

/**
 * Runs `program verb` with `input` on stdin, asynchronously (a slow
 * provisioner holds up neither the other workers nor the lease's
 * renewal). Killed after `timeoutMs`, or once stdout passes
 * MAX_ANSWER_BYTES; only the tail of stderr is kept.
 */
const runProgram = (program: string, verb: string, input: string, timeoutMs: number): Promise<ProgramOutput> =>
  new Promise((resolve) => {
    const child = spawn(program, [verb], { stdio: ['pipe', 'pipe', 'pipe'] })
    const out: Buffer[] = []
    let outBytes = 0
    let stderr = ''
    let killedFor: string | undefined
    let startError: string | undefined
    const stop = (why: string): void => {
      killedFor ??= why
      child.kill('SIGKILL')
    }
    const timer = setTimeout(() => stop(`took longer than ${timeoutMs / 1000}s and was killed`), timeoutMs)
    child.stdout.on('data', (b: Buffer) => {
      outBytes += b.length
      if (outBytes > MAX_ANSWER_BYTES) return stop(`printed more than ${MAX_ANSWER_BYTES} bytes and was killed`)
      out.push(b)
    })
    child.stderr.on('data', (b: Buffer) => {
      stderr = (stderr + b.toString('utf8')).slice(-4000)
    })
    // A provisioner that exits without reading its input closes the pipe under us: its exit status tells.
    child.stdin.on('error', () => {})
    child.stdin.end(input)
    child.on('error', (er: NodeJS.ErrnoException) => {
      if (child.pid === undefined) startError = er.code === 'ENOENT' ? 'no such file' : er.code === 'EACCES' ? 'not executable' : er.message
    })
    child.on('close', (status, signal) => {
      clearTimeout(timer)
      resolve({
        status,
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: stderr.trim().slice(-2000),
        ...(startError !== undefined ? { startError } : {}),
        ...(killedFor !== undefined ? { killedFor } : {}),
      })
    })
  })

/** Runs `program verb` with `input` on stdin; its JSON answer, or EFAILED with its stderr. */
const callExec = async (program: string, verb: 'provision' | 'delete', input: unknown, timeoutMs: number): Promise<Record<string, unknown>> => {
  const r = await runProgram(program, verb, JSON.stringify(input), timeoutMs)
  const said = r.stderr ? `: ${r.stderr}` : ''
  if (r.startError !== undefined) throw new PodctlError('EFAILED', `cannot run provisioner ${program}: ${r.startError}`)
  if (r.killedFor !== undefined) throw new PodctlError('EFAILED', `provisioner ${program} ${verb} ${r.killedFor}${said}`)
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
  provision: async (req) => {
    const input = {
      volume_name: req.volumeName,
      claim: req.claim,
      class: { name: req.class.name, parameters: req.class.parameters },
      data_dir: req.dataDir,
    }
    const a = await callExec(program, 'provision', input, execTimeout(req.class))
    if (a.state === 'background') return { state: 'Background', message: `provisioner ${program} is still provisioning ${req.volumeName}` }
    if (typeof a.path !== 'string' || !a.path.startsWith('/')) throw new PodctlError('EFAILED', `provisioner ${program} answered ${JSON.stringify(a)}: "path" must be an absolute path`)
    if (a.capacity_bytes !== undefined && a.capacity_bytes !== null && !Number.isSafeInteger(a.capacity_bytes)) {
      throw new PodctlError('EFAILED', `provisioner ${program} answered ${JSON.stringify(a)}: "capacity_bytes" must be an integer`)
    }
    if (!fs.statSync(a.path, { throwIfNoEntry: false })?.isDirectory()) throw new PodctlError('EFAILED', `provisioner ${program} answered path ${a.path}, which is not a directory`)
    return { state: 'Finished', volume: { path: a.path, capacityBytes: (a.capacity_bytes as number | undefined) ?? null } }
  },
  delete: async (v) => {
    const a = await callExec(program, 'delete', v, execTimeout(v))
    if (typeof a.ignored === 'string') throw new IgnoredError(a.ignored)
  },
})

/** The provisioner a class names. */
export const provisionerOf = (cls: Pick<VolumeClass, 'provisioner'>): Provisioner =>
  cls.provisioner === 'local' ? localProvisioner : execProvisioner(cls.provisioner.slice('exec:'.length))
